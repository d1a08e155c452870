package cosid

// #include "cosid_go.h"
// #cgo noescape go_cosid_layout_named
// #cgo nocallback go_cosid_layout_named
// #cgo noescape go_cosid_layout_check
// #cgo nocallback go_cosid_layout_check
// #cgo noescape go_cosid_layout_cap_per_second
// #cgo nocallback go_cosid_layout_cap_per_second
// #cgo noescape go_cosid_compose
// #cgo nocallback go_cosid_compose
// #cgo noescape go_cosid_decompose
// #cgo nocallback go_cosid_decompose
// #cgo noescape go_cosid_id_to_friendly
// #cgo nocallback go_cosid_id_to_friendly
// #cgo noescape go_cosid_id_from_friendly
// #cgo nocallback go_cosid_id_from_friendly
// #cgo noescape go_cosid_id_to_base62
// #cgo nocallback go_cosid_id_to_base62
// #cgo noescape go_cosid_id_from_base62
// #cgo nocallback go_cosid_id_from_base62
// #cgo noescape go_cosid_id_from_decimal
// #cgo nocallback go_cosid_id_from_decimal
import "C"

import (
	"os"
	"time"
	"unsafe"
)

// Tick lengths of a Layout.
const (
	TickMillisecond uint32 = 1    // COSID_TICK_MILLISECOND
	TickSecond      uint32 = 1000 // COSID_TICK_SECOND
)

// Base62Len is the length of an id's base-62 form: always 11 characters.
const Base62Len = 11

// The values are cosid.h's: one that differs from the header's does not compile.
var _ = [1]struct{}{}[(TickMillisecond-C.COSID_TICK_MILLISECOND)|(TickSecond-C.COSID_TICK_SECOND)|
	(Base62Len-C.COSID_BASE62_LEN)]

// Layout says how an id's 63 usable bits are split: 0 | timestamp | slot | sequence from the most significant bit
// down, the timestamp counted in ticks of TickMs milliseconds since EpochMs. A plain value; every function that
// takes one checks it (ErrLayout). Get the presets with NamedLayout, a runtime's with Runtime.Layout.
type Layout struct {
	EpochMs       uint64 // Unix milliseconds at the start of tick 0 (default 1577203200000, 2019-12-24T16:00:00Z)
	TickMs        uint32 // TickMillisecond or TickSecond
	TimestampBits uint8  // width of the timestamp field
	SlotBits      uint8  // width of the slot field
	SequenceBits  uint8  // width of the sequence field
}

// Parts are the fields of an id.
type Parts struct {
	Tick        uint64    // ticks since the layout's epoch
	TimestampMs uint64    // Unix milliseconds at the start of the tick
	Timestamp   time.Time // the same instant, in UTC
	Slot        uint64    // the slot that issued the id
	Sequence    uint64    // the sequence number within the tick
}

func (l Layout) c() C.cosid_layout {
	return C.cosid_layout{
		epoch_ms:       C.uint64_t(l.EpochMs),
		tick_ms:        C.uint32_t(l.TickMs),
		timestamp_bits: C.uint8_t(l.TimestampBits),
		slot_bits:      C.uint8_t(l.SlotBits),
		sequence_bits:  C.uint8_t(l.SequenceBits),
	}
}

func layoutFromC(c *C.cosid_layout) Layout {
	return Layout{
		EpochMs:       uint64(c.epoch_ms),
		TickMs:        uint32(c.tick_ms),
		TimestampBits: uint8(c.timestamp_bits),
		SlotBits:      uint8(c.slot_bits),
		SequenceBits:  uint8(c.sequence_bits),
	}
}

