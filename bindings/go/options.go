package cosid

// #include "cosid_go.h"
// #cgo noescape go_cosid_config_from_env
// #cgo nocallback go_cosid_config_from_env
// #cgo noescape go_cosid_config_set
// #cgo nocallback go_cosid_config_set
// #cgo noescape go_cosid_config_set_layout
// #cgo nocallback go_cosid_config_set_layout
// #cgo noescape go_cosid_config_subscribe
// #cgo nocallback go_cosid_config_subscribe
import "C"

import (
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// Option is one setting of a runtime, for New and Init. Settings not given come from the COSID_* environment
// variables (COSID_STORE, COSID_NAMESPACE, ...), then the defaults: the library reads the environment and checks
// every value (cosid_config_from_env and cosid_config_set in the C API), so Go follows the same table as C,
// Python, Node and the CLI. A bad value is an *Error with code ErrConfig (or ErrLayout, ErrUnknownKey) from New or
// Init, naming the setting, the value and what was expected.
type Option func(*settings)

type setting struct {
	key, value string
	layout     *Layout // set for a custom layout (WithLayout)
}

type settings struct {
	list   []setting
	events []chan<- Event
}

// WithSetting sets a setting by its key in the library's table, with its value as text, as the COSID_*
// environment variable would give it: "store", "namespace", "layout", "ttl", "tolerance", "bits", "owner_key",
// "preferred_slot", "slots", "acquire_timeout", "max_wait", "backwards_wait", "on_fork". An empty value is the
// default. The typed options below are shorthands for it.
func WithSetting(key, value string) Option {
	return func(s *settings) { s.list = append(s.list, setting{key: key, value: value}) }
}

// WithStore sets the store URL: "sqlite:///var/lib/app/leases.db", "memory:" (this process only),
// "redis://host:6379/0", "postgres://...", "mysql://...", "etcd://host:2379", "http://..." (cosid serve), or a slot
// without a store: "static:3?state_file=/var/lib/app/cosid.state", "static:ordinal", "manual:3". The default is
// an SQLite file in the user's state directory.
func WithStore(url string) Option { return WithSetting("store", url) }

// WithNamespace sets the namespace: ids are unique within one namespace ("default").
func WithNamespace(name string) Option { return WithSetting("namespace", name) }

// WithLayoutName sets a preset layout: "millis" (the default), "seconds" or "js-safe".
func WithLayoutName(name string) Option { return WithSetting("layout", name) }

// WithLayout sets a custom layout (checked when New or Init runs: ErrLayout).
func WithLayout(l Layout) Option {
	return func(s *settings) { s.list = append(s.list, setting{key: "layout", layout: &l}) }
}

// WithTTL sets the lease's length (30s).
func WithTTL(d time.Duration) Option { return WithSetting("ttl", durationText(d)) }

// WithTolerance sets how far past its expiry a lease's holder may issue (1s); recorded per namespace.
func WithTolerance(d time.Duration) Option { return WithSetting("tolerance", durationText(d)) }

// WithBits sets the namespace's slot bits: 2^bits slots (10, or the layout's slot bits if fewer).
func WithBits(bits int) Option { return WithSetting("bits", strconv.Itoa(bits)) }

// WithOwnerKey sets the owner key ("host:pid").
func WithOwnerKey(key string) Option { return WithSetting("owner_key", key) }

// WithPreferredSlot sets a slot to take if it is free (a StatefulSet ordinal, say).
func WithPreferredSlot(slot int) Option { return WithSetting("preferred_slot", strconv.Itoa(slot)) }

// WithSlots sets how many slots to lease, 1 (the default) to 64: throughput past one slot's cap.
func WithSlots(n int) Option { return WithSetting("slots", strconv.Itoa(n)) }

// WithAcquireTimeout sets how long the start retries a full namespace or an unreachable store (the ttl).
func WithAcquireTimeout(d time.Duration) Option {
	return WithSetting("acquire_timeout", durationText(d))
}

// WithMaxWait sets how long an id call waits for a renewal or for the clock to pass the window's floor (2s).
func WithMaxWait(d time.Duration) Option { return WithSetting("max_wait", durationText(d)) }

// WithBackwardsWait sets how far a wall clock that stepped back is waited out (500ms).
func WithBackwardsWait(d time.Duration) Option { return WithSetting("backwards_wait", durationText(d)) }

// WithOnFork sets what a forked child does: "reacquire" (the default) or "error". Go programs rarely fork without
// exec; the setting is there for programs that embed cosid beside C code that does.
func WithOnFork(policy string) Option { return WithSetting("on_fork", policy) }

// WithEvents delivers the runtime's events to ch from its very start (the first ACQUIRED included). The runtime's
// background thread never waits for ch: an event that finds ch full is dropped (as os/signal.Notify does), so give
// ch a buffer (16 is plenty: a runtime has a few events per ttl). cosid never closes ch; do not close it while the
// runtime may still send to it (after Close, or Runtime.StopNotify, it is safe).
func WithEvents(ch chan<- Event) Option {
	return func(s *settings) {
		if ch != nil {
			s.events = append(s.events, ch)
		}
	}
}

// durationText writes d exactly, in the units the library's duration parser reads: whole milliseconds as "ms",
// anything finer as "ns" (which the library refuses, naming the value: cosid counts whole milliseconds).
func durationText(d time.Duration) string {
	if d%time.Millisecond == 0 {
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}

// config is a cosid_config built from the environment and the options; free it with C.cosid_config_free.
func newConfig(opts []Option) (*C.cosid_config, *settings, error) {
	s := &settings{}
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	var cfg *C.cosid_config
	var detail *C.char
	if r := C.go_cosid_config_from_env(&cfg, &detail); r != C.COSID_RESULT_OK {
		return nil, nil, newError(r, detail)
	}
	for _, st := range s.list {
		var err error
		if st.layout != nil {
			cl := st.layout.c()
			if r := C.go_cosid_config_set_layout(cfg, &cl, &detail); r != C.COSID_RESULT_OK {
				err = newError(r, detail)
			}
		} else {
			err = configSet(cfg, st.key, st.value)
		}
		if err != nil {
			C.cosid_config_free(cfg)
			return nil, nil, err
		}
	}
	return cfg, s, nil
}

func configSet(cfg *C.cosid_config, key, value string) error {
	ck, err := cString(ErrInvalidArgument, "key", key)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(ck))
	cv, err := cString(ErrInvalidArgument, key, value)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cv))
	var detail *C.char
	if r := C.go_cosid_config_set(cfg, ck, cv, &detail); r != C.COSID_RESULT_OK {
		return newError(r, detail)
	}
	return nil
}

// cString copies s into C memory (free it with C.free); a NUL byte, which C would read as the string's end, is
// refused with code rather than silently cutting the text.
func cString(code Code, what, s string) (*C.char, error) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return nil, argError(code, what+": a NUL byte at "+strconv.Itoa(i)+
			"; expected text without NUL bytes")
	}
	return C.CString(s), nil
}
