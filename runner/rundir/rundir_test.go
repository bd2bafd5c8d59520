package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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
		slim := func(p string) ([]Record, int64, error) {
			var recs []Record
			good, err := ReadRecordPlaces(p, -1, func(r *Record, at RecordPlace) error {
				if at.Item != r.Item {
					t.Errorf("the place of %s names %s", r.Item, at.Item)
				}
				recs = append(recs, *r)
				return nil
			})
			return recs, good, err
		}
		for _, read := range []func(string) ([]Record, int64, error){ReadRecords, slim} {
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
	slim, _ := RecordsIn(p).Sorted()
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

// A slim read (RecordsIn, ReadRecordPlaces) leaves out the
// transcripts and nothing else: a record with every field set, written
// and read back, is the whole record read with only its prompts, each
// call's reply and options (and, without keepHash, its prompt's hash)
// taken out. A field added to Record or CallLog that the slim decoding
// does not carry fails here.
func TestSlimDecodingKeepsEveryOtherField(t *testing.T) {
	var rec Record
	fillAll(t, reflect.ValueOf(&rec).Elem(), "r")
	rec.Format = FormatVersion
	if rec.Prompts == nil || rec.Calls[0].Reply == "" || rec.Calls[0].Options == nil || rec.Calls[0].Prompt == "" {
		t.Fatal("the record is not filled")
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), RecordsFile)
	if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	whole, _, err := ReadRecords(p)
	if err != nil || len(whole) != 1 {
		t.Fatalf("%v, %d records", err, len(whole))
	}
	slimOf := func(keepHash bool) Record {
		var r Record
		json.Unmarshal(b, &r) // a copy of whole[0]
		r.Prompts = nil
		for i := range r.Calls {
			r.Calls[i].Reply, r.Calls[i].Options = "", nil
			if !keepHash {
				r.Calls[i].Prompt = ""
			}
		}
		return r
	}
	if !reflect.DeepEqual(whole[0], rec) {
		t.Fatalf("the whole record does not read back:\n%+v\n%+v", whole[0], rec)
	}
	slim, err := RecordsIn(p).Sorted()
	if err != nil || len(slim) != 1 || !reflect.DeepEqual(slim[0], slimOf(false)) {
		t.Errorf("RecordsIn (%v):\n%+v\nwant\n%+v", err, slim, slimOf(false))
	}
	var at []Record
	var places []RecordPlace
	_, err = ReadRecordPlaces(p, -1, func(r *Record, pl RecordPlace) error {
		at, places = append(at, *r), append(places, pl)
		return nil
	})
	if err != nil || len(at) != 1 || !reflect.DeepEqual(at[0], slimOf(true)) || places[0].N != len(b)+1 {
		t.Errorf("ReadRecordPlaces (%v):\n%+v\nwant\n%+v", err, at, slimOf(true))
	}
}

// fillAll sets every field of v that JSON carries to a value that is not
// its zero, naming strings after their path.
func fillAll(t *testing.T, v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(path)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(len(path)))
	case reflect.Float64:
		v.SetFloat(float64(len(path)) / 8)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(t, v.Elem(), path)
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage(nil)) {
			v.SetBytes([]byte(`{"n":1}`))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillAll(t, v.Index(0), path+"0")
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		if e.Kind() == reflect.Interface {
			e.Set(reflect.ValueOf(path))
		} else {
			fillAll(t, e, path+"v")
		}
		m.SetMapIndex(reflect.ValueOf(path+"k"), e)
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			fillAll(t, v.Field(i), path+"."+f.Name)
		}
	default:
		t.Fatalf("%s: fill a %s", path, v.Kind())
	}
}

