package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"halu/runner/rundir"
)

// TestBenchMergeReport times `halu merge` of four shards holding 100,000
// records in all (HALU_BENCH_MERGE_RECORDS), then `halu report` of the
// merged run, each with its peak RSS, as separate processes of a halu
// built for the measurement. The shards are real smoke runs (the fake
// server) whose records are repeated under new item ids, as a run of that
// many items would hold. Run by make bench-shards; skipped otherwise.
func TestBenchMergeReport(t *testing.T) {
	total, _ := strconv.Atoi(os.Getenv("HALU_BENCH_MERGE_RECORDS"))
	if total <= 0 {
		t.Skip("make bench-shards runs it (HALU_BENCH_MERGE_RECORDS=100000)")
	}
	bin := filepath.Join(t.TempDir(), "halu")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	f := verdictFake(t)
	dir := t.TempDir()
	const n = 4
	var shards []string
	for i := 1; i <= n; i++ {
		d := filepath.Join(dir, fmt.Sprintf("s%d", i))
		r := halu(t, f, t.TempDir(), "run", "smoke", "--models", "gen,gen2", "--judges", "judge", "--shard", fmt.Sprintf("%d/%d", i, n), "--out", d)
		if r.code != exitOK {
			t.Fatalf("shard %d: %s", i, r.stderr)
		}
		inflate(t, d, total/n, i)
		shards = append(shards, d)
	}
	merged := filepath.Join(dir, "merged")
	wall, rss := measure(t, bin, append(append([]string{"merge"}, shards...), "--out", merged)...)
	fmt.Printf("merge of %d records (4 shards): %.2f s, peak RSS %.0f MB\n", total, wall.Seconds(), rss)
	wall, rss = measure(t, bin, "report", merged, "--html", filepath.Join(dir, "r.html"))
	fmt.Printf("report --html of the merged run: %.2f s, peak RSS %.0f MB\n", wall.Seconds(), rss)
	st, _ := os.Stat(filepath.Join(merged, rundir.RecordsFile))
	fmt.Printf("records.jsonl of the merged run: %.0f MB\n", float64(st.Size())/1e6)
}

// inflate repeats the records of the shard run in d, under new item ids,
// until it holds want of them, and makes its manifest count them.
func inflate(t *testing.T, d string, want, shard int) {
	p := filepath.Join(d, rundir.RecordsFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	if len(lines) == 0 {
		t.Fatalf("%s: no records", d)
	}
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(out)
	for k := range want {
		var rec map[string]any
		json.Unmarshal(lines[k%len(lines)], &rec)
		rec["item"] = fmt.Sprintf("%v#%d-%06d", rec["item"], shard, k)
		line, _ := json.Marshal(rec)
		w.Write(append(line, '\n'))
	}
	w.Flush()
	out.Close()
	m, err := rundir.ReadManifest(d)
	if err != nil {
		t.Fatal(err)
	}
	m.Counts.Items, m.Counts.Completed = want, want
	if err := rundir.WriteManifest(d, m); err != nil {
		t.Fatal(err)
	}
}

// measure runs bin with args and returns its wall time and peak RSS (MB).
func measure(t *testing.T, bin string, args ...string) (time.Duration, float64) {
	cmd := exec.Command(bin, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("halu %v: %v\n%s", args, err, errb.String())
	}
	wall := time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return wall, float64(ru.Maxrss) / 1024 // KiB on Linux
}
