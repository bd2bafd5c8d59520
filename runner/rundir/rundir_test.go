package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A record that claims a run format newer than this halu's is refused with
// its file and line, not read as if it were of this one.
func TestRecordOfAFutureFormatRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), RecordsFile)
	body := fmt.Sprintf("{\"format\":%d,\"suite\":\"s\",\"item\":\"a\",\"data\":{}}\n{\"format\":%d,\"suite\":\"s\",\"item\":\"b\",\"data\":{}}\n", FormatVersion, FormatVersion+1)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := ReadRecords(p)
	if err == nil || !strings.Contains(err.Error(), RecordsFile+":2:") || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("err = %v", err)
	}
}

// FingerprintDiff names each model whose serving changed, with both
// digests, and models on one side only.
func TestFingerprintDiff(t *testing.T) {
	a := []Fingerprint{{Model: "gen:latest", Digest: "d1", ServerVersion: "0.17.4"}, {Model: "judge:latest", Digest: "j1"}}
	for _, tc := range []struct {
		name string
		b    []Fingerprint
		want []string
	}{
		{"same", []Fingerprint{{Model: "gen:latest", Digest: "d1", ServerVersion: "0.17.4"}, {Model: "judge:latest", Digest: "j1"}}, nil},
		{"other weights", []Fingerprint{{Model: "gen:latest", Digest: "d2", ServerVersion: "0.17.4"}, {Model: "judge:latest", Digest: "j1"}},
			[]string{"gen:latest: digest d1 → d2"}},
		{"other server", []Fingerprint{{Model: "gen:latest", Digest: "d1", ServerVersion: "0.18.0"}, {Model: "judge:latest", Digest: "j1"}},
			[]string{"gen:latest: server version 0.17.4 → 0.18.0 (the same digest d1)"}},
		{"one gone, one new", []Fingerprint{{Model: "gen:latest", Digest: "d1", ServerVersion: "0.17.4"}, {Model: "j2:latest", Digest: "j1"}},
			[]string{"judge:latest: not served now", "j2:latest: not in the run before"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FingerprintDiff(a, tc.b)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// Build names the running binary by its content: the sha256 of the
// executable, so that two builds of one version differ.
func TestBuildNamesTheBinary(t *testing.T) {
	p, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	h, err := HashFile(p)
	if err != nil {
		t.Fatal(err)
	}
	want := "9.9.9 (rev abc123, binary sha256 " + h[:12] + ")"
	if got := Build("9.9.9", "abc123"); got != want {
		t.Errorf("Build = %q, want %q", got, want)
	}
	// Begun in the background, the same identity, every call.
	build := StartBuild("9.9.9", "abc123")
	for range 2 {
		if got := build(); got != want {
			t.Errorf("StartBuild = %q, want %q", got, want)
		}
	}
}