// NamedLayout is the preset layout called name: "millis" (41 bits of millisecond ticks, 10 of slot, 12 of
// sequence: the default), "seconds" (31, 10, 22, second ticks) or "js-safe" (41, 5, 7: 53 bits, exact as a
// JavaScript number). Another name is ErrLayout.
func NamedLayout(name string) (Layout, error) {
	cn, err := cString(ErrLayout, "layout", name)
	if err != nil {
		return Layout{}, err
	}
	defer C.free(unsafe.Pointer(cn))
	var out C.cosid_layout
	var detail *C.char
	if r := C.go_cosid_layout_named(cn, &out, &detail); r != C.COSID_RESULT_OK {
		return Layout{}, newError(r, detail)
	}
	return layoutFromC(&out), nil
}

// MillisLayout is the default layout, NamedLayout("millis").
func MillisLayout() Layout { return mustNamed("millis") }

// SecondsLayout is NamedLayout("seconds").
func SecondsLayout() Layout { return mustNamed("seconds") }

// JSSafeLayout is NamedLayout("js-safe").
func JSSafeLayout() Layout { return mustNamed("js-safe") }

func mustNamed(name string) Layout {
	l, err := NamedLayout(name)
	if err != nil {
		panic("cosid: the library has no preset layout " + name + ": " + err.Error())
	}
	return l
}

// DefaultLayout is the layout that Parse, ToFriendly and FromFriendly use: the layout given to Init, else the one
// COSID_LAYOUT names (the process-wide runtime's, when it starts from the environment), else "millis". It does
// not start the process-wide runtime.
func DefaultLayout() (Layout, error) {
	global.mu.Lock()
	l := global.layout
	global.mu.Unlock()
	if l != nil {
		return *l, nil
	}
	// The C API has no call for a config's layout; COSID_LAYOUT is read as cosid_config_from_env reads it: one
	// of the preset names, empty for the default.
	name := os.Getenv("COSID_LAYOUT")
	if name == "" {
		name = "millis"
	}
	return NamedLayout(name)
}

// Check reports whether every function accepts the layout: nil, or an *Error with code ErrLayout and the reason.
func (l Layout) Check() error {
	cl := l.c()
	var detail *C.char
	if r := C.go_cosid_layout_check(&cl, &detail); r != C.COSID_RESULT_OK {
		return newError(r, detail)
	}
	return nil
}

// CapPerSecond is the most ids one slot of the layout can issue in a second (4,096,000 for "millis").
func (l Layout) CapPerSecond() (uint64, error) {
	cl := l.c()
	var out C.uint64_t
	var detail *C.char
	if r := C.go_cosid_layout_cap_per_second(&cl, &out, &detail); r != C.COSID_RESULT_OK {
		return 0, newError(r, detail)
	}
	return uint64(out), nil
}

// Compose builds an id from its fields; a field out of the layout's range is ErrInvalidID.
func (l Layout) Compose(tick, slot, sequence uint64) (uint64, error) {
	cl := l.c()
	var out C.uint64_t
	var detail *C.char
	r := C.go_cosid_compose(&cl, C.uint64_t(tick), C.uint64_t(slot), C.uint64_t(sequence), &out, &detail)
	if r != C.COSID_RESULT_OK {
		return 0, newError(r, detail)
	}
	return uint64(out), nil
}

// Parse splits id into its fields; an id with bits the layout does not use (the sign bit, or bits above its
// width) is ErrInvalidID.
func (l Layout) Parse(id uint64) (Parts, error) {
	cl := l.c()
	var out C.cosid_parts
	var detail *C.char
	if r := C.go_cosid_decompose(&cl, C.uint64_t(id), &out, &detail); r != C.COSID_RESULT_OK {
		return Parts{}, newError(r, detail)
	}
	ms := uint64(out.timestamp_ms)
	return Parts{
		Tick:        uint64(out.tick),
		TimestampMs: ms,
		Timestamp:   time.UnixMilli(int64(ms)).UTC(),
		Slot:        uint64(out.slot),
		Sequence:    uint64(out.sequence),
	}, nil
}

