//go:build cosid_static

package cosid

// `go build -tags cosid_static`: libcosid.a is linked into the program, which then needs no libcosid.so at run
// time. pkg-config gives the flags with the system libraries the archive needs (`--static`: the Libs.private of
// cosid.pc: libgcc_s, libm, libdl, ...). Its -lcosid would pick libcosid.so, which sits beside the archive, so
// staticlink/ comes first in the search path: its libcosid.so is a linker script that names libcosid.a instead
// (staticlink/libcosid.so says why a plain -l:libcosid.a is not enough).

// #cgo LDFLAGS: -L${SRCDIR}/staticlink
// #cgo pkg-config: --static cosid
import "C"
