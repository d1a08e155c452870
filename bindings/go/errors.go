package cosid

// #include <stdlib.h>
// #include <cosid.h>
// #cgo noescape cosid_result_name
// #cgo nocallback cosid_result_name
// #cgo noescape cosid_result_message
// #cgo nocallback cosid_result_message
import "C"

import "unsafe"

// Code is a cosid result code: the number and the stable upper-case name (Code.String, "SLOT_LOST") that the C
// ABI, Rust, Python and Node use too. Every code is also an error, so the exported codes (ErrSlotLost, ...) are
// the sentinel values to test an *Error against with errors.Is:
//
//	if errors.Is(err, cosid.ErrSlotLost) { ... }
//
// Ranges: 1xxx the call itself is wrong; 2xxx a setting, layout or id is invalid; 3xxx the lease or the runtime
// cannot issue now; 4xxx the store failed; 9xxx a bug in cosid. Numbers are never reused or changed.
type Code uint32

// The result codes of the C ABI (cosid_result in cosid.h), one per code; TestCodesAreTheLibrarys checks each
// number against the library's name for it, and that the library has no code missing here.
const (
	ErrNullPointer         Code = 1000 // a required pointer was NULL (a nil or zero *Runtime)
	ErrInvalidUTF8         Code = 1001 // a string is not valid UTF-8
	ErrInvalidArgument     Code = 1002 // an argument is out of its documented range (a NUL byte in a string, n < 0)
	ErrBufferTooSmall      Code = 1003 // a buffer is too small (not returned by this package)
	ErrUnknownKey          Code = 1004 // a setting key that the host table does not have
	ErrStringTooLong       Code = 1005 // a string is longer than 4,096 bytes
	ErrAlreadyInitialized  Code = 1006 // Init while the process-wide runtime is running
	ErrReentrant           Code = 1007 // a call into a runtime from its own event callback
	ErrConfig              Code = 2000 // a setting is invalid, or the settings contradict each other
	ErrLayout              Code = 2001 // a layout is invalid, or a layout name unknown
	ErrInvalidID           Code = 2002 // an id does not fit the layout, or text is not the canonical form of an id
	ErrSlotLost            Code = 3000 // the lease was lost; ids fail until a new slot is acquired in the background
	ErrWindowClosed        Code = 3001 // the clock is past the lease window's ceiling and no renewal came in time
	ErrBeforeWindow        Code = 3002 // the host clock is still behind the lease window's floor after waiting
	ErrClockMovedBackwards Code = 3003 // the wall clock stepped back further than the generator waits for
	ErrExhausted           Code = 3004 // every slot of the namespace is held, and none freed in time
	ErrNamespaceMismatch   Code = 3005 // the namespace is recorded in the store with other settings
	ErrClosed              Code = 3006 // the runtime was shut down
	ErrForked              Code = 3007 // a forked child cannot take a slot of its own
	ErrStoreUnavailable    Code = 4000 // the store could not be reached, or did not answer in time
	ErrCorruptRecord       Code = 4001 // a record in the store breaks the protocol's invariants
	ErrStore               Code = 4002 // the store reported another error
	ErrStateFile           Code = 4003 // a static slot's state file is locked by another process, corrupt or unwritable
	ErrStoreRegression     Code = 4004 // the store lost or rolled back writes
	ErrPanic               Code = 9000 // a bug in cosid: a panic was caught at the C boundary
	ErrInternal            Code = 9001 // a bug in cosid: an internal invariant failed
)

// String is the code's stable name without the COSID_RESULT_ prefix ("SLOT_LOST"); "UNKNOWN" for a number that
// is not a code.
func (c Code) String() string {
	return C.GoString(C.cosid_result_name(C.uint32_t(c)))
}

// Message is the library's sentence for the code.
func (c Code) Message() string {
	return C.GoString(C.cosid_result_message(C.uint32_t(c)))
}

// Error makes every code an error: "cosid: SLOT_LOST: <the library's sentence>".
func (c Code) Error() string {
	return "cosid: " + c.String() + ": " + c.Message()
}

// Error is what every function of this package returns when a call fails: the code, and the library's detail
// of this failure (which names the value that was wrong and what was expected; never a password from a store
// URL). Compare with errors.Is(err, cosid.ErrConfig), or take it apart with errors.As:
//
//	var e *cosid.Error
//	if errors.As(err, &e) && e.Code == cosid.ErrStoreUnavailable { ... }
type Error struct {
	// Code says what failed.
	Code Code
	// Message is the detail, starting with the code's name ("CONFIG: invalid ttl = \"soon\": ...").
	Message string
}

// Error is "cosid: " and the detail.
func (e *Error) Error() string {
	return "cosid: " + e.Message
}

// Unwrap gives the Code, so that errors.Is(err, cosid.ErrClosed) holds for an *Error with that code.
func (e *Error) Unwrap() error {
	return e.Code
}

// newError makes the *Error of a failed call; detail is the malloc'd text of go_cosid_detail (freed here) or
// NULL.
func newError(r C.cosid_result, detail *C.char) error {
	code := Code(r)
	msg := ""
	if detail != nil {
		msg = C.GoString(detail)
		C.free(unsafe.Pointer(detail))
	}
	if msg == "" {
		msg = code.String() + ": " + code.Message()
	}
	return &Error{Code: code, Message: msg}
}

// argError is an *Error for an argument that this package refuses before calling the library.
func argError(code Code, msg string) error {
	return &Error{Code: code, Message: code.String() + ": " + msg}
}
