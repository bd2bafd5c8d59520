//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"halu/localmodels"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// Two real Ollama servers on two loopback ports, the tiny model on both: a
// run with --ollama a,b spreads its calls over both (counted per server in
// the manifest); killing server a (SIGKILL, runners included) mid-run still
// completes the run on b, every item exactly once.
func TestPoolOfTwoServers(t *testing.T) {
	a, b := server(t, t.TempDir()), server(t, t.TempDir())
	importTiny(t, a.Host, "1", "ta", "tb", "tc")
	importTiny(t, b.Host, "1", "ta", "tb", "tc")
	// What the pool compares: the weights files' content digests, read
	// from each real server's Modelfile, are the same on both.
	var infos []localmodels.ModelInfo
	for _, h := range []string{a.Host, b.Host} {
		c, err := localmodels.New(h, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(context.Background(), "ta")
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, info)
	}
	t.Logf("ta on a: digest %s, blobs %s; on b: digest %s, blobs %s", infos[0].Digest, infos[0].Blobs, infos[1].Digest, infos[1].Blobs)
	if !strings.HasPrefix(infos[0].Blobs, "sha256:") || infos[0].Blobs != infos[1].Blobs || infos[0].DefaultsSHA256 != infos[1].DefaultsSHA256 {
		t.Fatalf("the same GGUF on two servers: blobs %q and %q, defaults %s and %s", infos[0].Blobs, infos[1].Blobs, infos[0].DefaultsSHA256, infos[1].DefaultsSHA256)
	}
	pool := a.Host + "," + b.Host
	work := t.TempDir()

	spread := filepath.Join(work, "spread")
	mustHalu(t, pool, "--parallel", "1", "--cache", filepath.Join(work, "c1"), "run", "smoke", "--models", "ta", "--judges", "ta",
		"--max-tokens", "60", "--out", spread)
	m, err := rundir.ReadManifest(spread)
	if err != nil {
		t.Fatal(err)
	}
	ha, hb := m.Counts.Hosts[a.Host], m.Counts.Hosts[b.Host]
	t.Logf("spread: %d calls on a, %d on b", ha.Calls, hb.Calls)
	if ha.Calls == 0 || hb.Calls == 0 || ha.Calls+hb.Calls != m.Counts.ModelCalls {
		t.Fatalf("calls per server %+v, %d calls in all", m.Counts.Hosts, m.Counts.ModelCalls)
	}

	dir := filepath.Join(work, "killed")
	cmd := exec.Command(haluBin, "--ollama", pool, "--num-thread", numThread(), "--parallel", "1", "--retries", "4",
		"--cache", filepath.Join(work, "c2"), "run", "smoke", "--models", "ta,tb,tc", "--judges", "ta", "--max-tokens", "200", "--out", dir)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for lines(filepath.Join(dir, "records.jsonl")) < 1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	before := lines(filepath.Join(dir, "records.jsonl"))
	a.Kill()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run with server a killed: %v\n%s%s", err, so.String(), se.String())
	}
	items := countItems(t, dir)
	m, _ = rundir.ReadManifest(dir)
	t.Logf("killed a after %d of 15 records; calls per server %+v\n%s", before, m.Counts.Hosts, lastLines(se.String(), 3))
	if len(items) != 15 || m.Status != "complete" {
		t.Fatalf("%d items, status %s", len(items), m.Status)
	}
	for id, n := range items {
		if n != 1 {
			t.Fatalf("item %s recorded %d times", id, n)
		}
	}
	if before == 15 {
		t.Skip("the run finished before server a was killed")
	}
	// b took calls; a's failure is said whenever a call met it (the pool
	// may route every later call to b, prompts being warm there, and then
	// no call meets a's death: that is no failure to say).
	ha = m.Counts.Hosts[a.Host]
	if m.Counts.Hosts[b.Host].Calls == 0 {
		t.Fatalf("no call went to b:\n%s", se.String())
	}
	if ha.Failures+ha.Unavailable > 0 && !strings.Contains(se.String(), "server "+a.Host+" failed") {
		t.Fatalf("a's failure (%+v) was not said:\n%s", ha, se.String())
	}
	if ha.Failures+ha.Unavailable == 0 {
		t.Logf("no call met a after it was killed: every later call went to b")
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// hic split with --shard 1/2 and --shard 2/2 (each on its own cache, as on
// its own machine), then halu merge, gives the tables of the run not
// split, against the real server.
func TestShardsAndMerge(t *testing.T) {
	srv := server(t, t.TempDir())
	importTiny(t, srv.Host, "1", "ta")
	work := t.TempDir()
	args := []string{"run", "hic", "--models", "ta", "--judges", "ta", "--embed-model", "ta", "--questions", "1,11,21", "--answers", "2",
		"--strategy", "scp,dhp", "--judge-format", "json", "--max-tokens", "40", "--judge-max-tokens", "160"}
	whole := filepath.Join(work, "whole")
	mustHalu(t, srv.Host, append([]string{"--cache", filepath.Join(work, "c0")}, append(args, "--out", whole)...)...)
	var shards []string
	for i := 1; i <= 2; i++ {
		d := filepath.Join(work, "shard"+string(rune('0'+i)))
		mustHalu(t, srv.Host, append([]string{"--cache", filepath.Join(work, "c"+string(rune('0'+i)))}, append(args, "--shard", string(rune('0'+i))+"/2", "--out", d)...)...)
		shards = append(shards, d)
	}
	merged := filepath.Join(work, "merged")
	r := mustHalu(t, srv.Host, append(append([]string{"merge"}, shards...), "--out", merged)...)
	sw, _ := summary.ReadSummary(whole)
	sm, err := summary.ReadSummary(merged)
	if err != nil || len(sw.Tables) == 0 {
		t.Fatalf("summaries: %v\n%s", err, r.stdout)
	}
	for i := range sw.Tables {
		if measured(sw.Tables[i]) != measured(sm.Tables[i]) {
			t.Errorf("table %q differs:\nwhole  %v\nmerged %v", sw.Tables[i].Title, sw.Tables[i].Rows, sm.Tables[i].Rows)
		}
	}
	t.Logf("%d tables equal; merged: %s", len(sw.Tables), lastLines(r.stdout, 1))
}

// measured is a table as text, or "" for the judge card's cost table: its
// seconds are each run's wall-clock time, not a measurement two runs of
// the same calls share.
func measured(tb summary.Table) string {
	if tb.Title == summary.CardCostTitle {
		return ""
	}
	return fmt.Sprint(tb)
}