// ToFriendly is the friendly form of id, "yyyyMMddHHmmssSSS-slot-sequence" (the UTC start of its tick, then slot
// and sequence in decimal).
func (l Layout) ToFriendly(id uint64) (string, error) {
	cl := l.c()
	var buf [C.COSID_FRIENDLY_MAX_LEN + 1]C.char
	var n C.size_t
	var detail *C.char
	r := C.go_cosid_id_to_friendly(&cl, C.uint64_t(id), &buf[0], C.size_t(len(buf)), &n, &detail)
	if r != C.COSID_RESULT_OK {
		return "", newError(r, detail)
	}
	return C.GoStringN(&buf[0], C.int(n)), nil
}

// FromFriendly reads the friendly form strictly (only what ToFriendly writes): anything else is ErrInvalidID.
func (l Layout) FromFriendly(text string) (uint64, error) {
	ct, err := cString(ErrInvalidID, "text", text)
	if err != nil {
		return 0, err
	}
	defer C.free(unsafe.Pointer(ct))
	cl := l.c()
	var out C.uint64_t
	var detail *C.char
	if r := C.go_cosid_id_from_friendly(&cl, ct, &out, &detail); r != C.COSID_RESULT_OK {
		return 0, newError(r, detail)
	}
	return uint64(out), nil
}

// Parse splits id into its fields with DefaultLayout.
func Parse(id uint64) (Parts, error) {
	l, err := DefaultLayout()
	if err != nil {
		return Parts{}, err
	}
	return l.Parse(id)
}

// ToFriendly is the friendly form of id ("yyyyMMddHHmmssSSS-slot-sequence") with DefaultLayout.
func ToFriendly(id uint64) (string, error) {
	l, err := DefaultLayout()
	if err != nil {
		return "", err
	}
	return l.ToFriendly(id)
}

// FromFriendly reads the friendly form with DefaultLayout, strictly.
func FromFriendly(text string) (uint64, error) {
	l, err := DefaultLayout()
	if err != nil {
		return 0, err
	}
	return l.FromFriendly(text)
}

// ToBase62 is the base-62 form of id: exactly 11 characters of 0-9A-Za-z, zero-padded, so that the texts sort as
// the ids do. It does not depend on the layout.
func ToBase62(id uint64) string {
	var buf [C.COSID_BASE62_LEN + 1]C.char
	var n C.size_t
	var detail *C.char
	if r := C.go_cosid_id_to_base62(C.uint64_t(id), &buf[0], C.size_t(len(buf)), &n, &detail); r != C.COSID_RESULT_OK {
		// Only a buffer too small or a NULL pointer can fail, and neither can happen here.
		panic(newError(r, detail))
	}
	return C.GoStringN(&buf[0], C.int(n))
}

// FromBase62 reads the base-62 form strictly (exactly 11 characters of 0-9A-Za-z, at most "LygHa16AHYF"):
// anything else is ErrInvalidID.
func FromBase62(text string) (uint64, error) {
	ct, err := cString(ErrInvalidID, "text", text)
	if err != nil {
		return 0, err
	}
	defer C.free(unsafe.Pointer(ct))
	var out C.uint64_t
	var detail *C.char
	if r := C.go_cosid_id_from_base62(ct, &out, &detail); r != C.COSID_RESULT_OK {
		return 0, newError(r, detail)
	}
	return uint64(out), nil
}

// FromDecimal reads an id's canonical decimal form strictly (ASCII digits only: no sign, no space, no leading
// zero, at most 18446744073709551615): anything else is ErrInvalidID. strconv.FormatUint(id, 10) writes it.
func FromDecimal(text string) (uint64, error) {
	ct, err := cString(ErrInvalidID, "text", text)
	if err != nil {
		return 0, err
	}
	defer C.free(unsafe.Pointer(ct))
	var out C.uint64_t
	var detail *C.char
	if r := C.go_cosid_id_from_decimal(ct, &out, &detail); r != C.COSID_RESULT_OK {
		return 0, newError(r, detail)
	}
	return uint64(out), nil
}
