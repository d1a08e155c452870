package cosid

// #include "cosid_go.h"
// #cgo noescape go_cosid_runtime_new
// #cgo noescape go_cosid_runtime_next_id
// #cgo nocallback go_cosid_runtime_next_id
// #cgo noescape go_cosid_runtime_next_ids
// #cgo nocallback go_cosid_runtime_next_ids
// #cgo noescape go_cosid_runtime_status
// #cgo nocallback go_cosid_runtime_status
// #cgo noescape go_cosid_runtime_layout
// #cgo nocallback go_cosid_runtime_layout
// #cgo noescape go_cosid_runtime_shutdown
import "C"

import (
	"runtime"
	"runtime/cgo"
	"strconv"
	"sync"
	"unsafe"
)

// MaxBatch is the most ids NextIDs returns in one call (80 MB of ids); FillIDs takes any length.
const MaxBatch = 10_000_000

// Runtime is a leased slot of one namespace, renewed in the background, issuing unique ids: for a second
// namespace, a configuration per runtime, events, or an explicit lifetime. Create it with New and end it with
// Close, which releases the slot at once for the next process; a Runtime that becomes unreachable unclosed is
// closed by a cleanup (runtime.AddCleanup), a safety net only: until the garbage collector runs, its slot stays
// taken.
//
// Every method may be called from any number of goroutines at once. A nil or zero Runtime gives ErrNullPointer;
// after Close, ErrClosed.
type Runtime struct {
	mu      sync.RWMutex // read: a call on the handle; write: Close, which frees it
	h       *handle
	layout  Layout
	cleanup runtime.Cleanup
}

// handle is what Close and the cleanup free; the cleanup holds it, never the Runtime.
type handle struct {
	ptr *C.cosid_runtime
	hub *hub
	ch  cgo.Handle
}

func (h *handle) free() {
	C.cosid_runtime_free(h.ptr) // shuts down if not done yet; after it, no callback comes
	h.ptr = nil
	h.ch.Delete()
}

// New starts a runtime from the COSID_* environment variables and the options over them: it opens the store and
// acquires a slot (retrying a full namespace or an unreachable store for the acquire timeout), and starts the
// background thread that renews the lease.
//
//	rt, err := cosid.New(cosid.WithStore("sqlite:///var/lib/app/leases.db"), cosid.WithNamespace("orders"))
//	if err != nil { ... }
//	defer rt.Close()
//	id, err := rt.NextID()
func New(opts ...Option) (*Runtime, error) {
	cfg, s, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	defer C.cosid_config_free(cfg)
	h := &handle{hub: &hub{}}
	for _, ch := range s.events {
		h.hub.add(ch)
	}
	// Subscribed on the config, so that the events of the start (the first ACQUIRED) come too.
	h.ch = cgo.NewHandle(h.hub)
	var detail *C.char
	if r := C.go_cosid_config_subscribe(cfg, C.uintptr_t(h.ch), &detail); r != C.COSID_RESULT_OK {
		h.ch.Delete()
		return nil, newError(r, detail)
	}
	if r := C.go_cosid_runtime_new(cfg, &h.ptr, &detail); r != C.COSID_RESULT_OK {
		h.ch.Delete() // no runtime was made: nothing calls back with it
		return nil, newError(r, detail)
	}
	var cl C.cosid_layout
	if r := C.go_cosid_runtime_layout(h.ptr, &cl, &detail); r != C.COSID_RESULT_OK {
		err := newError(r, detail)
		h.free()
		return nil, err
	}
	rt := &Runtime{h: h, layout: layoutFromC(&cl)}
	rt.cleanup = runtime.AddCleanup(rt, (*handle).free, h)
	return rt, nil
}

// acquire takes the read lock and gives the live handle, or an error (the lock is then not held).
func (r *Runtime) acquire() (*C.cosid_runtime, error) {
	if r == nil {
		return nil, argError(ErrNullPointer, "rt: a nil *cosid.Runtime; expected one from cosid.New")
	}
	r.mu.RLock()
	if r.h == nil {
		r.mu.RUnlock()
		return nil, argError(ErrNullPointer, "rt: a zero cosid.Runtime; expected one from cosid.New")
	}
	if r.h.ptr == nil {
		r.mu.RUnlock()
		return nil, argError(ErrClosed, "the runtime was closed (Runtime.Close)")
	}
	return r.h.ptr, nil
}

// NextID issues one id. Lock-free in the library; it waits (at most the max_wait setting) only when the current
// millisecond's sequence is used up, when the clock is outside the lease window, or when it stepped back a little.
//
// Errors: ErrClosed after Shutdown or Close; ErrSlotLost, ErrWindowClosed, ErrBeforeWindow,
// ErrClockMovedBackwards when the lease cannot issue now.
func (r *Runtime) NextID() (uint64, error) {
	p, err := r.acquire()
	if err != nil {
		return 0, err
	}
	var id C.uint64_t
	var detail *C.char
	res := C.go_cosid_runtime_next_id(p, &id, &detail)
	r.mu.RUnlock()
	if res != C.COSID_RESULT_OK {
		return 0, newError(res, detail)
	}
	return uint64(id), nil
}

