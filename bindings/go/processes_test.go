package cosid_test

// Several processes on one store: each child is this test binary run again (TestMain sends it to childMain), with
// its own runtime on the shared store. Every child acquires its slot and reports it, then waits until all of them
// hold a lease at once (the parent closes their stdin), then issues ids from several goroutines and prints them.
// The parent checks that the slots held at the same time are distinct and that no id repeats across processes.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cosid "github.com/cosid-rs/cosid/bindings/go"
)

const childEnv = "COSID_GO_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}

// childMain: COSID_STORE and COSID_NAMESPACE come from the environment, through cosid.New.
func childMain() int {
	n, _ := strconv.Atoi(os.Getenv("COSID_GO_TEST_IDS"))
	rt, err := cosid.New()
	if err != nil {
		fmt.Printf("ERROR %v\n", err)
		return 1
	}
	defer rt.Close()
	st, err := rt.Status()
	if err != nil {
		fmt.Printf("ERROR %v\n", err)
		return 1
	}
	fmt.Printf("SLOT %d\n", st.Slot)
	_, _ = io.Copy(io.Discard, os.Stdin) // the parent closes stdin once every child holds a slot
	const goroutines = 4
	out := make([][]uint64, goroutines)
	var wg sync.WaitGroup
	var failed error
	var mu sync.Mutex
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < n/goroutines; i++ {
				id, err := rt.NextID()
				if err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
				out[g] = append(out[g], id)
			}
		}(g)
	}
	wg.Wait()
	if failed != nil {
		fmt.Printf("ERROR %v\n", failed)
		return 1
	}
	w := bufio.NewWriter(os.Stdout)
	for _, ids := range out {
		for _, id := range ids {
			fmt.Fprintf(w, "ID %d\n", id)
		}
	}
	fmt.Fprintln(w, "DONE")
	_ = w.Flush()
	return 0
}

// runProcesses starts n children on store and namespace, each issuing perChild ids, and checks the outcome.
func runProcesses(t *testing.T, store, namespace string, n, perChild int) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		lines *bufio.Scanner
		slot  string
	}
	children := make([]*child, n)
	for i := range children {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=1", "COSID_STORE="+store, "COSID_NAMESPACE="+namespace,
			"COSID_TTL=5s", "COSID_GO_TEST_IDS="+strconv.Itoa(perChild))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		children[i] = &child{cmd: cmd, stdin: stdin, lines: sc}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	// Every child holds its slot before any is let go: the slots are held at the same time.
	slots := map[string]int{}
	for i, c := range children {
		if !c.lines.Scan() {
			t.Fatalf("child %d: no output (%v)", i, c.lines.Err())
		}
		line := c.lines.Text()
		slot, ok := strings.CutPrefix(line, "SLOT ")
		if !ok {
			t.Fatalf("child %d: %s", i, line)
		}
		if j, dup := slots[slot]; dup {
			t.Fatalf("children %d and %d hold slot %s at the same time", j, i, slot)
		}
		slots[slot] = i
		c.slot = slot
	}
	for _, c := range children {
		_ = c.stdin.Close()
	}
	seen := make(map[uint64]int, n*perChild)
	for i, c := range children {
		count, done := 0, false
		for c.lines.Scan() {
			line := c.lines.Text()
			if line == "DONE" {
				done = true
				break
			}
			v, ok := strings.CutPrefix(line, "ID ")
			if !ok {
				t.Fatalf("child %d: %s", i, line)
			}
			id, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			if j, dup := seen[id]; dup {
				t.Fatalf("id %d issued by children %d and %d", id, j, i)
			}
			seen[id] = i
			count++
		}
		if err := c.cmd.Wait(); err != nil || !done || count != perChild {
			t.Fatalf("child %d: exit %v, done %v, %d ids of %d", i, err, done, count, perChild)
		}
	}
	t.Logf("%d processes on %s: slots %v, %d ids, 0 repeated", n, strings.SplitN(store, ":", 2)[0], keys(slots), len(seen))
}

func keys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestProcessesOnOneSQLiteFile(t *testing.T) {
	store := "sqlite://" + filepath.Join(t.TempDir(), "leases.db")
	runProcesses(t, store, "go-processes", 4, 20000)
	// Again on the same file: the slots were released at exit, and the new processes' ids repeat none of theirs
	// (checked within the run; the window floors guarantee it across runs).
	runProcesses(t, store, "go-processes", 3, 5000)
}

// Redis, when COSID_TEST_REDIS_URL points at a server (the Python and Node tests use the same variable).
func TestProcessesOnRedis(t *testing.T) {
	url := os.Getenv("COSID_TEST_REDIS_URL")
	if url == "" {
		t.Skip("COSID_TEST_REDIS_URL is not set")
	}
	ns := fmt.Sprintf("go-processes-%d-%d", os.Getpid(), time.Now().UnixNano())
	runProcesses(t, url, ns, 4, 20000)
}
