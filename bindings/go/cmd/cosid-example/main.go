// Command cosid-example prints ids from the process-wide runtime (configured by the COSID_* environment
// variables; with none set, an SQLite file in the user's state directory), their text forms, and the runtime's
// lease: the Go twin of examples/c/app.c.
//
//	go run ./cmd/cosid-example 3
//	go build -tags cosid_static ./cmd/cosid-example   (a program that needs no libcosid.so)
package main

import (
	"fmt"
	"os"
	"strconv"

	cosid "github.com/cosid-rs/cosid/bindings/go"
)

func main() {
	n := 5
	if len(os.Args) > 1 {
		var err error
		if n, err = strconv.Atoi(os.Args[1]); err != nil || n < 1 || n > 1000 {
			fmt.Fprintf(os.Stderr, "usage: %s [COUNT from 1 to 1000]\n", os.Args[0])
			os.Exit(2)
		}
	}
	os.Exit(run(n))
}

func run(n int) int {
	// Shutdown releases the slot at once for the next process (a normal exit does too; os.Exit skips it).
	defer cosid.Shutdown()
	for i := 0; i < n; i++ {
		id, err := cosid.NextID()
		if err != nil {
			fmt.Fprintln(os.Stderr, "cosid.NextID:", err)
			return 1
		}
		friendly, err := cosid.ToFriendly(id)
		if err != nil {
			fmt.Fprintln(os.Stderr, "cosid.ToFriendly:", err)
			return 1
		}
		fmt.Printf("%d  %s  %s\n", id, friendly, cosid.ToBase62(id))
	}
	st, err := cosid.Status()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cosid.Status:", err)
		return 1
	}
	fmt.Printf("slot %d, fence %d, window (%d, %d], %s, libcosid %s\n", st.Slot, st.Fence, st.FloorMs, st.CeilingMs,
		st.State, cosid.Version())
	return 0
}
