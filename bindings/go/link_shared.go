//go:build !cosid_static

package cosid

// The default: linked against libcosid.so, found with pkg-config (PKG_CONFIG_PATH pointing at the folder of
// cosid.pc); the program then needs the library at run time (LD_LIBRARY_PATH, or an installed library).

// #cgo pkg-config: cosid
import "C"