// NextIDs issues n ids (0 to MaxBatch), in increasing order, in one call.
func (r *Runtime) NextIDs(n int) ([]uint64, error) {
	if err := checkBatch(n); err != nil {
		return nil, err
	}
	buf := make([]uint64, n)
	if err := r.FillIDs(buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// FillIDs fills buf with increasing ids in one call; on error buf is left as it was.
func (r *Runtime) FillIDs(buf []uint64) error {
	p, err := r.acquire()
	if err != nil {
		return err
	}
	var detail *C.char
	res := C.go_cosid_runtime_next_ids(p, bufPtr(buf), C.size_t(len(buf)), &detail)
	r.mu.RUnlock()
	if res != C.COSID_RESULT_OK {
		return newError(res, detail)
	}
	return nil
}

// Status is the runtime's slot, fence, window, expiry, state and last issued millisecond. It works after
// Shutdown too (StateClosed), not after Close.
func (r *Runtime) Status() (LeaseStatus, error) {
	p, err := r.acquire()
	if err != nil {
		return LeaseStatus{}, err
	}
	var out C.cosid_status
	var detail *C.char
	res := C.go_cosid_runtime_status(p, &out, &detail)
	r.mu.RUnlock()
	if res != C.COSID_RESULT_OK {
		return LeaseStatus{}, newError(res, detail)
	}
	return statusFromC(&out), nil
}

// Layout is the layout of the runtime's ids.
func (r *Runtime) Layout() Layout {
	if r == nil {
		return Layout{}
	}
	return r.layout
}

// Parse splits an id of this runtime's layout into its fields.
func (r *Runtime) Parse(id uint64) (Parts, error) {
	if _, err := r.acquireLayout(); err != nil {
		return Parts{}, err
	}
	return r.layout.Parse(id)
}

// ToFriendly is the friendly form of an id of this runtime's layout.
func (r *Runtime) ToFriendly(id uint64) (string, error) {
	if _, err := r.acquireLayout(); err != nil {
		return "", err
	}
	return r.layout.ToFriendly(id)
}

// FromFriendly reads the friendly form of an id of this runtime's layout, strictly.
func (r *Runtime) FromFriendly(text string) (uint64, error) {
	if _, err := r.acquireLayout(); err != nil {
		return 0, err
	}
	return r.layout.FromFriendly(text)
}

func (r *Runtime) acquireLayout() (Layout, error) {
	if r == nil || r.layout.TickMs == 0 {
		return Layout{}, argError(ErrNullPointer, "rt: a nil or zero cosid.Runtime; expected one from cosid.New")
	}
	return r.layout, nil
}

// Notify delivers the runtime's later events to ch, as os/signal.Notify does: the runtime's background thread
// never waits for ch, and an event that finds ch full is dropped (DroppedEvents counts them). Give ch a buffer.
// To see the events of the start too (the first ACQUIRED), pass WithEvents to New instead.
func (r *Runtime) Notify(ch chan<- Event) error {
	if _, err := r.acquire(); err != nil {
		return err
	}
	defer r.mu.RUnlock()
	if ch != nil {
		r.h.hub.add(ch)
	}
	return nil
}

// StopNotify stops delivering events to ch (given to Notify or WithEvents).
func (r *Runtime) StopNotify(ch chan<- Event) {
	if r == nil {
		return
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.h != nil {
		r.h.hub.remove(ch)
	}
}

// DroppedEvents counts the events that found a subscriber's channel full.
func (r *Runtime) DroppedEvents() uint64 {
	if r == nil {
		return 0
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.h == nil {
		return 0
	}
	return r.h.hub.dropped.Load()
}

// Shutdown seals the runtime (no id is returned after it starts), releases the slot with the exact last
// timestamp (a RELEASED event) and stops the background thread. Later id calls fail with ErrClosed; Status still
// works. Calling it again does nothing. Close does it too.
func (r *Runtime) Shutdown() error {
	p, err := r.acquire()
	if err != nil {
		if e, ok := err.(*Error); ok && e.Code == ErrClosed {
			return nil
		}
		return err
	}
	var detail *C.char
	res := C.go_cosid_runtime_shutdown(p, &detail)
	r.mu.RUnlock()
	if res != C.COSID_RESULT_OK {
		return newError(res, detail)
	}
	return nil
}

// Close shuts the runtime down (as Shutdown) and frees it. It waits for calls in flight on other goroutines;
// calling it again does nothing.
func (r *Runtime) Close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h == nil || r.h.ptr == nil {
		return nil
	}
	var detail *C.char
	var err error
	if res := C.go_cosid_runtime_shutdown(r.h.ptr, &detail); res != C.COSID_RESULT_OK {
		err = newError(res, detail)
	}
	r.cleanup.Stop()
	r.h.free()
	return err
}

func checkBatch(n int) error {
	if n < 0 || n > MaxBatch {
		return argError(ErrInvalidArgument, "n = "+strconv.Itoa(n)+": expected 0 to "+strconv.Itoa(MaxBatch)+
			" (FillIDs takes a buffer of any length)")
	}
	return nil
}

// bufPtr is where C writes len(buf) ids; for an empty buffer a valid pointer all the same (C checks for NULL
// before it looks at the count).
func bufPtr(buf []uint64) *C.uint64_t {
	if len(buf) == 0 {
		return (*C.uint64_t)(unsafe.Pointer(&emptyBuf))
	}
	return (*C.uint64_t)(unsafe.Pointer(&buf[0]))
}

var emptyBuf uint64
