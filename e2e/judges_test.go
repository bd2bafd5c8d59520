//go:build e2e

package e2e

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"halu/runner/engine"
)

// TestJudgesValidate: `halu judges validate` on the real server, two tiny
// judges (numbers meaningless, pipeline real) over a sample of the shipped
// HaluEval set and of a FELM file read from its path; the figures reach
// the report, and a rerun is served from the cache.
func TestJudgesValidate(t *testing.T) {
	srv := server(t, t.TempDir())
	importTiny(t, srv.Host, "1", "tiny")
	importTiny(t, srv.Host, "2", "tiny2")
	work := t.TempDir()
	args := []string{"judges", "validate", "--judges", "tiny,tiny2", "--limit", "6", "--judge-max-tokens", "80", "--judge-format", "json",
		"--cache", filepath.Join(work, "cache")}
	r := mustHalu(t, srv.Host, append(args, "--out", filepath.Join(work, "he"))...)
	for _, want := range []string{"Can these judges be trusted?", "panel majority", "HaluEval general", "6 of its 4507 units drawn", "Krippendorff"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, r.stdout)
		}
	}
	m, recs, err := engine.ReadRun(filepath.Join(work, "he"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 6 || m.Status != "complete" || m.Counts.ModelCalls == 0 {
		t.Fatalf("%d records, status %s, %d calls", len(recs), m.Status, m.Counts.ModelCalls)
	}
	rep := mustHalu(t, "", "report", filepath.Join(work, "he"), "--md")
	if !strings.Contains(rep.stdout, "Can these judges be trusted?") || !strings.Contains(rep.stdout, "Cohen's κ") {
		t.Errorf("report lacks the validation table:\n%s", rep.stdout)
	}
	again := mustHalu(t, srv.Host, append(args, "--out", filepath.Join(work, "he2"))...)
	m2, _, _ := engine.ReadRun(filepath.Join(work, "he2"))
	if m2.Counts.ModelCalls != 0 {
		t.Errorf("rerun made %d model calls\n%s", m2.Counts.ModelCalls, again.stdout)
	}
	// People's labels of the run's own texts: a sheet, filled in, read
	// back; the report shows the judges' accuracy and corrected figures.
	he := filepath.Join(work, "he")
	// JSON mode: the server's grammar makes even the tiny model state a
	// readable verdict, so there are judged units to label.
	mustHalu(t, "", "judges", "sheet", he, "--n", "4")
	b, err := os.ReadFile(filepath.Join(he, "labels", "sheet.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("sheet: %d rows, %v", len(rows), err)
	}
	for i := range rows[1:] {
		rows[i+1][len(rows[0])-1] = []string{"yes", "no"}[i%2]
	}
	var out strings.Builder
	csv.NewWriter(&out).WriteAll(rows)
	lf := filepath.Join(work, "labels.csv")
	os.WriteFile(lf, []byte(out.String()), 0o644)
	im := mustHalu(t, "", "judges", "import", he, lf)
	if !strings.Contains(im.stdout, "corrected for its judges' errors") {
		t.Errorf("import:\n%s", im.stdout)
	}
	rep = mustHalu(t, "", "report", he, "--md")
	if !strings.Contains(rep.stdout, "on this run's own texts") {
		t.Errorf("report lacks the imported labels:\n%s", rep.stdout)
	}
	// FELM (CC BY-NC-SA) is not shipped: read from $HALU_SHARED where it
	// is, else this part is skipped, and says so.
	felm := filepath.Join(os.Getenv("HALU_SHARED"), "data", "judge-validation", "felm_science.jsonl")
	if _, err := os.Stat(felm); err != nil {
		t.Logf("SKIPPED the FELM set: %s is not here (FELM is CC BY-NC-SA and not shipped; set HALU_SHARED to a folder that holds it)", felm)
		return
	}
	// The tiny judge cannot write HIC-Bench's one-line verdict: every
	// reply is unscored, and a validation that measured nothing exits 4,
	// saying so, with the set read and its summary printed.
	r = halu(t, srv.Host, "judges", "validate", "--judges", "tiny", "--set", felm, "--limit", "4", "--judge-max-tokens", "24",
		"--cache", filepath.Join(work, "cache"), "--out", filepath.Join(work, "felm"))
	if r.code != 4 || !strings.Contains(r.stderr, "nothing measured") {
		t.Errorf("a validation whose every reply went unread: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "FELM") || !strings.Contains(r.stdout, "4 of its") {
		t.Errorf("FELM run summary:\n%s", r.stdout)
	}
}
