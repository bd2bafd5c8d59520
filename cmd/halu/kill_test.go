package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"halu/runner/engine"
	"halu/runner/rundir"
)

// TestMain lets a test run this package's binary as halu itself
// (asHalu), so that it can be killed like the real one.
func TestMain(m *testing.M) {
	if os.Getenv("HALU_TEST_AS_HALU") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	// The judge card's checks add calls to a run's counts; the tests of
	// other things count calls without them (the card's tests give
	// --judge-checks).
	os.Setenv("HALU_JUDGE_CHECKS", "0")
	os.Exit(m.Run())
}

// asHalu is halu with args as a process of its own, started in dir.
func asHalu(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HALU_TEST_AS_HALU=1")
	return cmd
}

// files reads every regular file under dir, by path relative to dir.
func files(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			out[rel] = b
		}
		return nil
	})
	return out
}

// killAt starts cmd and kills it (SIGKILL) at one of two kinds of moment:
// on even i, at a random time up to about the command's whole duration;
// on odd i, a random instant (up to 2 ms) after changed first reports that
// the command has begun to write — the moments a non-atomic writer leaves
// a file cut short.
func killAt(t *testing.T, i int, cmd *exec.Cmd, whole time.Duration, changed func() bool) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if i%2 == 0 {
		time.Sleep(time.Duration(rand.Int64N(int64(whole + whole/10))))
	} else {
		for deadline := time.Now().Add(10 * whole); !changed() && time.Now().Before(deadline); {
			time.Sleep(100 * time.Microsecond)
		}
		time.Sleep(time.Duration(rand.Int64N(int64(2 * time.Millisecond))))
	}
	cmd.Process.Kill()
	cmd.Wait()
}

// A kill -9 at 20 moments of halu report leaves each output file either
// as it was or whole as the new report has it, every time; what the
// killed writers left is removed by the next report.
func TestKilledReportLeavesOldOrNewFiles(t *testing.T) {
	runs, err := filepath.Glob("../../testdata/runs-v1/*/manifest.json")
	if err != nil || len(runs) < 5 {
		t.Fatalf("runs: %v %v", runs, err)
	}
	var all []string
	for _, m := range runs {
		abs, _ := filepath.Abs(filepath.Dir(m))
		all = append(all, abs)
	}
	outs := []string{"--html", "report.html", "--samples", "samples.jsonl", "--long", "figures.csv", "--csv", "tables"}
	report := func(dir string, runs []string) {
		t.Helper()
		if out, err := asHalu(dir, append(append([]string{"report"}, runs...), outs...)...).CombinedOutput(); err != nil {
			t.Fatalf("report: %v\n%s", err, out)
		}
	}
	// The report there before (of one run), and the new one (of all).
	oldDir, newDir := t.TempDir(), t.TempDir()
	report(oldDir, all[:1])
	start := time.Now()
	report(newDir, all)
	whole := time.Since(start)
	old, fresh := files(t, oldDir), files(t, newDir)

	work := t.TempDir()
	outcomes := map[string]int{}
	for i := 0; i < 20; i++ {
		os.RemoveAll(work)
		os.MkdirAll(work, 0o755)
		for p, b := range old {
			os.MkdirAll(filepath.Dir(filepath.Join(work, p)), 0o755)
			os.WriteFile(filepath.Join(work, p), b, 0o644)
		}
		killAt(t, i, asHalu(work, append(append([]string{"report"}, all...), outs...)...), whole, func() bool {
			entries, _ := os.ReadDir(work)
			for _, e := range entries {
				info, err := e.Info()
				if err == nil && e.Type().IsRegular() && (old[e.Name()] == nil || info.Size() != int64(len(old[e.Name()]))) {
					return true
				}
			}
			return false
		})
		// The CSV directory is the old tables or the new ones, whole.
		tables := func(m map[string][]byte) string {
			var names []string
			for p := range m {
				if strings.HasPrefix(p, "tables"+string(filepath.Separator)) {
					names = append(names, p)
				}
			}
			sort.Strings(names)
			return strings.Join(names, ",")
		}
		if got := tables(files(t, work)); got != tables(old) && got != tables(fresh) {
			t.Errorf("kill %d: tables/ holds %s: neither the old tables nor the new ones", i+1, got)
		}
		for p, b := range files(t, work) {
			switch {
			case strings.Contains(p, ".tmp-"):
				outcomes["temporary file left (swept next time)"]++
			case old[p] != nil && bytes.Equal(b, old[p]):
				outcomes["as it was"]++
			case fresh[p] != nil && bytes.Equal(b, fresh[p]):
				outcomes["new, whole"]++
			default:
				t.Errorf("kill %d: %s is neither the old file nor the new one (%d bytes; old %d, new %d)", i+1, p, len(b), len(old[p]), len(fresh[p]))
			}
		}
	}
	t.Logf("report (%s clean), files after 20 kills: %v", whole.Round(time.Millisecond), outcomes)
	report(work, all)
	if got := files(t, work); len(got) != len(fresh) {
		t.Errorf("after a report that finished, %d files where the new report has %d (temporary files not swept?)", len(got), len(fresh))
	}
	for p, b := range files(t, work) {
		if !bytes.Equal(b, fresh[p]) {
			t.Errorf("after a report that finished, %s is not the new report's (temporary files not swept?)", p)
		}
	}
}

