package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/runner/engine"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// --shard 1/2 and --shard 2/2, then halu merge, give the tables of the run
// not split; merge refuses what is not the shards of one run.
func TestShardsMergeToTheWholeRun(t *testing.T) {
	f := verdictFake(t)
	dir := t.TempDir()
	args := []string{"run", "hic", "--models", "gen", "--judges", "judge,judge2", "--embed-model", "gen", "--questions", "1,11,21", "--answers", "2", "--strategy", "scp,dhp"}
	whole := filepath.Join(dir, "whole")
	if r := halu(t, f, t.TempDir(), append(args, "--out", whole)...); r.code != exitOK {
		t.Fatalf("whole: exit %d: %s", r.code, r.stderr)
	}
	var shards []string
	for i := 1; i <= 2; i++ {
		d := filepath.Join(dir, fmt.Sprintf("s%d", i))
		// Each shard on its own cache, as on its own machine.
		if r := halu(t, f, t.TempDir(), append(args, "--shard", fmt.Sprintf("%d/2", i), "--out", d)...); r.code != exitOK {
			t.Fatalf("shard %d: exit %d: %s", i, r.code, r.stderr)
		}
		shards = append(shards, d)
	}
	_, rw, _ := engine.ReadRun(whole)
	m1, r1, _ := engine.ReadRun(shards[0])
	_, r2, _ := engine.ReadRun(shards[1])
	if m1.Shard == nil || m1.Shard.I != 1 || len(r1)+len(r2) != len(rw) || len(r1) == 0 || len(r2) == 0 {
		t.Fatalf("shard 1 %+v: %d and %d records of %d", m1.Shard, len(r1), len(r2), len(rw))
	}
	merged := filepath.Join(dir, "merged")
	r := halu(t, f, t.TempDir(), append([]string{"merge"}, append(shards, "--out", merged, "--fail-under", "ifs=-1")...)...)
	if r.code != exitOK {
		t.Fatalf("merge: exit %d: %s", r.code, r.stderr)
	}
	// The merged records are the whole run's, byte for byte, in item order.
	sortedLines := func(dir string) string {
		b, _ := os.ReadFile(filepath.Join(dir, rundir.RecordsFile))
		ls := strings.SplitAfter(string(b), "\n")
		slices.SortStableFunc(ls, func(a, b string) int {
			var ra, rb rundir.Record
			json.Unmarshal([]byte(a), &ra)
			json.Unmarshal([]byte(b), &rb)
			return strings.Compare(ra.Item, rb.Item)
		})
		return strings.Join(ls, "")
	}
	if got, _ := os.ReadFile(filepath.Join(merged, rundir.RecordsFile)); string(got) != sortedLines(whole) || len(got) == 0 {
		t.Fatalf("merged records are not the whole run's in item order:\n%s\nwhole, sorted:\n%s", got, sortedLines(whole))
	}
	sw, _ := summary.ReadSummary(whole)
	sm, _ := summary.ReadSummary(merged)
	if sup := sw.Support["gen/scp/T1.ifs"]; sup.N == 0 {
		t.Fatalf("nothing scored in the whole run: %+v", sw.Support)
	}
	// The judge card's cost table holds the seconds each run's sessions
	// took: wall-clock time, not a measurement the merge must reproduce.
	noCost := func(ts []summary.Table) []summary.Table {
		return slices.DeleteFunc(slices.Clone(ts), func(t summary.Table) bool { return t.Title == summary.CardCostTitle })
	}
	if fmt.Sprint(noCost(sw.Tables)) != fmt.Sprint(noCost(sm.Tables)) || fmt.Sprint(sw.Metrics) != fmt.Sprint(sm.Metrics) {
		t.Fatalf("tables differ:\nwhole  %v\nmerged %v", sw.Tables, sm.Tables)
	}
	mw, _ := rundir.ReadManifest(whole)
	mm, _ := rundir.ReadManifest(merged)
	if mm.Counts.Items != mw.Counts.Items || mm.Counts.Completed != len(rw) || len(mm.MergedFrom) != 2 || mm.Shard != nil || len(mm.Sessions) != 2 {
		t.Fatalf("merged manifest: counts %+v, from %v, sessions %d", mm.Counts, mm.MergedFrom, len(mm.Sessions))
	}
	// The merged run reads as any run.
	if x := halu(t, f, t.TempDir(), "report", merged, "--md"); x.code != exitOK || !strings.Contains(x.stdout, "IFS") {
		t.Fatalf("report of the merged run: exit %d: %s", x.code, x.stderr)
	}
	if x := halu(t, f, t.TempDir(), "compare", whole, merged); x.code != exitOK {
		t.Fatalf("compare with the merged run: exit %d: %s", x.code, x.stderr)
	}

	other := filepath.Join(dir, "other2")
	if r := halu(t, f, t.TempDir(), append(args, "--shard", "2/2", "--seed", "9", "--out", other)...); r.code != exitOK {
		t.Fatalf("other: exit %d: %s", r.code, r.stderr)
	}
	// Shard 2 as a halu that split by the list's own order wrote it: it
	// holds other items than a seeded shard 2.
	legacy := filepath.Join(dir, "legacy2")
	if err := os.CopyFS(legacy, os.DirFS(shards[1])); err != nil {
		t.Fatal(err)
	}
	ml, _ := rundir.ReadManifest(legacy)
	ml.Shard.Seed = 0
	if err := rundir.WriteManifest(legacy, ml); err != nil {
		t.Fatal(err)
	}
	// Shard 2 asked for log-probabilities: its records carry confidence
	// the other shard's lack.
	withLogprobs := filepath.Join(dir, "logprobs2")
	if r := halu(t, f, t.TempDir(), append(args, "--shard", "2/2", "--logprobs", "2", "--out", withLogprobs)...); r.code != exitOK {
		t.Fatalf("logprobs shard: exit %d: %s", r.code, r.stderr)
	}
	// Shard 2 holding a record of shard 1's too.
	dup := filepath.Join(dir, "dup2")
	if err := os.CopyFS(dup, os.DirFS(shards[1])); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(filepath.Join(shards[0], rundir.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	line := first[:bytes.IndexByte(first, '\n')+1]
	f2, err := os.OpenFile(filepath.Join(dup, rundir.RecordsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f2.Write(line)
	f2.Close()
	var one struct{ Item string }
	json.Unmarshal(line, &one)
	// Shard 1 holding one of its records twice.
	twice := filepath.Join(dir, "twice1")
	if err := os.CopyFS(twice, os.DirFS(shards[0])); err != nil {
		t.Fatal(err)
	}
	f1, err := os.OpenFile(filepath.Join(twice, rundir.RecordsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f1.Write(line)
	f1.Close()
	// Shard 2 holding a record whose calls are not a list: refused as
	// damaged, naming the shard's file, before anything is written.
	damaged := filepath.Join(dir, "damaged2")
	if err := os.CopyFS(damaged, os.DirFS(shards[1])); err != nil {
		t.Fatal(err)
	}
	var bad map[string]any
	json.Unmarshal(line, &bad)
	bad["item"], bad["calls"] = "zz-extra", "oops"
	badLine, _ := json.Marshal(bad)
	rest, err := os.ReadFile(filepath.Join(damaged, rundir.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	// First, not last: a last line that does not decode is read as one
	// cut short by a crash, and left out.
	if err := os.WriteFile(filepath.Join(damaged, rundir.RecordsFile), append(append(badLine, '\n'), rest...), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "m")
	if r := halu(t, f, t.TempDir(), "merge", shards[0], damaged, "--out", out); r.code == exitOK || !strings.Contains(r.stderr, filepath.Join(damaged, rundir.RecordsFile)+":1: damaged record") {
		t.Errorf("merge with a damaged record: exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused merge left %s (%v)", out, err)
	}
	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{[]string{shards[0], dup}, fmt.Sprintf("item %s is in %s and in %s", one.Item, shards[0], dup)},
		{[]string{twice, shards[1]}, fmt.Sprintf("item %s is in %s and in %s", one.Item, twice, twice)},
		{[]string{shards[0], legacy}, "items ordered by shard seed 1 vs 0"},
		{[]string{shards[0], withLogprobs}, "engine settings: --logprobs 0 vs 2"},
		{[]string{shards[0]}, "shard 2/2 missing"},
		{[]string{shards[0], shards[0]}, "shard 1/2 is both"},
		{[]string{shards[0], other}, "differ: configuration"},
		{[]string{shards[0], whole}, "is not a shard"},
	} {
		r := halu(t, f, t.TempDir(), append([]string{"merge"}, append(tc.dirs, "--out", filepath.Join(t.TempDir(), "m"))...)...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("merge %v: exit %d, want %q: %s", tc.dirs, r.code, tc.want, r.stderr)
		}
	}
	// A dry run of a shard plans its items only.
	d := halu(t, f, t.TempDir(), append(args, "--shard", "2/2", "--dry-run")...)
	if d.code != exitOK || !strings.Contains(d.stdout, fmt.Sprintf("plan: %d items", len(r2))) {
		t.Fatalf("dry run of a shard: exit %d\n%s%s", d.code, d.stdout, d.stderr)
	}
}

// verdictFake answers generations with two answers and judges with HIC
// verdicts that vary with the text judged, so runs have scored units.
func verdictFake(t *testing.T) *fakeServer {
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if strings.HasPrefix(r.Model, "gen") {
			// gen2 says a little more: its verdicts move.
			extra := ""
			if strings.HasPrefix(r.Model, "gen2") {
				extra = " More."
			}
			return fakeollama.Reply{Content: "Measure salt in cloud droplets with drones over a season." + extra + "\n\nA second answer, after a blank line."}
		}
		// Verdicts that vary with the answer judged.
		v := len(r.LastUser())%5 + 1
		h := "No"
		if v%2 == 0 {
			h = "Yes"
		}
		return fakeollama.Reply{Content: fmt.Sprintf("Originality: %d Feasibility: %d Value: %d Hallucination: %s", v, 6-v, v, h)}
	}, fakeollama.Model{Name: "gen:latest", Digest: "dg", ParameterCount: 1e9}, fakeollama.Model{Name: "judge:latest", Digest: "dj", ParameterCount: 1e9},
		fakeollama.Model{Name: "judge2:latest", Digest: "dj2", ParameterCount: 1e9},
		fakeollama.Model{Name: "gen2:latest", Digest: "dg2", ParameterCount: 1e9})
	t.Cleanup(srv.Close)
	f := &fakeServer{Server: srv, byKind: map[string]int{}}
	return f
}

// compare --json writes numbers as numbers and null for what could not be
// computed; compare RUN --models A,B compares two models of one run.
func TestCompareJSONAndModelsOfOneRun(t *testing.T) {
	f := verdictFake(t)
	run := filepath.Join(t.TempDir(), "run")
	if r := halu(t, f, t.TempDir(), "run", "hic", "--models", "gen,gen2", "--judges", "judge", "--embed-model", "gen", "--questions", "1,11,21,31", "--answers", "2", "--strategy", "scp", "--out", run); r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	r := halu(t, f, t.TempDir(), "compare", run, "--models", "gen,gen2", "--json")
	if r.code != exitOK {
		t.Fatalf("compare: exit %d: %s", r.code, r.stderr)
	}
	var doc struct {
		A, B        string
		Comparisons []struct {
			Metric string
			ModelA string `json:"model_a"`
			ModelB string `json:"model_b"`
			N      int
			Diff   struct{ Estimate, Lo, Hi *float64 }
			Tests  []struct {
				Name string
				P    *float64
			}
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Comparisons) == 0 {
		t.Fatalf("JSON %v:\n%s", err, r.stdout)
	}
	// The two models' answers differ on some questions: every metric has
	// its 4 paired questions, a difference with its interval and tests.
	for _, c := range doc.Comparisons {
		if c.N != 4 || c.Diff.Estimate == nil || c.Diff.Lo == nil || len(c.Tests) == 0 || c.ModelA != "gen:latest" && c.ModelA != "gen" {
			t.Errorf("comparison %+v", c)
		}
	}
	// The same run against itself: differences 0, tests undefined (no
	// variance) and so absent, never a made-up p.
	same := halu(t, f, t.TempDir(), "compare", run, run, "--json")
	if same.code != exitOK || strings.Contains(same.stdout, "NaN") || !strings.Contains(same.stdout, `"estimate": 0`) {
		t.Fatalf("a run against itself: exit %d\n%s%s", same.code, same.stdout, same.stderr)
	}
	if !strings.Contains(doc.A, "(gen)") || !strings.Contains(doc.B, "(gen2)") {
		t.Errorf("names %q %q", doc.A, doc.B)
	}
	if x := halu(t, f, t.TempDir(), "compare", run, "--models", "gen,nope"); x.code != exitUsage || !strings.Contains(x.stderr, "no outcome of model nope") {
		t.Errorf("unknown model: exit %d: %s", x.code, x.stderr)
	}
}
