package rundir

import (
	"encoding/json"
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

// The records file is read a line at a time: whole records in order, a
// last line cut short by a crash left out with the good size at its start
// (terminated or not), damage elsewhere named by line; the slim reading
// drops the transcripts and keeps every other field; a count reads the
// same records.
func TestReadRecordsALineAtATime(t *testing.T) {
	rec := func(item string) string {
		return fmt.Sprintf(`{"format":%d,"suite":"s","item":%q,"data":{"x":1},"calls":[{"stage":"generate","kind":"chat","model":"m","digest":"d","key":"k","prompt":"p","reply":"a reply","parsed":"{}","options":{"seed":1}}],"failures":[{"stage":"judge","model":"j","reason":"r","raw":["raw"]}],"prompts":{"p":"the prompt"}}`, FormatVersion, item) + "\n"
	}
	whole := rec("a") + rec("b")
	// Many records span batches (batchLines each): damage and a cut
	// tail at and across their bounds read as in one.
	many := func(n int) (string, []string) {
		var b strings.Builder
		var items []string
		for i := range n {
			items = append(items, fmt.Sprint(i))
			b.WriteString(rec(fmt.Sprint(i)))
		}
		return b.String(), items
	}
	bound, boundItems := many(2 * batchLines)
	three, threeItems := many(3*batchLines + 5)
	cut := "{\"format\":1,\"item\n"
	for _, c := range []struct {
		name, body string
		items      []string
		good       int
		err        string
	}{
		{"whole", whole, []string{"a", "b"}, len(whole), ""},
		{"unterminated tail", whole + `{"format":1,"item":"c"`, []string{"a", "b"}, len(whole), ""},
		{"terminated tail cut", whole + "{\"format\":1,\"item\n", []string{"a", "b"}, len(whole), ""},
		{"damage inside", rec("a") + "{oops\n" + rec("b"), nil, 0, RecordsFile + ":2: damaged record"},
		{"empty", "", nil, 0, ""},
		{"batches", three, threeItems, len(three), ""},
		{"cut after a whole batch", bound + cut, boundItems, len(bound), ""},
		{"cut last line before a tail", bound + cut + `{"format":1`, nil, 0, fmt.Sprintf("%s:%d: damaged record", RecordsFile, 2*batchLines+1)},
		{"damage in a later batch", bound + "{oops\n" + rec("x"), nil, 0, fmt.Sprintf("%s:%d: damaged record", RecordsFile, 2*batchLines+1)},
	} {
		p := filepath.Join(t.TempDir(), RecordsFile)
		if err := os.WriteFile(p, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, read := range []func(string) ([]Record, int64, error){ReadRecords, ReadRecordsSlim} {
			recs, good, err := read(p)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("%s: err %v, want %q", c.name, err, c.err)
				}
				continue
			}
			var items []string
			for _, r := range recs {
				items = append(items, r.Item)
			}
			if err != nil || good != int64(c.good) || strings.Join(items, ",") != strings.Join(c.items, ",") {
				t.Errorf("%s: items %v, good %d, err %v; want %v, %d", c.name, items, good, err, c.items, c.good)
			}
		}
		if n, err := CountRecords(p); c.err == "" && (err != nil || n != len(c.items)) {
			t.Errorf("%s: count %d, %v", c.name, n, err)
		}
	}
	p := filepath.Join(t.TempDir(), RecordsFile)
	os.WriteFile(p, []byte(whole), 0o644)
	full, _, _ := ReadRecords(p)
	slim, _, _ := ReadRecordsSlim(p)
	f, s := full[0], slim[0]
	if s.Prompts != nil || s.Calls[0].Reply != "" || s.Calls[0].Prompt != "" || s.Calls[0].Options != nil {
		t.Errorf("slim record keeps a transcript: %+v", s)
	}
	f.Prompts, f.Calls[0].Reply, f.Calls[0].Prompt, f.Calls[0].Options = nil, "", "", nil
	if fmt.Sprint(f) != fmt.Sprint(s) {
		t.Errorf("slim record lost more than the transcripts:\n%+v\n%+v", s, f)
	}
}

// DecodeRecords decodes a run's worth of records on every core, in order,
// and names the first record (as read) whose data does not decode.
func TestDecodeRecordsInOrder(t *testing.T) {
	recs := make([]Record, 1000)
	for i := range recs {
		recs[i] = Record{Item: fmt.Sprint("item", i), Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
	}
	type data struct{ N int }
	got, err := DecodeRecords[data](recs)
	if err != nil || len(got) != len(recs) {
		t.Fatalf("%d decoded, %v", len(got), err)
	}
	for i, d := range got {
		if d.N != i {
			t.Fatalf("record %d decoded as %d", i, d.N)
		}
	}
	recs[900].Data = json.RawMessage(`{"n":"x"}`)
	recs[700].Data = json.RawMessage(`{"n":`)
	if _, err := DecodeRecords[data](recs); err == nil || !strings.Contains(err.Error(), "record item700:") {
		t.Fatalf("damaged records 700 and 900: %v", err)
	}
}
