package cosid_test

// The Go driver of the cross-language conformance table, tests/conformance/cases.txt at the root of the repository
// (its header describes the format). The same cases run in Rust, the CLI, C, Python and Node: a case added to the
// table runs here too. Each case runs on a fresh Runtime (its settings given as the table's text, through
// WithSetting) and a fresh temporary directory. A running Go program cannot fork(): a case stops before a
// `fork_next_id` step and reports it as skipped, as the Node driver does.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	cosid "github.com/cosid-rs/cosid/bindings/go"
)

type confCase struct {
	name   string
	set    [][2]string
	steps  [][2]string
	hidden []string
}

func conformanceTable(t *testing.T) string {
	if p := os.Getenv("COSID_CONFORMANCE_CASES"); p != "" {
		return p
	}
	return filepath.Join("..", "..", "tests", "conformance", "cases.txt")
}

func readCases(t *testing.T) []confCase {
	path := conformanceTable(t)
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the conformance table: %v (set COSID_CONFORMANCE_CASES outside the repository)", err)
	}
	defer f.Close()
	var cases []confCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		if word != "case" && len(cases) == 0 {
			t.Fatalf("%s:%d: %q before the first case", path, n, word)
		}
		switch word {
		case "case":
			cases = append(cases, confCase{name: rest})
		case "set":
			k, v, _ := strings.Cut(rest, " ")
			c := &cases[len(cases)-1]
			c.set = append(c.set, [2]string{k, v})
		case "hidden":
			c := &cases[len(cases)-1]
			c.hidden = append(c.hidden, rest)
		case "start", "next_id", "slot", "shutdown", "fork_next_id":
			c := &cases[len(cases)-1]
			c.steps = append(c.steps, [2]string{word, rest})
		default:
			t.Fatalf("%s:%d: unknown directive %q", path, n, word)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// code is the outcome of a call as the table writes it: OK, or the error's code name. Every form in which Go
// shows the error is kept for the case's `hidden` check.
func code(err error, shown *[]string) string {
	if err == nil {
		return "OK"
	}
	*shown = append(*shown, err.Error(), fmt.Sprint(err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err),
		fmt.Sprintf("%q", err))
	var e *cosid.Error
	if !errors.As(err, &e) {
		return "NOT_A_COSID_ERROR(" + err.Error() + ")"
	}
	return e.Code.String()
}

func TestConformance(t *testing.T) {
	cases := readCases(t)
	if len(cases) < 20 {
		t.Fatalf("only %d cases in the table", len(cases))
	}
	steps, skipped := 0, 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var opts []cosid.Option
			for _, kv := range c.set {
				opts = append(opts, cosid.WithSetting(kv[0], strings.ReplaceAll(kv[1], "{dir}", dir)))
			}
			var rt *cosid.Runtime
			defer func() {
				if err := rt.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			}()
			var shown []string
			for i, st := range c.steps {
				action, expect := st[0], st[1]
				if action == "fork_next_id" {
					t.Logf("skipped: %s (a running Go program cannot fork)", action)
					skipped += len(c.steps) - i
					break
				}
				steps++
				var got string
				switch action {
				case "start":
					var err error
					rt, err = cosid.New(opts...)
					got = code(err, &shown)
				case "next_id":
					_, err := rt.NextID()
					got = code(err, &shown)
				case "shutdown":
					got = code(rt.Shutdown(), &shown)
				case "slot":
					s, err := rt.Status()
					if err == nil {
						got = strconv.FormatUint(uint64(s.Slot), 10)
					} else {
						got = code(err, &shown)
					}
				}
				if got != expect {
					t.Errorf("%s: expected %s, got %s (%v)", action, expect, got, shown)
				}
			}
			for _, h := range c.hidden {
				for _, s := range shown {
					if strings.Contains(s, h) {
						t.Errorf("an error shows %q: %s", h, s)
					}
				}
			}
		})
	}
	t.Logf("conformance: %d cases, %d steps run, %d skipped", len(cases), steps, skipped)
}
