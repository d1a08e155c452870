package cosid_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	cosid "github.com/cosid-rs/cosid/bindings/go"
)

// sqliteStore is a store URL for a fresh SQLite file in the test's temporary folder: the tests never touch the
// user's state directory.
func sqliteStore(t testing.TB) string {
	return "sqlite://" + filepath.Join(t.TempDir(), "leases.db")
}

func newRuntime(t testing.TB, opts ...cosid.Option) *cosid.Runtime {
	t.Helper()
	rt, err := cosid.New(opts...)
	if err != nil {
		t.Fatalf("cosid.New: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return rt
}

func wantCode(t *testing.T, err error, want cosid.Code) *cosid.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("expected %s, got no error", want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("expected errors.Is(err, %s), got %#v", want, err)
	}
	var e *cosid.Error
	if !errors.As(err, &e) {
		t.Fatalf("expected a *cosid.Error, got %T", err)
	}
	if e.Code != want {
		t.Fatalf("expected code %s, got %s", want, e.Code)
	}
	if !strings.HasPrefix(e.Error(), "cosid: ") || e.Message == "" {
		t.Fatalf("error text %q", e.Error())
	}
	return e
}

func TestVersion(t *testing.T) {
	if cosid.Version() != cosid.HeaderVersion {
		t.Fatalf("library %s, header %s", cosid.Version(), cosid.HeaderVersion)
	}
}

func TestStores(t *testing.T) {
	stores := cosid.Stores()
	if len(stores) < 3 || stores[0] != "memory" || stores[1] != "sqlite" || stores[2] != "http" {
		t.Fatalf("Stores() = %v, want memory, sqlite, http first", stores)
	}
	// A URL of each store that needs no server: one the library does not carry is refused before connecting.
	offline := map[string]string{
		"mysql": "mysql://u:p@127.0.0.1:1/db", "etcd": "etcd://127.0.0.1:1",
		"zookeeper": "zookeeper://127.0.0.1:1", "mongodb": "mongodb://127.0.0.1:1/ids",
	}
	for s, url := range offline {
		if slices.Contains(stores, s) {
			continue
		}
		_, err := cosid.New(cosid.WithStore(url), cosid.WithSetting("acquire_timeout", "30s"))
		if !errors.Is(err, cosid.ErrConfig) || !strings.Contains(err.Error(), "the "+s+" store is not in this build") {
			t.Errorf("%s, not in %v: got %v, want ErrConfig saying it is not in this build", s, stores, err)
		}
	}
}

// The codes of this package are the library's: each number has the library's name for it, and every number the
// library names is here.
func TestCodesAreTheLibrarys(t *testing.T) {
	codes := map[cosid.Code]string{
		cosid.ErrNullPointer: "NULL_POINTER", cosid.ErrInvalidUTF8: "INVALID_UTF8",
		cosid.ErrInvalidArgument: "INVALID_ARGUMENT", cosid.ErrBufferTooSmall: "BUFFER_TOO_SMALL",
		cosid.ErrUnknownKey: "UNKNOWN_KEY", cosid.ErrStringTooLong: "STRING_TOO_LONG",
		cosid.ErrAlreadyInitialized: "ALREADY_INITIALIZED", cosid.ErrReentrant: "REENTRANT",
		cosid.ErrConfig: "CONFIG", cosid.ErrLayout: "LAYOUT", cosid.ErrInvalidID: "INVALID_ID",
		cosid.ErrSlotLost: "SLOT_LOST", cosid.ErrWindowClosed: "WINDOW_CLOSED",
		cosid.ErrBeforeWindow: "BEFORE_WINDOW", cosid.ErrClockMovedBackwards: "CLOCK_MOVED_BACKWARDS",
		cosid.ErrExhausted: "EXHAUSTED", cosid.ErrNamespaceMismatch: "NAMESPACE_MISMATCH",
		cosid.ErrClosed: "CLOSED", cosid.ErrForked: "FORKED", cosid.ErrStoreUnavailable: "STORE_UNAVAILABLE",
		cosid.ErrCorruptRecord: "CORRUPT_RECORD", cosid.ErrStore: "STORE", cosid.ErrStateFile: "STATE_FILE",
		cosid.ErrStoreRegression: "STORE_REGRESSION", cosid.ErrPanic: "PANIC", cosid.ErrInternal: "INTERNAL",
	}
	for c, name := range codes {
		if c.String() != name {
			t.Errorf("code %d: library says %s, Go says %s", uint32(c), c.String(), name)
		}
		if c.Message() == "" || c.Message() == "unknown cosid_result code" {
			t.Errorf("code %d: no message", uint32(c))
		}
	}
	for n := uint32(1); n < 10000; n++ {
		if name := cosid.Code(n).String(); name != "UNKNOWN" {
			if _, ok := codes[cosid.Code(n)]; !ok {
				t.Errorf("the library has code %d (%s), the Go binding has no constant for it", n, name)
			}
		}
	}
	if !errors.Is(cosid.ErrClosed, cosid.ErrClosed) || errors.Is(cosid.ErrClosed, cosid.ErrSlotLost) {
		t.Fatal("codes as sentinels")
	}
}

func TestRuntimeIssuesIncreasingUniqueIds(t *testing.T) {
	rt := newRuntime(t, cosid.WithStore(sqliteStore(t)), cosid.WithNamespace("go-api"))
	var last uint64
	for i := 0; i < 10000; i++ {
		id, err := rt.NextID()
		if err != nil {
			t.Fatal(err)
		}
		if id <= last {
			t.Fatalf("id %d after %d", id, last)
		}
		last = id
	}
	ids, err := rt.NextIDs(5000)
	if err != nil || len(ids) != 5000 {
		t.Fatalf("NextIDs: %d, %v", len(ids), err)
	}
	for i, id := range ids {
		if id <= last {
			t.Fatalf("NextIDs[%d] = %d after %d", i, id, last)
		}
		last = id
	}
	empty, err := rt.NextIDs(0)
	if err != nil || len(empty) != 0 {
		t.Fatalf("NextIDs(0): %v, %v", empty, err)
	}
	st, err := rt.Status()
	if err != nil {
		t.Fatal(err)
	}
	if st.State != cosid.StateActive || st.State.String() != "ACTIVE" || st.Fence == 0 || st.CeilingMs <= st.FloorMs ||
		!st.HasLastIssued || st.ExpiresAt().Before(time.Now().Add(-time.Minute)) {
		t.Fatalf("status %+v", st)
	}
	p, err := rt.Parse(last)
	if err != nil {
		t.Fatal(err)
	}
	if p.Slot != uint64(st.Slot) || time.Since(p.Timestamp) > time.Minute || p.TimestampMs != st.LastIssuedMs {
		t.Fatalf("parts %+v, status %+v", p, st)
	}
}

func TestNextIDsRefusesBadCounts(t *testing.T) {
	rt := newRuntime(t, cosid.WithStore("memory:"))
	for _, n := range []int{-1, cosid.MaxBatch + 1} {
		_, err := rt.NextIDs(n)
		wantCode(t, err, cosid.ErrInvalidArgument)
		_, err = cosid.NextIDs(n)
		wantCode(t, err, cosid.ErrInvalidArgument)
	}
}

func TestGoroutinesGetUniqueIds(t *testing.T) {
	rt := newRuntime(t, cosid.WithStore(sqliteStore(t)))
	const workers, each = 16, 20000
	results := make([][]uint64, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ids := make([]uint64, 0, each)
			for i := 0; i < each; i++ {
				var id uint64
				var err error
				if i%100 == 0 {
					var batch []uint64
					batch, err = rt.NextIDs(7)
					ids = append(ids, batch...)
					i += 6
				} else {
					id, err = rt.NextID()
					ids = append(ids, id)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
			results[w] = ids
		}(w)
	}
	wg.Wait()
	seen := make(map[uint64]struct{}, workers*each)
	for _, ids := range results {
		for i, id := range ids {
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("a goroutine's ids went backwards: %d after %d", id, ids[i-1])
			}
			if _, dup := seen[id]; dup {
				t.Fatalf("id %d issued twice", id)
			}
			seen[id] = struct{}{}
		}
	}
	if len(seen) < workers*each {
		t.Fatalf("%d ids, expected %d", len(seen), workers*each)
	}
}

func TestCloseRacesWithCalls(t *testing.T) {
	// Close waits for calls in flight; calls after it get ErrClosed; no call ever crashes.
	rt, err := cosid.New(cosid.WithStore("memory:"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				_, err := rt.NextID()
				if err != nil {
					if !errors.Is(err, cosid.ErrClosed) {
						t.Errorf("expected ErrClosed, got %v", err)
					}
					return
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := rt.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err = rt.Status()
	wantCode(t, err, cosid.ErrClosed)
	wantCode(t, rt.FillIDs(make([]uint64, 3)), cosid.ErrClosed)
	if err := rt.Shutdown(); err != nil {
		t.Fatalf("Shutdown after Close: %v", err)
	}
}

func TestShutdownThenStatus(t *testing.T) {
	rt := newRuntime(t, cosid.WithStore(sqliteStore(t)))
	if _, err := rt.NextID(); err != nil {
		t.Fatal(err)
	}
	if err := rt.Shutdown(); err != nil {
		t.Fatal(err)
	}
	_, err := rt.NextID()
	wantCode(t, err, cosid.ErrClosed)
	st, err := rt.Status()
	if err != nil || st.State != cosid.StateClosed {
		t.Fatalf("status after shutdown: %+v, %v", st, err)
	}
}

func TestNilAndZeroRuntime(t *testing.T) {
	var nilRT *cosid.Runtime
	_, err := nilRT.NextID()
	wantCode(t, err, cosid.ErrNullPointer)
	_, err = nilRT.Status()
	wantCode(t, err, cosid.ErrNullPointer)
	if err := nilRT.Close(); err != nil {
		t.Fatal(err)
	}
	var zero cosid.Runtime
	_, err = zero.NextID()
	wantCode(t, err, cosid.ErrNullPointer)
	_, err = zero.Parse(1)
	wantCode(t, err, cosid.ErrNullPointer)
	wantCode(t, zero.Shutdown(), cosid.ErrNullPointer)
	if err := zero.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestBadSettings(t *testing.T) {
	for _, tc := range []struct {
		opt  cosid.Option
		want cosid.Code
		says string
	}{
		{cosid.WithTTL(-time.Second), cosid.ErrConfig, "ttl"},
		{cosid.WithTTL(1500 * time.Microsecond), cosid.ErrConfig, "ttl"},
		{cosid.WithSetting("ttl", "soon"), cosid.ErrConfig, "soon"},
		{cosid.WithSetting("no_such_key", "1"), cosid.ErrUnknownKey, "no_such_key"},
		{cosid.WithLayoutName("nanos"), cosid.ErrLayout, "nanos"},
		{cosid.WithLayout(cosid.Layout{TickMs: 1, TimestampBits: 60, SlotBits: 10, SequenceBits: 12}), cosid.ErrLayout, ""},
		{cosid.WithStore("memory:\x00x"), cosid.ErrInvalidArgument, "NUL"},
		{cosid.WithStore("ftp://example.invalid/x"), cosid.ErrConfig, ""},
		{cosid.WithNamespace("bad\xffname"), cosid.ErrInvalidUTF8, ""},
		{cosid.WithNamespace(strings.Repeat("n", 5000)), cosid.ErrStringTooLong, ""},
		{cosid.WithBits(99), cosid.ErrConfig, "bits"},
	} {
		rt, err := cosid.New(cosid.WithStore("memory:"), tc.opt)
		if rt != nil {
			t.Fatalf("a runtime from a bad setting (%v)", tc)
		}
		e := wantCode(t, err, tc.want)
		if !strings.Contains(e.Message, tc.says) {
			t.Errorf("%s: message %q does not name %q", tc.want, e.Message, tc.says)
		}
	}
}

func TestEnvironmentIsRead(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("COSID_STORE", "sqlite://"+filepath.Join(dir, "env.db"))
	t.Setenv("COSID_LAYOUT", "seconds")
	rt := newRuntime(t)
	if rt.Layout() != cosid.SecondsLayout() {
		t.Fatalf("layout %+v", rt.Layout())
	}
	// An option wins over the variable.
	rt2 := newRuntime(t, cosid.WithLayoutName("js-safe"), cosid.WithNamespace("js-safe"))
	if rt2.Layout() != cosid.JSSafeLayout() {
		t.Fatalf("layout %+v", rt2.Layout())
	}
	if l, err := cosid.DefaultLayout(); err != nil || l != cosid.SecondsLayout() {
		t.Fatalf("DefaultLayout with COSID_LAYOUT=seconds: %+v, %v", l, err)
	}
	t.Setenv("COSID_TTL", "soon")
	_, err := cosid.New()
	e := wantCode(t, err, cosid.ErrConfig)
	if !strings.Contains(e.Message, "COSID_TTL") {
		t.Errorf("message %q does not name COSID_TTL", e.Message)
	}
}

func TestTextForms(t *testing.T) {
	l := cosid.MillisLayout()
	id, err := l.Compose(123456789, 5, 42)
	if err != nil {
		t.Fatal(err)
	}
	f, err := l.ToFriendly(id)
	if err != nil {
		t.Fatal(err)
	}
	back, err := l.FromFriendly(f)
	if err != nil || back != id {
		t.Fatalf("friendly %q -> %d, %v", f, back, err)
	}
	b := cosid.ToBase62(id)
	if len(b) != cosid.Base62Len {
		t.Fatalf("base62 %q", b)
	}
	if back, err := cosid.FromBase62(b); err != nil || back != id {
		t.Fatalf("base62 %q -> %d, %v", b, back, err)
	}
	if cosid.ToBase62(0) != "00000000000" || cosid.ToBase62(^uint64(0)) != "LygHa16AHYF" {
		t.Fatalf("base62 bounds %q %q", cosid.ToBase62(0), cosid.ToBase62(^uint64(0)))
	}
	// Base-62 texts sort as the ids do.
	ids := []uint64{0, 61, 62, 3843, 1 << 40, id, 1<<63 - 1, ^uint64(0)}
	texts := make([]string, len(ids))
	for i, v := range ids {
		texts[i] = cosid.ToBase62(v)
	}
	if !sort.StringsAreSorted(texts) {
		t.Fatalf("not sorted: %v", texts)
	}
	if v, err := cosid.FromDecimal("18446744073709551615"); err != nil || v != ^uint64(0) {
		t.Fatalf("FromDecimal: %d, %v", v, err)
	}
	for _, bad := range []string{"", "+1", "-1", "01", " 1", "1 ", "18446744073709551616", "1\x002", "١"} {
		_, err := cosid.FromDecimal(bad)
		wantCode(t, err, cosid.ErrInvalidID)
	}
	for _, bad := range []string{"", "0000000000", "000000000000", "LygHa16AHYG", "0000000000!", "00000\x0000000", "\xff\xff"} {
		_, err := cosid.FromBase62(bad)
		if !errors.Is(err, cosid.ErrInvalidID) && !errors.Is(err, cosid.ErrInvalidUTF8) {
			t.Fatalf("FromBase62(%q): %v", bad, err)
		}
	}
	for _, bad := range []string{"", f + "x", "0" + f, strings.Replace(f, "-5-", "-05-", 1), "20261399000000000-0-0", "x\x00"} {
		_, err := l.FromFriendly(bad)
		wantCode(t, err, cosid.ErrInvalidID)
	}
	// An id with bits above the layout's width.
	_, err = cosid.JSSafeLayout().Parse(1 << 60)
	wantCode(t, err, cosid.ErrInvalidID)
	_, err = cosid.JSSafeLayout().ToFriendly(1 << 60)
	wantCode(t, err, cosid.ErrInvalidID)
	_, err = l.Compose(0, 1<<10, 0)
	wantCode(t, err, cosid.ErrInvalidID)
	_, err = cosid.NamedLayout("nanos")
	wantCode(t, err, cosid.ErrLayout)
	wantCode(t, cosid.Layout{}.Check(), cosid.ErrLayout)
	_, err = cosid.Layout{}.Parse(1)
	wantCode(t, err, cosid.ErrLayout)
	if c, err := l.CapPerSecond(); err != nil || c != 4096000 {
		t.Fatalf("cap %d, %v", c, err)
	}
}

func TestEvents(t *testing.T) {
	events := make(chan cosid.Event, 64)
	rt, err := cosid.New(cosid.WithStore(sqliteStore(t)), cosid.WithTTL(300*time.Millisecond),
		cosid.WithTolerance(100*time.Millisecond), cosid.WithEvents(events))
	if err != nil {
		t.Fatal(err)
	}
	later := make(chan cosid.Event, 64)
	if err := rt.Notify(later); err != nil {
		t.Fatal(err)
	}
	first := <-events
	if first.Kind != cosid.EventAcquired || first.Name != "ACQUIRED" || first.Kind.String() != "ACQUIRED" ||
		first.CeilingMs <= first.FloorMs || first.Fence == 0 {
		t.Fatalf("first event %+v", first)
	}
	// A renewal comes at ttl/3.
	deadline := time.After(5 * time.Second)
	for renewed := false; !renewed; {
		select {
		case ev := <-later:
			renewed = ev.Kind == cosid.EventRenewed
		case <-deadline:
			t.Fatal("no RENEWED event within 5s")
		}
	}
	if _, err := rt.NextID(); err != nil {
		t.Fatal(err)
	}
	rt.StopNotify(later)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	var released *cosid.Event
	for len(events) > 0 {
		ev := <-events
		if ev.Kind == cosid.EventReleased {
			released = &ev
		}
	}
	if released == nil || !released.HasLastIssued || released.Slot != first.Slot {
		t.Fatalf("RELEASED: %+v", released)
	}
}

// The process-wide runtime, in one test: its state is the process's.
func TestProcessWideRuntime(t *testing.T) {
	store := sqliteStore(t)
	events := make(chan cosid.Event, 16)
	if err := cosid.Init(cosid.WithStore(store), cosid.WithLayoutName("seconds"), cosid.WithEvents(events)); err != nil {
		t.Fatal(err)
	}
	defer cosid.Shutdown()
	wantCode(t, cosid.Init(cosid.WithStore(store)), cosid.ErrAlreadyInitialized)
	if ev := <-events; ev.Kind != cosid.EventAcquired {
		t.Fatalf("first event %+v", ev)
	}
	id, err := cosid.NextID()
	if err != nil {
		t.Fatal(err)
	}
	ids, err := cosid.NextIDs(100)
	if err != nil || len(ids) != 100 || ids[0] <= id {
		t.Fatalf("NextIDs: %v, %v", ids, err)
	}
	if l, err := cosid.DefaultLayout(); err != nil || l != cosid.SecondsLayout() {
		t.Fatalf("DefaultLayout after Init(seconds): %+v, %v", l, err)
	}
	p, err := cosid.Parse(id)
	if err != nil || time.Since(p.Timestamp) > time.Minute {
		t.Fatalf("Parse: %+v, %v", p, err)
	}
	f, err := cosid.ToFriendly(id)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := cosid.FromFriendly(f); err != nil || back != id {
		t.Fatalf("FromFriendly(%q) = %d, %v", f, back, err)
	}
	st, err := cosid.Status()
	if err != nil || st.State != cosid.StateActive {
		t.Fatalf("Status: %+v, %v", st, err)
	}
	if err := cosid.Shutdown(); err != nil {
		t.Fatal(err)
	}
	_, err = cosid.NextID()
	wantCode(t, err, cosid.ErrClosed)
	if err := cosid.Shutdown(); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	st, err = cosid.Status()
	if err != nil || st.State != cosid.StateClosed {
		t.Fatalf("Status after Shutdown: %+v, %v", st, err)
	}
	// Init again starts it anew.
	if err := cosid.Init(cosid.WithStore(store), cosid.WithLayoutName("seconds")); err != nil {
		t.Fatal(err)
	}
	if id2, err := cosid.NextID(); err != nil || id2 == id {
		t.Fatalf("after Init again: %d, %v", id2, err)
	}
}

func TestErrorFormats(t *testing.T) {
	_, err := cosid.New(cosid.WithStore("memory:"), cosid.WithSetting("ttl", "soon"))
	var e *cosid.Error
	if !errors.As(err, &e) {
		t.Fatal(err)
	}
	if !strings.HasPrefix(e.Message, "CONFIG: ") || fmt.Sprint(err) != "cosid: "+e.Message {
		t.Fatalf("%q / %q", e.Message, fmt.Sprint(err))
	}
	wrapped := fmt.Errorf("starting: %w", err)
	if !errors.Is(wrapped, cosid.ErrConfig) || errors.Is(wrapped, cosid.ErrLayout) {
		t.Fatal("errors.Is through a wrap")
	}
}

// The cleanup is a safety net: a Runtime dropped without Close releases its slot once the garbage collector
// finds it, so the next runtime on the store gets that slot back.
func TestUnreachableRuntimeReleasesItsSlot(t *testing.T) {
	store := sqliteStore(t)
	func() {
		rt, err := cosid.New(cosid.WithStore(store))
		if err != nil {
			t.Fatal(err)
		}
		if st, err := rt.Status(); err != nil || st.Slot != 0 {
			t.Fatalf("first runtime: %+v, %v", st, err)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
		rt := newRuntime(t, cosid.WithStore(store))
		st, err := rt.Status()
		if err != nil {
			t.Fatal(err)
		}
		if st.Slot == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("slot 0 still held 10s after the first runtime became unreachable (got slot %d)", st.Slot)
		}
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
