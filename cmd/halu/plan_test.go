package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/runner/engine"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// A dry run of intent, hypo and cfaith plans, per stage, the calls the run
// then makes on well-formed replies: intent's constraint scoring (which
// follows a readable mapping), hypo's per-claim checks (planned at the
// authors' cap of 10 claims, said under the plan: exact when the
// decomposer lists 10, an upper bound when it lists fewer) and one
// tokenizer calibration per model, which the run makes even though its
// progress estimate planned first (it once kept the plan's stand-in ratio
// and never measured).
func TestDryRunCountsReplyDependentCalls(t *testing.T) {
	var mu sync.Mutex
	claims := 10
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		u := r.LastUser()
		switch {
		case strings.Contains(u, "advanced linguist") && len(r.Format) > 0:
			return fakeollama.Reply{Content: `{"clarification":false,"constraints":[{"priority":"mandatory","component":"Subject","text":"Subject must be the thing asked"},{"priority":"optional","component":"Qualifiers","text":"Qualifiers should be concise"}]}`}
		case strings.Contains(u, "Given a query and a response") && len(r.Format) > 0:
			var vs []string
			for i := 1; i <= strings.Count(u, "\n["); i++ {
				vs = append(vs, fmt.Sprintf(`"constraint_%d":true`, i))
			}
			return fakeollama.Reply{Content: `{` + strings.Join(vs, ",") + `}`}
		case strings.Contains(u, "advanced linguist"):
			return fakeollama.Reply{Content: "START:\nMandatory: Subject must be the thing asked\nOptional: Qualifiers should be concise"}
		case strings.Contains(u, "Given a query and a response"):
			mand, imp, opt := strings.Count(u, "] Mandatory:"), strings.Count(u, "] Important:"), strings.Count(u, "] Optional:")
			return fakeollama.Reply{Content: fmt.Sprintf("START:\nMandatory: %d/%d\nImportant: %d/%d\nOptional: %d/%d", mand, mand, imp, imp, opt, opt)}
		case strings.Contains(u, "was never provided"):
			return fakeollama.Reply{Content: "Mentions missing: No\nInvents missing: Yes\nOn task: Yes"}
		case strings.Contains(u, "scale from 1 to 10"):
			return fakeollama.Reply{Content: "Score: 6"}
		case strings.Contains(u, "factual content"):
			return fakeollama.Reply{Content: "Factual inaccuracies: Yes\nMissing required facts: No"}
		case strings.Contains(u, "Extract key entities"):
			return fakeollama.Reply{Content: `{"entities": ["Chemical cyclopamine (MESH:C000541)", "Gene Shh (103046459)"]}`}
		case strings.Contains(u, "Summarize the statement"):
			mu.Lock()
			defer mu.Unlock()
			var cs []string
			for i := 1; i <= claims; i++ {
				cs = append(cs, fmt.Sprintf("%q", fmt.Sprintf("Claim %d about Shh.", i)))
			}
			return fakeollama.Reply{Content: `{"claims": [` + strings.Join(cs, ", ") + `]}`}
		case strings.Contains(u, "Judge if the given information"):
			return fakeollama.Reply{Content: `{"groundness": 1}`}
		case strings.Contains(u, "[Conflict check]"):
			return fakeollama.Reply{Content: `{"conflict": true}`}
		case strings.Contains(u, "four possible options"):
			return fakeollama.Reply{Content: "A"}
		case strings.Contains(u, "a question and an answer"):
			return fakeollama.Reply{Content: "True"}
		case strings.Contains(u, "proposed_hypothesis"):
			return fakeollama.Reply{Content: "Reasoning.\n```json\n{\"proposed_hypothesis\": \"negative_correlate\"}\n```"}
		}
		return fakeollama.Reply{Content: "snow falls soft on quiet hills tonight"}
	}, panelModels()...)
	t.Cleanup(srv.Close)
	f := &fakeServer{Server: srv, byKind: map[string]int{}}
	ix := filepath.Join(t.TempDir(), "ix")
	if r := halu(t, f, t.TempDir(), "index", "build", "--out", ix, "../../testdata/pubmed/pubmedqa_contexts.jsonl"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	kg := filepath.Join(t.TempDir(), "kg")
	if r := halu(t, f, t.TempDir(), "kg", "import", "--out", kg, "../../testdata/kg/biored_train_sample.pubtator"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	hypo := []string{"--models", "gen", "--setting", "parametric,kg+lit", "--index", ix, "--kg", kg, "--limit", "1", "--knowhd", "lit,kg+lit", "--verifier", "self", "--knowledge-fit", "drop", "--candidates", "2"}
	for _, tc := range []struct {
		suite  string
		args   []string
		claims int
	}{
		{"intent", []string{"--models", "gen", "--judges", "j1", "--baseline-samples", "2", "--fact-samples", "2"}, 0},
		{"intent", []string{"--models", "gen", "--judges", "j1", "--protocol", "halu", "--map-samples", "3"}, 0},
		{"hypo", hypo, 10},
		{"hypo", hypo, 3},
		{"cfaith", []string{"--data", "../../testdata/cfaith/sample_en", "--models", "gen", "--judges", "j1"}, 0},
	} {
		mu.Lock()
		claims = tc.claims
		mu.Unlock()
		planned, made, plan := planAndRun(t, f, tc.suite, tc.args)
		t.Logf("%s %d claims: planned %v, made %v", tc.suite, tc.claims, planned, made)
		if tc.claims == 0 || tc.claims == 10 {
			if fmt.Sprint(planned) != fmt.Sprint(made) {
				t.Errorf("%s %v: planned %v, made %v", tc.suite, tc.args, planned, made)
			}
			continue
		}
		// Fewer claims than the cap: per-claim stages are planned high,
		// the rest exactly, and the plan says what it assumed.
		for stage, n := range made {
			perClaim := stage == "verify" || stage == "entities"
			if perClaim && planned[stage] <= n || !perClaim && planned[stage] != n {
				t.Errorf("%s %d claims: stage %s planned %d, made %d", tc.suite, tc.claims, stage, planned[stage], n)
			}
		}
		if !strings.Contains(plan, "Assumed: hypo: per-claim calls (verify; entities for KG sources) are planned at 10 claims per statement") {
			t.Errorf("the plan does not say what it assumed:\n%s", plan)
		}
	}
}

// checkMetricNames fails t when the summary of the run in dir has a metric
// whose last part its suite does not declare: a gate on it would be refused
// before the run (summary.CheckGateNames).
func checkMetricNames(t *testing.T, dir string) {
	t.Helper()
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	def, _ := findSuite(m.Suite)
	s, err := def.Build(m.Config, m.Format)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := summary.ReadSummary(dir)
	if err != nil || len(sum.Metrics) == 0 {
		t.Fatalf("%s: summary %v, %v", dir, sum, err)
	}
	if u := summary.UndeclaredMetrics(s.MetricNames(), sum); len(u) > 0 {
		t.Errorf("%s: metrics its MetricNames do not name: %v", m.Suite, u)
	}
}

// planAndRun runs suite with args twice on fresh caches — a dry run, then
// the run — and returns the calls per stage the plan counts, those the
// run's records log, and the plan as printed. The run's metric names are
// checked against its suite's (checkMetricNames).
func planAndRun(t *testing.T, f *fakeServer, suite string, args []string) (planned, made map[string]int, plan string) {
	t.Helper()
	cache, out := t.TempDir(), filepath.Join(t.TempDir(), "run")
	args = append([]string{"run", suite}, args...)
	dry := halu(t, f, cache, append(args, "--dry-run")...)
	if dry.code != exitOK {
		t.Fatalf("%v --dry-run: exit %d: %s", args, dry.code, dry.stderr)
	}
	planned = map[string]int{}
	for _, l := range strings.Split(dry.stdout, "\n") {
		fs := strings.Fields(l)
		if len(fs) == 7 && fs[0] != "model" && fs[0] != "total" {
			n, _ := strconv.Atoi(fs[3])
			if fs[1] == "calibrate" {
				// The window's token calibration: a call the run makes
				// before its items, outside every record.
				continue
			}
			planned[fs[1]] += n
		}
	}
	if r := halu(t, f, cache, append(args, "--out", out)...); r.code != exitOK {
		t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
	}
	checkMetricNames(t, out)
	_, recs, _ := engine.ReadRun(out)
	made = map[string]int{}
	for _, rec := range recs {
		for _, c := range rec.Calls {
			made[c.Stage]++
		}
	}
	return planned, made, dry.stdout
}

// A dry run after a run finds every call of the run in the cache, those
// built on an earlier reply included: a judge's request holds the answer,
// so the plan must build it from the cached answer, as the run will.
func TestDryRunAfterRunFindsEveryCallCached(t *testing.T) {
	f := newFake(t)
	cache := t.TempDir()
	args := []string{"run", "smoke", "--models", "gen", "--judges", "judge", "--limit", "3"}
	if r := halu(t, f, cache, append(args, "--out", filepath.Join(t.TempDir(), "run"))...); r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	r := halu(t, f, cache, append(args, "--dry-run")...)
	if r.code != exitOK {
		t.Fatalf("dry run: exit %d: %s", r.code, r.stderr)
	}
	if got := strings.Join(strings.Fields(r.stdout), " "); !strings.Contains(got, "total 0 6") {
		t.Errorf("dry run after the run should find its 6 calls cached:\n%s", r.stdout)
	}
}