// A kill -9 at 20 moments of halu merge leaves no merged run or the whole
// one, every time; the next merge removes what a killed one left.
func TestKilledMergeLeavesNoRunOrAWholeOne(t *testing.T) {
	f := verdictFake(t)
	args := []string{"run", "hic", "--models", "gen", "--judges", "judge,judge2", "--embed-model", "gen", "--questions", "1,11,21", "--answers", "2", "--strategy", "scp,dhp"}
	dir := t.TempDir()
	var shards []string
	for i := 1; i <= 2; i++ {
		d := filepath.Join(dir, fmt.Sprintf("s%d", i))
		if r := halu(t, f, t.TempDir(), append(args, "--shard", fmt.Sprintf("%d/2", i), "--out", d)...); r.code != exitOK {
			t.Fatalf("shard %d: exit %d: %s", i, r.code, r.stderr)
		}
		shards = append(shards, d)
	}
	_, r1, _ := engine.ReadRun(shards[0])
	_, r2, _ := engine.ReadRun(shards[1])
	merge := func(out string) *exec.Cmd {
		return asHalu(dir, append(append([]string{"merge"}, shards...), "--out", out)...)
	}
	start := time.Now()
	if out, err := merge(filepath.Join(dir, "clean")).CombinedOutput(); err != nil {
		t.Fatalf("merge: %v\n%s", err, out)
	}
	whole := time.Since(start)

	out := filepath.Join(dir, "merged")
	outcomes := map[string]int{}
	for i := 0; i < 20; i++ {
		os.RemoveAll(out)
		killAt(t, i, merge(out), whole, func() bool {
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".merged") || e.Name() == "merged" {
					return true
				}
			}
			return false
		})
		entries, err := os.ReadDir(out)
		switch {
		case err != nil || len(entries) == 0:
			outcomes["no merged run"]++
		default:
			m, recs, err := engine.ReadRun(out)
			_, serr := os.Stat(filepath.Join(out, "summary.json"))
			if err != nil || m.Status != "complete" || len(recs) != len(r1)+len(r2) || serr != nil {
				t.Errorf("kill %d: a merged run that is not whole: %v, %d of %d records, summary %v", i+1, err, len(recs), len(r1)+len(r2), serr)
			} else {
				outcomes["whole"]++
			}
		}
	}
	t.Logf("merge (%s clean) after 20 kills: %v", whole.Round(time.Millisecond), outcomes)
	os.RemoveAll(out)
	if b, err := merge(out).CombinedOutput(); err != nil {
		t.Fatalf("merge after the kills: %v\n%s", err, b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, rundir.TempPrefix(out)+"*")); len(left) > 0 {
		t.Errorf("a finished merge left %v", left)
	}
}
