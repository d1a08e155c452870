package cosid_test

import (
	"errors"
	"fmt"
	"log"
	"time"

	cosid "github.com/cosid-rs/cosid/bindings/go"
)

// The process-wide runtime: no set-up, configured by the COSID_* environment variables.
func ExampleNextID() {
	id, err := cosid.NextID()
	if err != nil {
		log.Fatal(err)
	}
	parts, _ := cosid.Parse(id)
	fmt.Println(id, parts.Timestamp, parts.Slot, parts.Sequence)
}

// A runtime of its own, with an explicit lifetime.
func ExampleNew() {
	rt, err := cosid.New(cosid.WithStore("memory:"), cosid.WithNamespace("orders"))
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	a, _ := rt.NextID()
	b, _ := rt.NextID()
	parts, _ := rt.Parse(b)
	status, _ := rt.Status()
	fmt.Println("increasing:", b > a)
	fmt.Println("slot:", parts.Slot, status.Slot, status.State)
	fmt.Println("recent:", time.Since(parts.Timestamp) < time.Minute)
	// Output:
	// increasing: true
	// slot: 0 0 ACTIVE
	// recent: true
}

// Errors are *cosid.Error values whose Code works with errors.Is.
func ExampleError() {
	_, err := cosid.New(cosid.WithStore("memory:"), cosid.WithTTL(1500*time.Microsecond))
	fmt.Println(errors.Is(err, cosid.ErrConfig))
	var e *cosid.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code.String(), uint32(e.Code))
	}
	// Output:
	// true
	// CONFIG 2000
}

func ExampleLayout_ToFriendly() {
	layout := cosid.MillisLayout()
	id, _ := layout.Compose(1000, 3, 7) // one second after the epoch, slot 3, sequence 7
	text, _ := layout.ToFriendly(id)
	back, _ := layout.FromFriendly(text)
	fmt.Println(id, text, back == id)
	// Output:
	// 4194316295 20191224160001000-3-7 true
}

func ExampleToBase62() {
	fmt.Println(cosid.ToBase62(4194316295))
	id, err := cosid.FromBase62("000004ZqvGp")
	fmt.Println(id, err)
	_, err = cosid.FromBase62("4ZqvGp") // not the canonical 11 characters
	fmt.Println(errors.Is(err, cosid.ErrInvalidID))
	// Output:
	// 000004ZqvGp
	// 4194316295 <nil>
	// true
}
