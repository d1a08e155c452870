// Package bench times cosid's Go binding beside github.com/sony/sonyflake and github.com/bwmarrin/snowflake, in
// one run (bindings/go/bench.sh prints the figures). Two figures per generator:
//
//   - burst: ns per id in bursts of 250 ids, each burst starting on a fresh tick, so that no generator reaches its
//     per-tick cap (4,096 ids per ms for cosid and bwmarrin/snowflake, 256 per 10 ms for Sonyflake): the cost of
//     the call itself. The waits between bursts are not timed.
//   - sustained: ns per id in a tight loop, which runs into each generator's cap: 244 ns per id at 4,096 ids per
//     ms, 39 µs at Sonyflake's 25,600 ids per second.
package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bwmarrin/snowflake"
	cosid "github.com/cosid-rs/cosid/bindings/go"
	"github.com/sony/sonyflake"
)

const burst = 250

// run times next in bursts of `burst` calls, each starting on a fresh tick of `tick`.
func runBursts(b *testing.B, tick time.Duration, next func() error) {
	b.ReportAllocs()
	b.ResetTimer() // not the generator's start (a store round trip for cosid)
	for i := 0; i < b.N; i++ {
		if i%burst == 0 {
			b.StopTimer()
			now := time.Now()
			time.Sleep(now.Truncate(tick).Add(tick).Sub(now))
			b.StartTimer()
		}
		if err := next(); err != nil {
			b.Fatal(err)
		}
	}
}

func runSustained(b *testing.B, next func() error) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := next(); err != nil {
			b.Fatal(err)
		}
	}
}

func cosidRuntime(b *testing.B) *cosid.Runtime {
	rt, err := cosid.New(cosid.WithStore("sqlite://" + filepath.Join(b.TempDir(), "leases.db")))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rt.Close() })
	return rt
}

var sink uint64

func cosidGlobal(b *testing.B) func() error {
	dir, err := os.MkdirTemp("", "cosid-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cosid.Shutdown(); _ = os.RemoveAll(dir) })
	if err := cosid.Init(cosid.WithStore("sqlite://" + filepath.Join(dir, "leases.db"))); err != nil {
		b.Fatal(err)
	}
	return func() error {
		id, err := cosid.NextID()
		sink = id
		return err
	}
}

func cosidHandle(b *testing.B) func() error {
	rt := cosidRuntime(b)
	return func() error {
		id, err := rt.NextID()
		sink = id
		return err
	}
}

func bwmarrin(b *testing.B) func() error {
	node, err := snowflake.NewNode(1)
	if err != nil {
		b.Fatal(err)
	}
	return func() error {
		sink = uint64(node.Generate().Int64())
		return nil
	}
}

func sony(b *testing.B) func() error {
	// A machine id given outright: the default takes it from the host's private IPv4 address, the scheme that
	// repeats ids when two pods share the low 16 bits of their addresses.
	sf, err := sonyflake.New(sonyflake.Settings{MachineID: func() (uint16, error) { return 1, nil }})
	if err != nil {
		b.Fatal(err)
	}
	return func() error {
		id, err := sf.NextID()
		sink = id
		return err
	}
}

func BenchmarkBurst(b *testing.B) {
	b.Run("cosid.NextID", func(b *testing.B) { runBursts(b, time.Millisecond, cosidGlobal(b)) })
	b.Run("cosid.Runtime.NextID", func(b *testing.B) { runBursts(b, time.Millisecond, cosidHandle(b)) })
	b.Run("bwmarrin-snowflake", func(b *testing.B) { runBursts(b, time.Millisecond, bwmarrin(b)) })
	b.Run("sony-sonyflake", func(b *testing.B) { runBursts(b, 10*time.Millisecond, sony(b)) })
}

// cosid.Runtime.NextIDs: ns per id in batches of 1,000 (b.N counts ids), each on a fresh millisecond.
func BenchmarkBatch(b *testing.B) {
	rt := cosidRuntime(b)
	buf := make([]uint64, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += len(buf) {
		b.StopTimer()
		now := time.Now()
		time.Sleep(now.Truncate(time.Millisecond).Add(time.Millisecond).Sub(now))
		b.StartTimer()
		if err := rt.FillIDs(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSustained(b *testing.B) {
	b.Run("cosid.Runtime.NextID", func(b *testing.B) { runSustained(b, cosidHandle(b)) })
	b.Run("bwmarrin-snowflake", func(b *testing.B) { runSustained(b, bwmarrin(b)) })
	b.Run("sony-sonyflake", func(b *testing.B) { runSustained(b, sony(b)) })
}
