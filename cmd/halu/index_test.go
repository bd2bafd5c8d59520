package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
)

func TestBuildMemoryLimitReadsSizes(t *testing.T) {
	const none = math.MaxInt64
	tests := []struct {
		flag  string
		given bool
		env   string
		want  int64 // -1: none set
		err   string
	}{
		{defaultBuildMemory, false, "", 384 << 20, ""},
		{"1GiB", true, "", 1 << 30, ""},
		{"100000000", true, "", 100000000, ""},
		{"200000KiB", true, "", 200000 << 10, ""},
		{"0", true, "", none, ""},
		{defaultBuildMemory, false, "2GiB", -1, ""}, // the runtime applied GOMEMLIMIT
		{"512MiB", true, "2GiB", 512 << 20, ""},     // the flag given wins
		{"0", true, "2GiB", none, ""},               // "no bound" given wins too
		{"1.5GiB", true, "", 0, "not a size"},
		{"1GB", true, "", 0, "not a size"},
		{"-1", true, "", 0, "not a size"},
		{"MiB", true, "", 0, "not a size"},
		{"9000000TiB", true, "", 0, "not a size"},
		{"32MiB", true, "", 0, "under 64MiB"},
	}
	for _, tc := range tests {
		got, set, err := buildMemoryLimit(tc.flag, tc.given, tc.env)
		if tc.err != "" {
			if err == nil || set || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("buildMemoryLimit(%q, %v, %q) = %d, %v, %v; want an error with %q", tc.flag, tc.given, tc.env, got, set, err, tc.err)
			}
			continue
		}
		if !set {
			got = -1
		}
		if err != nil || got != tc.want {
			t.Errorf("buildMemoryLimit(%q, %v, %q) = %d, %v, %v; want %d", tc.flag, tc.given, tc.env, got, set, err, tc.want)
		}
	}
}

// TestIndexBuildHoldsItsMemoryLimit runs index build as the binary does
// and watches Go's memory limit while it runs: the build's own while it
// builds (the default, or --memory-limit), the process's before it and
// after; none set when GOMEMLIMIT is and the flag is not; a bad size is a
// usage error before the index is made.
func TestIndexBuildHoldsItsMemoryLimit(t *testing.T) {
	const before = 3 << 30
	prev := debug.SetMemoryLimit(before)
	defer debug.SetMemoryLimit(prev)
	input := "../../testdata/pubmed/pubmedqa_contexts.jsonl"
	tests := []struct {
		args []string
		env  string
		want int64
	}{
		{nil, "", 384 << 20},
		{[]string{"--memory-limit", "1GiB"}, "", 1 << 30},
		{[]string{"--memory-limit", "0"}, "", math.MaxInt64},
		{nil, "2GiB", before},
		{[]string{"--memory-limit", "512MiB"}, "2GiB", 512 << 20},
		{[]string{"--memory-limit", "0"}, "2GiB", math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " ")+" GOMEMLIMIT="+tc.env, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", tc.env)
			ix := filepath.Join(t.TempDir(), "ix")
			var seen atomic.Int64
			done := make(chan result)
			go func() {
				done <- haluOffline(append(append([]string{"index", "build", "--out", ix}, tc.args...), input)...)
			}()
			var r result
		watch:
			for {
				select {
				case r = <-done:
					break watch
				default:
					if l := debug.SetMemoryLimit(-1); l != before {
						seen.Store(l)
					}
				}
			}
			if r.code != exitOK {
				t.Fatalf("index build: exit %d\n%s", r.code, r.stderr)
			}
			got := seen.Load()
			if got == 0 {
				got = before
			}
			if got != tc.want {
				t.Errorf("memory limit during the build %d, want %d", got, tc.want)
			}
			if l := debug.SetMemoryLimit(-1); l != before {
				t.Errorf("memory limit after the build %d, want the process's %d back", l, before)
			}
		})
	}
	ix := filepath.Join(t.TempDir(), "ix")
	r := haluOffline("index", "build", "--out", ix, "--memory-limit", "12GB", input)
	if r.code != exitUsage || !strings.Contains(r.stderr, "--memory-limit") || !strings.Contains(r.stderr, `"12GB" is not a size`) {
		t.Errorf("--memory-limit 12GB: exit %d, stderr %q; want a usage error naming the flag and the value", r.code, r.stderr)
	}
	if _, err := os.Stat(ix); !os.IsNotExist(err) {
		t.Errorf("a bad --memory-limit made the index directory: %v", err)
	}
}

// haluOffline runs halu's command line in this process, as main does, for
// a command that calls no model server.
func haluOffline(args ...string) result {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// halu index compact: a built index compacted says what it merged, a
// search reads the same after it, and a directory with no index is an
// error that makes no index.
func TestIndexCompactCommand(t *testing.T) {
	ix := filepath.Join(t.TempDir(), "ix")
	const input = "../../testdata/pubmed/pubmedqa_contexts.jsonl"
	if r := haluOffline("index", "build", "--out", ix, "--batch", "100", input); r.code != exitOK {
		t.Fatalf("index build: exit %d: %s", r.code, r.stderr)
	}
	search := func() string {
		t.Helper()
		r := haluOffline("index", "search", ix, "--k", "10", "--json", "Preoperative statin therapy is associated with lower mortality")
		if r.code != exitOK || len(r.stdout) < 100 {
			t.Fatalf("index search: exit %d: %q %s", r.code, r.stdout, r.stderr)
		}
		return r.stdout
	}
	before := search()
	r := haluOffline("index", "compact", ix)
	if r.code != exitOK || !strings.Contains(r.stdout, "into 1 (1000 documents)") || !strings.Contains(r.stdout, "the index's seal is new") {
		t.Fatalf("index compact: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if after := search(); after != before {
		t.Errorf("a search after compaction:\n%s\nbefore:\n%s", after, before)
	}
	none := filepath.Join(t.TempDir(), "none")
	if r := haluOffline("index", "compact", none); r.code == exitOK || !strings.Contains(r.stderr, "no index here") {
		t.Errorf("index compact of no index: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Errorf("index compact made a directory: %v", err)
	}
}
