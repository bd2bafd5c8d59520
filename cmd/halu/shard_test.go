package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/runner"
)

// --shard 1/2 and --shard 2/2, then halu merge, give the tables of the run
// not split; merge refuses what is not the shards of one run.
func TestShardsMergeToTheWholeRun(t *testing.T) {
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if strings.HasPrefix(r.Model, "gen") {
			return fakeollama.Reply{Content: "Measure salt in cloud droplets with drones over a season.\n\nA second answer, after a blank line."}
		}
		// Verdicts that vary with the answer judged and the seed.
		v := len(r.LastUser())%5 + 1
		h := "No"
		if v%2 == 0 {
			h = "Yes"
		}
		return fakeollama.Reply{Content: fmt.Sprintf("Originality: %d Feasibility: %d Value: %d Hallucination: %s", v, 6-v, v, h)}
	}, fakeollama.Model{Name: "gen:latest", Digest: "dg", ParameterCount: 1e9}, fakeollama.Model{Name: "judge:latest", Digest: "dj", ParameterCount: 1e9},
		fakeollama.Model{Name: "judge2:latest", Digest: "dj2", ParameterCount: 1e9})
	t.Cleanup(srv.Close)
	f := &fakeServer{Server: srv, byKind: map[string]int{}}
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
	_, rw, _ := runner.ReadRun(whole)
	m1, r1, _ := runner.ReadRun(shards[0])
	_, r2, _ := runner.ReadRun(shards[1])
	if m1.Shard == nil || m1.Shard.I != 1 || len(r1)+len(r2) != len(rw) || len(r1) == 0 || len(r2) == 0 {
		t.Fatalf("shard 1 %+v: %d and %d records of %d", m1.Shard, len(r1), len(r2), len(rw))
	}
	merged := filepath.Join(dir, "merged")
	r := halu(t, f, t.TempDir(), append([]string{"merge"}, append(shards, "--out", merged, "--fail-under", "ifs=-1")...)...)
	if r.code != exitOK {
		t.Fatalf("merge: exit %d: %s", r.code, r.stderr)
	}
	sw, _ := runner.ReadSummary(whole)
	sm, _ := runner.ReadSummary(merged)
	if sup := sw.Support["gen/scp/T1.ifs"]; sup.N == 0 {
		t.Fatalf("nothing scored in the whole run: %+v", sw.Support)
	}
	if fmt.Sprint(sw.Tables) != fmt.Sprint(sm.Tables) || fmt.Sprint(sw.Metrics) != fmt.Sprint(sm.Metrics) {
		t.Fatalf("tables differ:\nwhole  %v\nmerged %v", sw.Tables, sm.Tables)
	}
	mw, _ := runner.ReadManifest(whole)
	mm, _ := runner.ReadManifest(merged)
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
	for _, tc := range []struct {
		dirs []string
		want string
	}{
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
