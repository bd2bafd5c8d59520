//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"halu/runner/engine"
	"halu/runner/hypo"
)

// TestHypo: TruthHypo on the real server with the tiny model — all four
// knowledge settings over a real PubMed index and the BioRED KG fixture,
// KnowHD against kg, lit and kg+lit, 5 items per task, 2 sampled candidates
// for the selection comparison.
func TestHypo(t *testing.T) {
	srv, logPath := serverWithLog(t, t.TempDir())
	importTiny(t, srv.Host, "1", "tiny")
	work := t.TempDir()
	ix, kg := filepath.Join(work, "ix"), filepath.Join(work, "kg")
	mustHalu(t, srv.Host, "index", "build", "--out", ix, "../testdata/pubmed/pubmedqa_contexts.jsonl", "../testdata/pubmed/biopython/pubmed5.xml")
	mustHalu(t, srv.Host, "kg", "import", "--out", kg, "../testdata/kg/biored_train_sample.pubtator", "../testdata/kg/pubtator3.37026113_240614.pubtator")
	// The paper's literature prompts show 32 documents: the tiny model's
	// 2,048-token window cannot hold them, and a default run says so before
	// its first generation.
	refused := filepath.Join(work, "refused")
	if r := halu(t, srv.Host, "run", "hypo", "--models", "tiny", "--setting", "lit", "--index", ix, "--limit", "1", "--tasks", "chem-gene",
		"--max-tokens", "40", "--cache", filepath.Join(work, "cache"), "--out", refused); r.code != 2 ||
		!strings.Contains(r.stderr, "tiny's trained context is 2048 tokens") || !strings.Contains(r.stderr, "--knowledge-fit drop") {
		t.Errorf("a default literature run on a 2,048-token model: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(refused, "records.jsonl")); err == nil {
		if _, recs, _ := engine.ReadRun(refused); len(recs) > 0 {
			t.Errorf("the refused run recorded %d items", len(recs))
		}
	}
	// With --knowledge-fit drop (a named departure) it runs, leaving out
	// what does not fit. The tiny model writes neither a hypothesis the
	// paper's prompt asks for nor the verifier's "1"/"0": the run measured
	// nothing, and says so (exit 4); what it left out to fit is what this
	// test checks.
	r := halu(t, srv.Host, "run", "hypo", "--models", "tiny", "--setting", "parametric,kg,lit,kg+lit",
		"--index", ix, "--kg", kg, "--limit", "5", "--knowhd", "kg,lit,kg+lit", "--verifier", "self", "--candidates", "2", "--knowledge-fit", "drop",
		"--max-tokens", "40", "--verifier-max-tokens", "48", "--cache", filepath.Join(work, "cache"), "--out", filepath.Join(work, "run"))
	if r.code != 0 && (r.code != 4 || !strings.Contains(r.stderr, "measured nothing")) {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"TruthHypo Table 2 layout", "Table 3 layout", "Fig. 4 layout", "unparseable"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	m, recs, err := engine.ReadRun(filepath.Join(work, "run"))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 60 || m.Status != "complete" {
		t.Fatalf("%d records (want 4 settings × 15 items), status %s", len(recs), m.Status)
	}
	// The test's own caps depart from the authors' values, and say so.
	var deps []string
	for _, d := range m.Departures {
		deps = append(deps, d.String())
	}
	if m.Protocol != "paper" || strings.Join(deps, "; ") != "--max-tokens 40 (paper: 2048); --candidates 2 (paper: 5); --verifier-max-tokens 48 (paper: 2048); --knowledge-fit drop (paper: all)" {
		t.Errorf("protocol %q, departures %q", m.Protocol, deps)
	}
	if len(m.Sample) != 15 {
		t.Errorf("the manifest lists %d drawn items, want 15", len(m.Sample))
	}
	// Retrieved knowledge is fitted to the tiny model's 2,048-token window:
	// every literature item records documents kept and dropped, and the
	// server never cut a prompt.
	kept, dropped, fromChains, fromNodes := 0, 0, 0, 0
	for _, rec := range recs {
		var r hypo.Result
		if err := json.Unmarshal(rec.Data, &r); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r.Setting, "lit") {
			f := r.Knowledge.Fit
			if f.DocsKept != len(r.Knowledge.PMIDs) || f.Overflow {
				t.Errorf("%s: fit %+v with %d documents in the prompt", rec.Item, f, len(r.Knowledge.PMIDs))
			}
			kept, dropped = kept+f.DocsKept, dropped+f.DocsDropped
		}
		switch r.Knowledge.KGSource {
		case "chains":
			fromChains++
		case "nodes":
			fromNodes++
		}
	}
	if dropped == 0 {
		t.Errorf("no document was dropped to fit a 2,048-token window (kept %d)", kept)
	}
	t.Logf("literature items: %d documents kept, %d dropped to fit the window; KG items: %d with chains, %d with the nodes' own edges", kept, dropped, fromChains, fromNodes)
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), "truncating input prompt"); n > 0 {
		t.Errorf("the server truncated %d prompts", n)
	}
	t.Logf("model calls %d, unscored judgements %d", m.Counts.ModelCalls, m.Counts.JudgeFailures)
}
