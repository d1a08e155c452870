// Package cosid issues lease-safe Snowflake ids: unique, time-ordered 64-bit ids for many processes at once, each
// process leasing an exclusive time window on a slot from a store (an SQLite file, Redis, PostgreSQL, ...) and
// checking every id against it. It is a thin cgo layer over libcosid, the C library of the Rust core that the C,
// Python and Node bindings share; every setting, check and rule lives there.
//
// With no set-up the process-wide runtime starts on the first id from the COSID_* environment variables (with
// none set, an SQLite file in the user's state directory):
//
//	id, err := cosid.NextID()
//
// New makes a Runtime of its own (a namespace, a store, events, an explicit lifetime):
//
//	rt, err := cosid.New(cosid.WithStore("redis://10.0.0.5:6379/0"), cosid.WithNamespace("orders"))
//	if err != nil { ... }
//	defer rt.Close()
//	id, err := rt.NextID()
//
// Errors are *Error values whose Code is one of the exported codes (ErrClosed, ErrConfig, ...), the same names as
// in C, Rust, Python and Node: errors.Is(err, cosid.ErrSlotLost). Every function may be called from any number of
// goroutines. Link statically with `go build -tags cosid_static` (docs/go.md).
package cosid

// #include "cosid_go.h"
// #cgo noescape go_cosid_next_id
// #cgo nocallback go_cosid_next_id
// #cgo noescape go_cosid_next_ids
// #cgo nocallback go_cosid_next_ids
// #cgo noescape go_cosid_init
// #cgo noescape go_cosid_shutdown
// #cgo noescape go_cosid_global_status
// #cgo noescape go_cosid_global_layout
// #cgo noescape go_cosid_config_subscribe
import "C"

import (
	"runtime/cgo"
	"strings"
	"sync"
	"unsafe"
)

// Version is the version of the libcosid that the program runs with ("MAJOR.MINOR.PATCH").
func Version() string { return C.GoString(C.cosid_version()) }

// Stores lists the stores that the libcosid the program runs with carries, by the names of their URL schemes:
// memory, sqlite, http, redis and postgres in the released library. A store URL of any other store fails with
// ErrConfig, whose message says how to reach it (through `cosid serve`, or a build with its feature).
func Stores() []string { return strings.Split(C.GoString(C.cosid_stores()), ",") }

// HeaderVersion is the version of cosid.h that the binding was compiled against.
const HeaderVersion = C.COSID_VERSION

// The process-wide runtime's state on the Go side: the layout Init gave it, and its event subscribers.
var global struct {
	mu     sync.Mutex
	layout *Layout
	hub    *hub
	handle cgo.Handle
}

func globalHub() (*hub, cgo.Handle) {
	global.mu.Lock()
	defer global.mu.Unlock()
	if global.hub == nil {
		// Never deleted: the library may call back with it for as long as the process-wide runtime lives.
		global.hub = &hub{}
		global.handle = cgo.NewHandle(global.hub)
	}
	return global.hub, global.handle
}

// NextID issues one id from the process-wide runtime. The first call in a process starts it from the COSID_*
// environment variables (or from Init): it opens the store and acquires a slot, which can take up to the acquire
// timeout. Later calls are lock-free. After Shutdown it fails with ErrClosed until Init.
func NextID() (uint64, error) {
	var id C.uint64_t
	var detail *C.char
	if r := C.go_cosid_next_id(&id, &detail); r != C.COSID_RESULT_OK {
		return 0, newError(r, detail)
	}
	return uint64(id), nil
}

// NextIDs issues n ids (0 to MaxBatch) from the process-wide runtime, in increasing order, in one call.
func NextIDs(n int) ([]uint64, error) {
	if err := checkBatch(n); err != nil {
		return nil, err
	}
	buf := make([]uint64, n)
	if err := FillIDs(buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// FillIDs fills buf with increasing ids from the process-wide runtime; on error buf is left as it was.
func FillIDs(buf []uint64) error {
	var detail *C.char
	if r := C.go_cosid_next_ids(bufPtr(buf), C.size_t(len(buf)), &detail); r != C.COSID_RESULT_OK {
		return newError(r, detail)
	}
	return nil
}

// Init starts the process-wide runtime from the COSID_* environment variables and the options over them, instead
// of the environment alone: call it before the first id, or after Shutdown to start again. It blocks while the
// slot is acquired. While the runtime is running it fails with ErrAlreadyInitialized.
func Init(opts ...Option) error {
	cfg, s, err := newConfig(opts)
	if err != nil {
		return err
	}
	defer C.cosid_config_free(cfg)
	h, handle := globalHub()
	for _, ch := range s.events {
		h.add(ch)
	}
	var detail *C.char
	if r := C.go_cosid_config_subscribe(cfg, C.uintptr_t(handle), &detail); r != C.COSID_RESULT_OK {
		return newError(r, detail)
	}
	if r := C.go_cosid_init(cfg, &detail); r != C.COSID_RESULT_OK {
		for _, ch := range s.events {
			h.remove(ch)
		}
		return newError(r, detail)
	}
	var cl C.cosid_layout
	if r := C.go_cosid_global_layout(&cl, &detail); r == C.COSID_RESULT_OK {
		l := layoutFromC(&cl)
		global.mu.Lock()
		global.layout = &l
		global.mu.Unlock()
	} else {
		C.free(unsafe.Pointer(detail))
	}
	return nil
}

// Shutdown shuts the process-wide runtime down: it seals it (no id is returned after this starts), releases the
// slot with the exact last timestamp and stops its background thread. Later id calls fail with ErrClosed until
// Init. Calling it again, or before any id, is harmless.
//
// A Go program's exit does not run C's atexit handlers, through which a C program's normal exit releases the
// slot: call Shutdown before main returns (defer cosid.Shutdown() in main), or the slot stays taken until its
// lease expires (the ttl, 30 s by default). No id can repeat either way.
func Shutdown() error {
	var detail *C.char
	if r := C.go_cosid_shutdown(&detail); r != C.COSID_RESULT_OK {
		return newError(r, detail)
	}
	return nil
}

// Status is the process-wide runtime's slot, fence, window, expiry, state and last issued millisecond; it starts
// the runtime if needed, as NextID does. After Shutdown it still reports the last lease, with StateClosed.
func Status() (LeaseStatus, error) {
	var out C.cosid_status
	var detail *C.char
	if r := C.go_cosid_global_status(&out, &detail); r != C.COSID_RESULT_OK {
		return LeaseStatus{}, newError(r, detail)
	}
	return statusFromC(&out), nil
}

// Notify delivers the events of process-wide runtimes that Init starts (from then on) to ch; see Runtime.Notify.
// A process-wide runtime started from the environment alone, by the first NextID, has no event subscription.
func Notify(ch chan<- Event) {
	if ch != nil {
		h, _ := globalHub()
		h.add(ch)
	}
}

// StopNotify stops delivering the process-wide runtime's events to ch.
func StopNotify(ch chan<- Event) {
	h, _ := globalHub()
	h.remove(ch)
}
