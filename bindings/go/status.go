package cosid

// #include <cosid.h>
import "C"

import "time"

// State is what a runtime is doing, in a LeaseStatus.
type State uint32

// The states of a runtime (cosid_state in cosid.h).
const (
	StateUnknown     State = 0 // a state this version of the binding has no name for
	StateActive      State = 1 // issuing, with a current lease
	StateRenewing    State = 2 // issuing, but the last renewal failed; retrying
	StateReacquiring State = 3 // the lease was lost; acquiring a new slot (ids: ErrSlotLost)
	StateClosed      State = 4 // shut down
)

// The numbers are cosid.h's: a constant that differs from the header's does not compile.
var _ = [1]struct{}{}[(StateUnknown-C.COSID_STATE_UNKNOWN)|(StateActive-C.COSID_STATE_ACTIVE)|
	(StateRenewing-C.COSID_STATE_RENEWING)|(StateReacquiring-C.COSID_STATE_REACQUIRING)|
	(StateClosed-C.COSID_STATE_CLOSED)]

// String is the state's name as every binding spells it: "ACTIVE", "RENEWING", "REACQUIRING", "CLOSED".
func (s State) String() string {
	switch s {
	case StateActive:
		return "ACTIVE"
	case StateRenewing:
		return "RENEWING"
	case StateReacquiring:
		return "REACQUIRING"
	case StateClosed:
		return "CLOSED"
	default:
		return "UNKNOWN"
	}
}

// LeaseStatus is a runtime's lease and state at one moment. Times are Unix milliseconds by the store's clock.
type LeaseStatus struct {
	Slot          uint32 // the leased slot (the lowest, with WithSlots above 1)
	State         State  // what the runtime is doing
	Fence         uint64 // grows with every grant and release of the slot
	FloorMs       uint64 // window floor (excluded): ids of this lease have timestamps above it
	CeilingMs     uint64 // window ceiling (included): no id of this lease has a later timestamp
	ExpiresAtMs   uint64 // when the lease expires unless renewed
	StoreNowMs    uint64 // the store's clock at its last reply
	LastIssuedMs  uint64 // the last millisecond used by an id of this window, when HasLastIssued
	HasLastIssued bool   // whether any id was issued in this window
}

// ExpiresAt is ExpiresAtMs as a time.Time.
func (s LeaseStatus) ExpiresAt() time.Time { return time.UnixMilli(int64(s.ExpiresAtMs)) }

func statusFromC(c *C.cosid_status) LeaseStatus {
	return LeaseStatus{
		Slot:          uint32(c.slot),
		State:         State(c.state),
		Fence:         uint64(c.fence),
		FloorMs:       uint64(c.floor_ms),
		CeilingMs:     uint64(c.ceiling_ms),
		ExpiresAtMs:   uint64(c.expires_at_ms),
		StoreNowMs:    uint64(c.store_now_ms),
		LastIssuedMs:  uint64(c.last_issued_ms),
		HasLastIssued: bool(c.has_last_issued),
	}
}