// Records read from a records file come in the file's order, each time
// they are ranged over; Sorted and DecodeSorted put them in item order
// (one item's in the file's order); a loop that stops early stops the
// reading without an error; a damaged line is the ranging's error, named.
func TestRecordsInAFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), RecordsFile)
	var body strings.Builder
	for i, item := range []string{"c", "a", "b", "a"} {
		fmt.Fprintf(&body, "{\"format\":%d,\"item\":%q,\"data\":{\"n\":%d},\"calls\":[{\"stage\":\"s\",\"kind\":\"chat\",\"model\":\"m\",\"digest\":\"d\",\"key\":\"k\",\"reply\":\"long\"}],\"prompts\":{\"h\":\"p\"}}\n", FormatVersion, item, i)
	}
	os.WriteFile(p, []byte(body.String()), 0o644)
	rs := RecordsIn(p)
	for range 2 {
		var items []string
		for r := range rs.All() {
			items = append(items, r.Item)
			if r.Prompts != nil || r.Calls[0].Reply != "" {
				t.Errorf("a record read with its transcripts: %+v", r)
			}
		}
		if rs.Err() != nil || strings.Join(items, "") != "caba" {
			t.Errorf("read %v, %v; want the file's order", items, rs.Err())
		}
	}
	sorted, err := rs.Sorted()
	var got []string
	for _, r := range sorted {
		got = append(got, fmt.Sprint(r.Item, string(r.Data)))
	}
	if err != nil || strings.Join(got, " ") != `a{"n":1} a{"n":3} b{"n":2} c{"n":0}` {
		t.Errorf("sorted %v, %v", got, err)
	}
	type n struct{ N int }
	ns, err := DecodeSorted(rs, func(v *n) { v.N *= 2 })
	if err != nil || fmt.Sprint(ns) != "[{2} {6} {4} {0}]" {
		t.Errorf("decoded %v, %v", ns, err)
	}
	if rs.End() != int64(body.Len()) {
		t.Errorf("end %d after a whole reading, want %d", rs.End(), body.Len())
	}
	for range rs.All() {
		break
	}
	if rs.Err() != nil || rs.End() != -1 {
		t.Errorf("a loop that stopped: %v, end %d", rs.Err(), rs.End())
	}
	// Another reading up to where a whole one ended reads what it read,
	// whatever was appended since.
	rs.Sorted()
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "{\"format\":%d,\"item\":\"z\",\"data\":{}}\n", FormatVersion)
	f.Close()
	count := func(size int64) (int, error) {
		n := 0
		_, err := ReadRecordPlaces(p, size, func(*Record, RecordPlace) error { n++; return nil })
		return n, err
	}
	upTo, err := count(rs.End())
	all, _ := count(-1)
	if err != nil || upTo != 4 || all != 5 {
		t.Errorf("up to the end read: %d records (%v), the whole file %d; want 4, 5", upTo, err, all)
	}
	lines := strings.SplitAfter(body.String(), "\n")
	os.WriteFile(p, []byte(lines[0]+"{oops\n"+lines[1]), 0o644)
	if _, err := rs.Sorted(); err == nil || !strings.Contains(err.Error(), RecordsFile+":2: damaged record") {
		t.Errorf("damaged: %v", err)
	}
	os.WriteFile(p, []byte(lines[0]+`{"format":1,"item":"x","data":"not a number"}`+"\n"), 0o644)
	if _, err := DecodeSorted[n](rs, nil); err == nil || !strings.Contains(err.Error(), "record x") {
		t.Errorf("undecodable: %v", err)
	}
}

// MapRecords makes its records as they are ranged over, each through f,
// and stops with the error of a record that does not decode.
func TestMapRecords(t *testing.T) {
	type n struct{ N int }
	rs := RecordsOf([]Record{{Item: "a", Data: json.RawMessage(`{"N":1}`)}, {Item: "b", Data: json.RawMessage(`{"N":2}`)}})
	m := MapRecords(rs, func(v *n) { v.N *= 10 })
	got, err := DecodeSorted[n](m, nil)
	if err != nil || fmt.Sprint(got) != "[{10} {20}]" {
		t.Errorf("mapped %v, %v", got, err)
	}
	bad := MapRecords(RecordsOf([]Record{{Item: "a", Data: json.RawMessage(`{"N":"x"}`)}}), func(v *n) {})
	if _, err := bad.Sorted(); err == nil || !strings.Contains(err.Error(), "record a") {
		t.Errorf("undecodable: %v", err)
	}
}
