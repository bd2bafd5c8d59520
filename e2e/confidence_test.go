//go:build e2e

package e2e

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"halu/runner/engine"
)

// confidenceRows are the rows of the summary's model-side confidence table
// as printed.
func confidenceRows(out string) []string {
	var rows []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "Model-side confidence checked against"):
			in = true
		case in && (strings.TrimSpace(l) == "" || strings.HasPrefix(l, "note:")):
			return rows
		case in:
			rows = append(rows, l)
		}
	}
	return rows
}

// TestConfidenceAgainstTruth runs the model-side confidence scores on the
// real server: the judge's confidence (its replies' token log-probabilities,
// --logprobs) checked against people's labels by judges validate, and a
// hypo run's against TruthHypo's gold relations. The tiny model's numbers
// mean nothing; the pipeline is real: Ollama's log-probabilities, the
// cache, AUROC with its interval. A cached rerun makes no call
// and prints the same figures; the dry run plans exactly the calls the run
// makes (log-probabilities add none).
func TestConfidenceAgainstTruth(t *testing.T) {
	srv := server(t, t.TempDir())
	importTiny(t, srv.Host, "1", "tj")
	work := t.TempDir()
	cache := filepath.Join(work, "cache")
	validate := []string{"judges", "validate", "--judges", "tj", "--limit", "30", "--judge-format", "json", "--judge-max-tokens", "120", "--logprobs", "5", "--cache", cache}

	plan := mustHalu(t, srv.Host, append(validate, "--dry-run")...)
	first := mustHalu(t, srv.Host, append(validate, "--out", filepath.Join(work, "jv1"))...)
	// The judge's replies are held to a schema (--judge-format json): the
	// server reports the unconstrained model's log-probabilities, so no
	// token score of them is checked against people; each is counted as
	// held, and P(verdict) is shown only for the replies whose verdict
	// token's alternatives hold the value read (not known otherwise,
	// counted).
	rows := confidenceRows(first.stdout)
	if held := regexp.MustCompile(`(?m)^tj\s+30\s+0\s+30\s+\d+\s+\d+\s+\d+\s*$`); !held.MatchString(first.stdout) {
		t.Errorf("judges validate does not count its 30 replies held to a schema:\n%s", first.stdout)
	}
	for _, r := range rows {
		if strings.Contains(r, "token log-prob") || strings.Contains(r, "top-k entropy") {
			t.Errorf("a token score of replies held to a schema was checked: %s", r)
		}
	}
	t.Logf("judge confidence against people's labels:\n%s", strings.Join(rows, "\n"))
	if !regexp.MustCompile(`total\s+30\s+0\s`).MatchString(plan.stdout) {
		t.Errorf("the dry run does not plan the run's 30 calls (none cached):\n%s", plan.stdout)
	}
	if !strings.Contains(first.stdout, "model calls 30,") {
		t.Errorf("the run made other than the 30 planned calls:\n%s", lastLines(first.stdout, 4))
	}
	again := mustHalu(t, srv.Host, append(validate, "--out", filepath.Join(work, "jv2"))...)
	if !strings.Contains(again.stdout, "model calls 0, cache hits 30") {
		t.Errorf("the cached rerun called the server:\n%s", lastLines(again.stdout, 4))
	}
	if got := confidenceRows(again.stdout); strings.Join(got, "\n") != strings.Join(rows, "\n") {
		t.Errorf("the cached rerun's figures differ:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(rows, "\n"))
	}
	// Without --logprobs the replies cached with them do not answer: the
	// cache key says what was asked.
	plain := mustHalu(t, srv.Host, "judges", "validate", "--judges", "tj", "--limit", "30", "--judge-format", "json", "--judge-max-tokens", "120", "--cache", cache, "--dry-run")
	if !regexp.MustCompile(`total\s+30\s+0\s`).MatchString(plain.stdout) {
		t.Errorf("a run not asking for log-probabilities is planned from replies cached with them:\n%s", plain.stdout)
	}

	// The same through the server's OpenAI-compatible API (as vLLM or
	// llama-server would serve it): its log-probabilities read from the
	// stream's chunks.
	v1 := mustHalu(t, srv.Host, "--backend", "openai=http://"+srv.Host+"/v1", "judges", "validate", "--judges", "tj", "--limit", "30", "--judge-format", "json",
		"--judge-max-tokens", "120", "--logprobs", "5", "--cache", filepath.Join(work, "cache-v1"), "--out", filepath.Join(work, "jv-v1"))
	if !regexp.MustCompile(`(?m)^tj\s+30\s+0\s+30\s+\d+\s+[1-9]\d*\s+\d+\s*$`).MatchString(v1.stdout) {
		t.Errorf("through /v1: the log-probabilities of the stream's chunks are not counted:\n%s", v1.stdout)
	}

	// hic: each answer's token confidence against the panel's verdict,
	// and its question's answers sorted into semantic sets by entailment
	// calls (--entailment), planned by the dry run: 2 questions × 3·2/2
	// (no repair turns: they are not planned).
	hicArgs := []string{"run", "hic", "--models", "tj", "--judges", "tj", "--embed-model", "tj", "--questions", "1,11", "--answers", "3",
		"--judge-format", "json", "--max-tokens", "40", "--judge-max-tokens", "120", "--logprobs", "5", "--entailment", "tj", "--p-true", "--judge-repairs", "0", "--cache", cache}
	hp := mustHalu(t, srv.Host, append(hicArgs, "--dry-run")...)
	planned := regexp.MustCompile(`(?m)^tj\s+entailment\s+judge\s+(\d+)\s`).FindStringSubmatch(hp.stdout)
	plannedPTrue := regexp.MustCompile(`(?m)^tj\s+p-true\s+chat\s+(\d+)\s`).FindStringSubmatch(hp.stdout)
	// The tiny model cannot answer the entailment prompt: that stage read
	// nothing, which the run says (exit 4), measuring the rest.
	hr := halu(t, srv.Host, append(hicArgs, "--out", filepath.Join(work, "hic"))...)
	if hr.code != 0 && (hr.code != 4 || !strings.Contains(hr.stderr, "part of the run measured nothing: stage entailment")) {
		t.Fatalf("hic: exit %d\n%s", hr.code, hr.stderr)
	}
	hcrows := strings.Join(confidenceRows(hr.stdout), "\n")
	if !regexp.MustCompile(`mean token log-prob\s+\d+\s+\d+\s+\d+\s+(– \(one class only\)|– \(the same score|[01]\.\d{3} (\[|\(no interval))`).MatchString(hcrows) {
		t.Errorf("hic's confidence table:\n%s", hcrows)
	}
	made, madePTrue := 0, 0
	_, recs, err := engine.ReadRun(filepath.Join(work, "hic"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		for _, c := range r.Calls {
			switch c.Stage {
			case "entailment":
				made++
			case "p-true":
				madePTrue++
			}
		}
	}
	if plannedPTrue == nil || plannedPTrue[1] != "6" || madePTrue != 6 || !strings.Contains(hr.stdout, "P(True) (--p-true") {
		t.Errorf("P(True) calls: planned %v, made %d (want 6, 6: one an answer)\n%s", plannedPTrue, madePTrue, hp.stdout)
	}
	if planned == nil || planned[1] != "6" || made != 6 || !strings.Contains(hr.stdout, "semantic sets (--entailment tj") {
		t.Errorf("entailment calls: planned %v, made %d (want 6, 6: no two answers shared a meaning)\n%s", planned, made, hp.stdout)
	}
	t.Logf("hic, answers' confidence against the panel:\n%s", hcrows)

	// hypo: the greedy hypothesis's token confidence and its candidates'
	// semantic entropy and agreement (labels: exact equality), against the
	// gold relation. The tiny model writes no TruthHypo label of itself;
	// held to the task's labels by structured output (--hypothesis-format
	// labels, a departure named in the run) it states one in every reply,
	// right on some items and wrong on others: AUROC with its interval.
	// Log-probabilities and the agreement add no call: the dry run plans
	// the 10 × 3 items' greedy and 2 candidates, 90 calls; a cached rerun
	// makes none and prints the same rows.
	hypoArgs := []string{"run", "hypo", "--models", "tj", "--setting", "parametric", "--limit", "10", "--candidates", "2",
		"--max-tokens", "80", "--logprobs", "5", "--hypothesis-format", "labels", "--cache", cache}
	hyPlan := mustHalu(t, srv.Host, append(hypoArgs, "--dry-run")...)
	if !regexp.MustCompile(`total\s+90\s+0\s`).MatchString(hyPlan.stdout) {
		t.Errorf("hypo's dry run does not plan its 90 calls:\n%s", hyPlan.stdout)
	}
	hy := mustHalu(t, srv.Host, append(hypoArgs, "--out", filepath.Join(work, "hy"))...)
	hrows := confidenceRows(hy.stdout)
	// The samples' agreement needs no log-probability: AUROC with its
	// interval. The greedy reply is held to the labels by a grammar: its
	// token scores (the unconstrained model's) are not checked.
	if !regexp.MustCompile(regexp.QuoteMeta("− semantic entropy (samples; discrete, Farquhar et al. 2024; ÷ ln k)") + `\s+30\s+0\s+\d+\s+[01]\.\d{3} \[[01]\.\d{3}, [01]\.\d{3}\]`).MatchString(strings.Join(hrows, "\n")) {
		t.Errorf("hypo's semantic entropy: no AUROC with its interval:\n%s", strings.Join(hrows, "\n"))
	}
	if strings.Contains(strings.Join(hrows, "\n"), "mean token log-prob") {
		t.Errorf("hypo checked the token scores of replies held to a grammar:\n%s", strings.Join(hrows, "\n"))
	}
	if !strings.Contains(hy.stdout, "model calls 90,") || !strings.Contains(hy.stdout, "--hypothesis-format labels (paper: free)") {
		t.Errorf("hypo made other than its 90 planned calls, or does not name its departure:\n%s", hy.stdout)
	}
	hyAgain := mustHalu(t, srv.Host, append(hypoArgs, "--out", filepath.Join(work, "hy2"))...)
	if !strings.Contains(hyAgain.stdout, "model calls 0, cache hits 90") || strings.Join(confidenceRows(hyAgain.stdout), "\n") != strings.Join(hrows, "\n") {
		t.Errorf("hypo's cached rerun:\n%s", hyAgain.stdout)
	}
	// The same figures are rows of the long export, with n and interval.
	long := filepath.Join(work, "hy-long.csv")
	mustHalu(t, srv.Host, "report", filepath.Join(work, "hy"), "--long", long)
	b, err := os.ReadFile(long)
	if err != nil {
		t.Fatal(err)
	}
	longRows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range longRows {
		// run, suite, model, group, metric, key, estimate, lo, hi, n, …
		if r[4] == "AUROC (− semantic entropy (samples; discrete, Farquhar et al. 2024; ÷ ln k))" && r[6] != "" && r[7] != "" && r[8] != "" && r[9] == "30" {
			found = true
		}
	}
	if !found {
		t.Errorf("the long export has no AUROC row of the semantic entropy with its interval and n 30:\n%s", b)
	}
	t.Logf("hypo, the greedy hypothesis's confidence against the gold relation:\n%s", strings.Join(hrows, "\n"))
}
