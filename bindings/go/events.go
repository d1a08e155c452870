package cosid

// #include <cosid.h>
import "C"

import (
	"runtime/cgo"
	"sync"
	"sync/atomic"
)

// EventKind says what happened, in an Event. A newer library may add kinds: treat an unknown one as
// informational.
type EventKind uint32

// The kinds of events (cosid_event_kind in cosid.h).
const (
	EventUnknown           EventKind = 0 // a kind this binding has no name for; see Detail
	EventAcquired          EventKind = 1 // a lease was granted
	EventRenewed           EventKind = 2 // the lease was renewed
	EventRenewFailed       EventKind = 3 // a renewal failed; retried in RetryInMs
	EventSlotLost          EventKind = 4 // the lease was found gone; ids fail until a new slot
	EventReleased          EventKind = 5 // the lease was given back at shutdown
	EventDuplicateOwnerKey EventKind = 6 // another live instance has this owner key
	EventClockSkew         EventKind = 7 // the store's clock and this host's differ
	EventStoreRegression   EventKind = 8 // the store lost writes
	EventStoreUnsafe       EventKind = 9 // the store's server may lose a committed write
)

// The numbers are cosid.h's: a constant that differs from the header's does not compile.
var _ = [1]struct{}{}[(EventUnknown-C.COSID_EVENT_KIND_UNKNOWN)|(EventAcquired-C.COSID_EVENT_KIND_ACQUIRED)|(EventRenewed-C.COSID_EVENT_KIND_RENEWED)|(EventRenewFailed-C.COSID_EVENT_KIND_RENEW_FAILED)|(EventSlotLost-C.COSID_EVENT_KIND_SLOT_LOST)|(EventReleased-C.COSID_EVENT_KIND_RELEASED)|(EventDuplicateOwnerKey-C.COSID_EVENT_KIND_DUPLICATE_OWNER_KEY)|(EventClockSkew-C.COSID_EVENT_KIND_CLOCK_SKEW)|(EventStoreRegression-C.COSID_EVENT_KIND_STORE_REGRESSION)|(EventStoreUnsafe-C.COSID_EVENT_KIND_STORE_UNSAFE)]

// Event is one event of a runtime. Fields a kind does not use are zero.
type Event struct {
	Kind          EventKind
	Name          string // the stable upper-case name, the same in every binding ("SLOT_LOST")
	Slot          uint32 // the slot concerned
	Fence         uint64 // the lease's fence (ACQUIRED)
	FloorMs       uint64 // window floor, excluded, in store milliseconds (ACQUIRED)
	CeilingMs     uint64 // window ceiling, included (ACQUIRED, RENEWED)
	ExpiresAtMs   uint64 // lease expiry (ACQUIRED, RENEWED)
	LastIssuedMs  uint64 // the last millisecond used, when HasLastIssued (RELEASED)
	HasLastIssued bool
	OtherSlot     uint32 // the other instance's slot (DUPLICATE_OWNER_KEY)
	LocalMs       uint64 // this host's clock (CLOCK_SKEW)
	StoreMs       uint64 // the store's clock (CLOCK_SKEW)
	RetryInMs     uint64 // when the next try is (RENEW_FAILED)
	Detail        string // the error, the reason or the key
	Store         string // STORE_UNSAFE: the store kind, the server setting, its value and the value the
	Setting       string // safety claim needs
	Value         string
	Expected      string
}

// String is the event's name.
func (k EventKind) String() string {
	switch k {
	case EventAcquired:
		return "ACQUIRED"
	case EventRenewed:
		return "RENEWED"
	case EventRenewFailed:
		return "RENEW_FAILED"
	case EventSlotLost:
		return "SLOT_LOST"
	case EventReleased:
		return "RELEASED"
	case EventDuplicateOwnerKey:
		return "DUPLICATE_OWNER_KEY"
	case EventClockSkew:
		return "CLOCK_SKEW"
	case EventStoreRegression:
		return "STORE_REGRESSION"
	case EventStoreUnsafe:
		return "STORE_UNSAFE"
	default:
		return "UNKNOWN"
	}
}

// hub hands a runtime's events to its subscribers' channels. The C callback's userdata is a cgo.Handle of the
// hub (runtime/cgo: the C side never holds a Go pointer); the handle is deleted when the runtime is freed, after
// which the library calls back no more.
type hub struct {
	mu      sync.Mutex
	chans   []chan<- Event
	dropped atomic.Uint64
}

func (h *hub) add(ch chan<- Event) {
	h.mu.Lock()
	h.chans = append(h.chans, ch)
	h.mu.Unlock()
}

func (h *hub) remove(ch chan<- Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, c := range h.chans {
		if c == ch {
			h.chans = append(h.chans[:i:i], h.chans[i+1:]...)
			return
		}
	}
}

// deliver runs on the runtime's background thread: it never waits for a receiver.
func (h *hub) deliver(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ch := range h.chans {
		select {
		case ch <- ev:
		default:
			h.dropped.Add(1)
		}
	}
}

//export goCosidEvent
func goCosidEvent(handle C.uintptr_t, ev *C.cosid_event) {
	// No panic may unwind into the library's thread: a bad handle (which would be a bug here) is ignored.
	defer func() { _ = recover() }()
	h, ok := cgo.Handle(handle).Value().(*hub)
	if !ok || ev == nil {
		return
	}
	h.deliver(eventFromC(ev))
}

func eventFromC(c *C.cosid_event) Event {
	str := func(p *C.char) string {
		if p == nil {
			return ""
		}
		return C.GoString(p)
	}
	return Event{
		Kind:          EventKind(c.kind),
		Name:          str(c.name),
		Slot:          uint32(c.slot),
		Fence:         uint64(c.fence),
		FloorMs:       uint64(c.floor_ms),
		CeilingMs:     uint64(c.ceiling_ms),
		ExpiresAtMs:   uint64(c.expires_at_ms),
		LastIssuedMs:  uint64(c.last_issued_ms),
		HasLastIssued: bool(c.has_last_issued),
		OtherSlot:     uint32(c.other_slot),
		LocalMs:       uint64(c.local_ms),
		StoreMs:       uint64(c.store_ms),
		RetryInMs:     uint64(c.retry_in_ms),
		Detail:        str(c.detail),
		Store:         str(c.store),
		Setting:       str(c.setting),
		Value:         str(c.value),
		Expected:      str(c.expected),
	}
}
