package hypo

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"halu/index"
	"halu/index/kg"
	"halu/localmodels/fakeollama"
	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/engine/enginetest"
	"halu/runner/rundir"
	"halu/runner/setting"
	"halu/runner/summary"
)

func TestPromptRenderingPerSetting(t *testing.T) {
	p := LoadPrompts()
	if p.System != "You are a scientist. Your task is to generate a scientific hypothesis following given instructions." {
		t.Fatalf("system %q", p.System)
	}
	tail := "\n\nYour output must include two sections:\n1. **### Step-by-step Reasoning**:\n- Think step-by-step to derive the hypothesis.\n\n" +
		"2. **### Structured Output**:\n- Present your proposed hypothesis in the following JSON format:\n  ```json\n  {\n      \"proposed_hypothesis\": \"Statement of the proposed hypothesis\"\n  }\n  ```"
	vals := map[string]string{"background": "BG?", "document": "[Title: T] A.", "knowledge": "K1"}
	want := map[string]string{
		"parametric": "### User Input\nBG?" + tail,
		"kg":         "### Relevant Knowledge\nK1\n\n### User Input\nBG?" + tail,
		"lit":        "### Relevant Documents\n[Title: T] A.\n\n### User Input\nBG?" + tail,
		"kg+lit":     "### Relevant Documents\n[Title: T] A.\n\n### Relevant Knowledge\nK1\n\n### User Input\nBG?" + tail,
	}
	for st, w := range want {
		if got := fill(p.User[st], vals); got != w {
			t.Errorf("%s:\n got %q\nwant %q", st, got, w)
		}
	}
	v := fill(p.Verify["kg+lit"], map[string]string{"document_text": "D", "edge_text": "E", "claim": "C"})
	if v != "### Relevant Documents\nD\n\n### Relevant Knowledge\nE\n\n### Claim\nC\n\nJudge if the given information supports the claim. Output {\"groundness\": 1} if the materials support the claim else {\"groundness\": 0}." {
		t.Errorf("verify prompt %q", v)
	}
	if !strings.HasPrefix(fill(p.Decompose, map[string]string{"claims": "S"}), "### Statement\nS\n\n Summarize the statement as a list of claims") {
		t.Errorf("decompose %q", p.Decompose)
	}
}

func TestEdgeSentence(t *testing.T) {
	e := kg.Edge{Head: "Chemical|MESH:D005947", Tail: "Gene|3630", Relation: "associate"}
	if got := EdgeSentence(nil, e); got != `Chemical MESH:D005947 (MESH:D005947) has the relation "associate" with Gene 3630 (3630)` {
		t.Fatalf("%q", got)
	}
}

// A statement that is a label word for word reads, by the shortcut, as the
// words' reading reads it: every task's every label.
func TestBareLabelReadsAsItsWords(t *testing.T) {
	for task, rel := range Tasks {
		labels := Labels(rel)
		for _, s := range append(slices.Clone(labels), "positive_correlate ", "not stimulate", "inhibit", "no_relation", "stimulates") {
			gl, gok := HypothesisLabel(s, labels)
			wl, wok := readLabel(s, labels)
			if gl != wl || gok != wok {
				t.Errorf("%s: %q reads as %q %v, its words as %q %v", task, s, gl, gok, wl, wok)
			}
		}
		if _, ok := bareLabel(labels[0], labels); !ok {
			t.Errorf("%s: %q is not read as a bare label", task, labels[0])
		}
	}
	// A label with another within it is no bare label.
	if _, ok := bareLabel("no_relation_x", []string{"no_relation_x", "no_relation"}); ok {
		t.Error("a label holding another read as bare")
	}
}

func TestParseHypothesisLabels(t *testing.T) {
	cg := Labels("Chemical & Gene")
	dg := Labels("Disease & Gene")
	tests := []struct {
		out    string
		labels []string
		label  string
		ok     bool
	}{
		{"reasoning\n```json\n{\"proposed_hypothesis\": \"cyclopamine negative_correlate Shh\"}\n```", cg, "negative_correlate", true},
		{"```json\n{\"proposed_hypothesis\": \"X has a positive correlate with Y\"}```", cg, "positive_correlate", true},
		{"```json\n{\"proposed_hypothesis\": \"There is no relation between them\"}```", cg, "no_relation", true},
		{"```json\n{\"proposed_hypothesis\": \"The disease may stimulate expression\"}```", dg, "stimulate", true},
		// Ambiguous: two labels.
		{"```json\n{\"proposed_hypothesis\": \"stimulate or inhibit\"}```", dg, "", false},
		// None.
		{"```json\n{\"proposed_hypothesis\": \"they are linked\"}```", cg, "", false},
		// Broken JSON, key still readable.
		{`... "proposed_hypothesis": "A inhibit B" ...`, dg, "inhibit", true},
		{"no json at all", dg, "", false},
	}
	for _, tt := range tests {
		_, label, ok := ParseHypothesis(tt.out, tt.labels)
		if label != tt.label || ok != tt.ok {
			t.Errorf("ParseHypothesis(%q) = %q, %v; want %q, %v", tt.out, label, ok, tt.label, tt.ok)
		}
	}
}

func TestSplitSentencesFallback(t *testing.T) {
	got := SplitSentences("### Step-by-step Reasoning\nGene A binds receptor B. It is short.\nOk.\n```json\n{\"proposed_hypothesis\": \"x\"}\n```")
	// The heading has two words, "Ok." one: both too short to be claims.
	if len(got) != 2 || got[0] != "Gene A binds receptor B." || got[1] != "It is short." {
		t.Fatalf("%q", got)
	}
}

// The authors' fallback: the statement's lines, blank ones left out, as
// they stand (a heading is a line too).
func TestSplitLinesFallback(t *testing.T) {
	got := SplitLines("### Step-by-step Reasoning\nGene A binds receptor B. It is short.\n\n  Ok.  \n")
	if len(got) != 3 || got[0] != "### Step-by-step Reasoning" || got[1] != "Gene A binds receptor B. It is short." || got[2] != "Ok." {
		t.Fatalf("%q", got)
	}
	if c := DefaultConfig(); c.ClaimFallback != "lines" {
		t.Errorf("paper protocol falls back to %q", c.ClaimFallback)
	}
}

func TestLoadTestItemsAndLabels(t *testing.T) {
	items, err := LoadTestItems("")
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2024 || items[0].XID != "Chemical|MESH:C000541" || items[0].Relation != "negative_correlate" {
		t.Fatalf("%d items, first %+v", len(items), items[0])
	}
	// Every gold label is one of its task's labels, as the question lists them.
	for _, it := range items {
		if !contains(Labels(it.RelType), it.Relation) {
			t.Fatalf("%+v: gold not among %v", it, Labels(it.RelType))
		}
		for _, l := range Labels(it.RelType) {
			if !strings.Contains(it.Question, "'"+l+"'") {
				t.Fatalf("question does not list %q: %s", l, it.Question)
			}
		}
	}
}

// TestRunWithStores drives every setting and KnowHD over a real index and KG
// built from test data, with a fake model: the PMID cutoff is strict, KG
// chains reach the prompt, groundedness is the share of supported claims and
// the majority vote ties break deterministically.
// TestRunWithStores runs twice: against a server that honours the JSON
// schemas, and against one that ignores format and answers the verifier's
// calls in text (bullets, "Groundness: 1"), read by the text fallback.
func TestRunWithStores(t *testing.T) {
	for _, ignoresFormat := range []bool{false, true} {
		runWithStores(t, ignoresFormat)
	}
}

func runWithStores(t *testing.T, ignoresFormat bool) {
	dir := t.TempDir()
	lit, err := index.OpenLiterature(filepath.Join(dir, "ix"), true)
	if err != nil {
		t.Fatal(err)
	}
	docs := filepath.Join(dir, "d.jsonl")
	os.WriteFile(docs, []byte(`{"pmid": 100, "title": "Cyclopamine inhibits Shh signalling", "abstract": "Cyclopamine blocks Shh."}
{"pmid": 36600000, "title": "Cyclopamine and Shh in 2023", "abstract": "Newer cyclopamine Shh work."}
`), 0o644)
	if _, err := lit.Build(context.Background(), []string{docs}, index.BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	lit.Close()
	kg, _ := kg.Open(filepath.Join(dir, "kg"), true)
	rel := filepath.Join(dir, "rel")
	os.WriteFile(rel, []byte("100\tNegative_Correlation\tChemical|MESH:C000541\tGene|X1\n101\tAssociation\tGene|X1\tGene|103046459\n40000000\tAssociation\tChemical|MESH:C000541\tGene|103046459\n"), 0o644)
	names := filepath.Join(dir, "names.tsv")
	os.WriteFile(names, []byte("id\tname\ttype\nMESH:C000541\tcyclopamine\tChemical\n103046459\tShh\tGene\nX1\tPTCH1\tGene\n"), 0o644)
	if _, err := kg.Import(context.Background(), []string{rel, names}); err != nil {
		t.Fatal(err)
	}
	kg.Close()

	var mu sync.Mutex
	var prompts []string
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		mu.Lock()
		defer mu.Unlock()
		u := r.LastUser()
		switch {
		case strings.Contains(u, "Extract key entities") && ignoresFormat:
			return fakeollama.Reply{Content: "Entities:\n- Chemical cyclopamine (MESH:C000541)\n- Gene Shh (103046459)"}
		case strings.Contains(u, "Extract key entities"):
			return fakeollama.Reply{Content: `{"entities": ["Chemical cyclopamine (MESH:C000541)", "Gene Shh (103046459)"]}`}
		case strings.Contains(u, "Summarize the statement") && ignoresFormat:
			return fakeollama.Reply{Content: "The claims are:\n1. Cyclopamine inhibits Shh.\n2. Shh is a gene.\n3. Claim three."}
		case strings.Contains(u, "Summarize the statement"):
			return fakeollama.Reply{Content: `{"claims": ["Cyclopamine inhibits Shh.", "Shh is a gene.", "Claim three."]}`}
		case strings.Contains(u, "Judge if the given information"):
			g := "0"
			if strings.Contains(u, "Cyclopamine inhibits Shh.") || strings.Contains(u, "Shh is a gene.") {
				g = "1"
			}
			if ignoresFormat {
				return fakeollama.Reply{Content: "**Groundness:** " + g}
			}
			return fakeollama.Reply{Content: `{"groundness": ` + g + `}`}
		default:
			prompts = append(prompts, u)
			label := "negative_correlate"
			if seed, _ := r.Options["seed"].(float64); seed == 1 {
				label = "positive_correlate"
			}
			return fakeollama.Reply{Content: "Reasoning.\n```json\n{\"proposed_hypothesis\": \"" + label + "\"}\n```"}
		}
	}, fakeollama.Model{Name: "m:latest", Digest: "d", ParameterCount: 1e9})
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Models, cfg.Knowledge, cfg.Index, cfg.KG = []string{"m"}, []string{"parametric", "kg", "lit", "kg+lit"}, filepath.Join(dir, "ix"), filepath.Join(dir, "kg")
	cfg.Tasks, cfg.Limit, cfg.KnowHD, cfg.Candidates, cfg.Verifier = []string{"chem-gene"}, 1, []string{"kg", "lit", "kg+lit"}, 2, VerifierSelf
	cfg.Sample = "first" // the file's first item: the stores hold its knowledge
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := enginetest.New(t, srv.Host(), 1)
	res, err := e.Run(context.Background(), s.Task(), engine.RunSpec{Dir: filepath.Join(dir, "run")})
	if err != nil {
		t.Fatal(err)
	}
	_, recs, _ := engine.ReadRun(res.Dir)
	for _, r := range recs {
		var rr Result
		json.Unmarshal(r.Data, &rr)
		if strings.Contains(rr.Setting, "lit") {
			// PMID 36600000 is not strictly below the cutoff.
			if len(rr.Knowledge.PMIDs) != 1 || rr.Knowledge.PMIDs[0] != 100 {
				t.Errorf("%s: PMIDs %v", rr.Setting, rr.Knowledge.PMIDs)
			}
		}
		if strings.Contains(rr.Setting, "kg") {
			// The direct edge is supported only by PMID 40000000 (after the
			// cutoff); the 2-hop chain through PTCH1 remains.
			joined := strings.Join(rr.Knowledge.Edges, "\n")
			if !strings.Contains(joined, `Chemical cyclopamine (MESH:C000541) has the relation "negative_correlate" with Gene PTCH1 (X1)`) ||
				strings.Contains(joined, `with Gene Shh (103046459)`) && strings.Contains(joined, `cyclopamine (MESH:C000541) has the relation "associate"`) {
				t.Errorf("%s: edges %q", rr.Setting, rr.Knowledge.Edges)
			}
		}
		// Greedy says negative_correlate (right); candidate 1 positive, 2 negative:
		// a 1–1 tie goes to the label listed first, positive_correlate.
		if rr.Greedy.Label != "negative_correlate" || rr.Majority != "positive_correlate" || !rr.MajTie {
			t.Errorf("%s: greedy %q majority %q tie %v", rr.Setting, rr.Greedy.Label, rr.Majority, rr.MajTie)
		}
		for src, g := range rr.Greedy.Grounding {
			if !g.Scored || len(g.Claims) != 3 || g.Groundedness != 2.0/3 {
				t.Errorf("%s/%s: grounding %+v", rr.Setting, src, g)
			}
		}
	}
	if fb := res.Counts.TextFallbacks; ignoresFormat != (fb > 0) {
		t.Errorf("ignores format %v: %d text fallbacks", ignoresFormat, fb)
	}
	if len(recs) != 4 || res.Summary == nil || res.Summary.Metrics["m/kg+lit/chem-gene.accuracy"] != 1 {
		t.Fatalf("%d records; metrics %v", len(recs), res.Summary.Metrics)
	}
	// The window is sized before the first item (a calibration of the
	// model's tokenizer, then the items' prompts).
	if !strings.HasPrefix(prompts[0], "Calibration passage.") || !strings.Contains(prompts[1], "### User Input\nCan we hypothesize the potential relation between Chemical cyclopamine") {
		t.Errorf("first prompts %q, %q", prompts[0], prompts[1])
	}
}

// Open-ended mode (§5): free-text backgrounds, 5 hypotheses each, ranked by
// groundedness; the most and least grounded are reported.
func TestOpenEnded(t *testing.T) {
	dir := t.TempDir()
	kg, _ := kg.Open(filepath.Join(dir, "kg"), true)
	rel := filepath.Join(dir, "rel")
	os.WriteFile(rel, []byte("1\tAssociation\tGene|A\tGene|B\n"), 0o644)
	kg.Import(context.Background(), []string{rel})
	kg.Close()
	open := filepath.Join(dir, "open.jsonl")
	os.WriteFile(open, []byte(`{"id": "bg1", "background": "Gene A and gene B in ageing."}`+"\n"), 0o644)
	var mu sync.Mutex
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		mu.Lock()
		defer mu.Unlock()
		u := r.LastUser()
		switch {
		case strings.Contains(u, "Extract key entities"):
			return fakeollama.Reply{Content: `{"entities": []}`}
		case strings.Contains(u, "Summarize the statement"):
			// Hypothesis k has k claims, of which only "Claim 1" is supported.
			n := strings.Count(u, "H")
			var cs []string
			for i := 1; i <= n; i++ {
				cs = append(cs, `"Claim `+string(rune('0'+i))+`"`)
			}
			return fakeollama.Reply{Content: `{"claims": [` + strings.Join(cs, ",") + `]}`}
		case strings.Contains(u, "Judge if"):
			if strings.Contains(u, "Claim 1") {
				return fakeollama.Reply{Content: `{"groundness": 1}`}
			}
			return fakeollama.Reply{Content: `{"groundness": 0}`}
		default:
			seed := int(r.Options["seed"].(float64))
			return fakeollama.Reply{Content: "```json\n{\"proposed_hypothesis\": \"" + strings.Repeat("H", seed) + "\"}\n```"}
		}
	}, fakeollama.Model{Name: "m:latest", Digest: "d", ParameterCount: 1e9})
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Models, cfg.Knowledge, cfg.KG, cfg.KnowHD, cfg.Open, cfg.Verifier = []string{"m"}, []string{"kg"}, filepath.Join(dir, "kg"), []string{"kg"}, open, VerifierSelf
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := enginetest.New(t, srv.Host(), 1).Run(context.Background(), s.Task(), engine.RunSpec{Dir: filepath.Join(dir, "run")})
	if err != nil {
		t.Fatal(err)
	}
	// Five candidates (seeds 1..5): groundedness 1/1, 1/2, …, 1/5. Most
	// grounded "H" (1.00), least "HHHHH" (0.20), gap ≥ 0.3.
	row := res.Summary.Tables[0].Rows[0]
	if strings.Join(row, "|") != "m|kg|bg1|H|1.00|HHHHH|0.20|true" {
		t.Fatalf("open row %v", row)
	}
}

// --limit 50 draws a seeded sample of each task that keeps its labels'
// shares (the file is sorted by label: its first 50 rows of a task hold one
// label): every label's share within 5 points of the full test set's. The
// drawn items are listed for the manifest.
func TestLimitIsAStratifiedSample(t *testing.T) {
	all, err := LoadTestItems("")
	if err != nil {
		t.Fatal(err)
	}
	share := func(items []TestItem) map[string]float64 {
		n := map[string]float64{}
		for _, it := range items {
			n[taskName(it.RelType)+"/"+it.Relation]++
		}
		per := map[string]float64{}
		for _, it := range items {
			per[taskName(it.RelType)]++
		}
		for k := range n {
			task, _, _ := strings.Cut(k, "/")
			n[k] /= per[task]
		}
		return n
	}
	full := share(all)
	for _, mode := range []string{"stratified", "first"} {
		cfg := DefaultConfig()
		cfg.Models, cfg.Limit, cfg.Sample = []string{"m"}, 50, mode
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.items) != 150 || len(s.Sample()) != 150 {
			t.Fatalf("%s: %d items, %d listed", mode, len(s.items), len(s.Sample()))
		}
		worst := 0.0
		for k, want := range full {
			worst = math.Max(worst, math.Abs(share(s.items)[k]-want))
		}
		if mode == "stratified" && worst > 0.05 {
			t.Errorf("stratified sample: a label's share is %.1f points off the full set's", 100*worst)
		}
		if mode == "first" && worst < 0.2 {
			t.Errorf("the first rows should be one label (off by %.1f points): is the file still sorted?", 100*worst)
		}
	}
}

// Table 2's Average Acc is over items — the three tasks weighted by their
// sizes in the test set (1,209, 268 and 547) — and every published row
// comes out within rounding when halu's summary averages a run whose
// per-task accuracies are that row's.
func TestTable2AverageIsOverItems(t *testing.T) {
	all, err := LoadTestItems("")
	if err != nil {
		t.Fatal(err)
	}
	size := map[string]int{}
	for _, it := range all {
		size[taskName(it.RelType)]++
	}
	if size["chem-gene"] != 1209 || size["dis-gene"] != 268 || size["gene-gene"] != 547 {
		t.Fatalf("task sizes %v", size)
	}
	f, err := os.Open("../report/reference/truthhypo_table2.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	s := &Suite{cfg: DefaultConfig()}
	for _, row := range rows[1:] {
		var recs []rundir.Record
		for i, task := range []string{"chem-gene", "dis-gene", "gene-gene"} {
			acc, _ := strconv.ParseFloat(row[3+2*i], 64)
			right := int(math.Round(acc / 100 * float64(size[task])))
			for j := 0; j < size[task]; j++ {
				label := "positive_correlate"
				if j >= right {
					label = "negative_correlate"
				}
				b, _ := json.Marshal(Result{Model: row[1], Setting: "parametric", Task: task, Gold: "positive_correlate",
					Greedy: &Hypothesis{Label: label, Parsed: true}})
				recs = append(recs, rundir.Record{Item: fmt.Sprintf("%s/%d", task, j), Data: b})
			}
		}
		sum, err := s.Summarize(rundir.RecordsOf(recs))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := strconv.ParseFloat(row[9], 64)
		if got := 100 * sum.Metrics[row[1]+"/parametric.avg_accuracy"]; math.Abs(got-want) > 0.011 {
			t.Errorf("%s %s: Avg Acc %.2f, published %.2f", row[0], row[1], got, want)
		}
	}
}

// readingsOf are what s's summary reads of rs.
func readingsOf(s *Suite, rs []Result) []reading {
	rd := s.reader()
	var gs []reading
	for i := range rs {
		gs = append(gs, rd.read(&rs[i]))
	}
	return gs
}

// Coverage counts the items whose prompt held KG knowledge or documents, and
// flags a setting where most held none.
func TestCoverage(t *testing.T) {
	h := &Hypothesis{Parsed: true}
	rs := []Result{
		{Greedy: h, Knowledge: Knowledge{Edges: []string{"e"}, PMIDs: []uint64{1}, Fit: Fit{DocsKept: 1, DocsDropped: 31, EdgesKept: 1}}},
		{Greedy: h, Knowledge: Knowledge{PMIDs: []uint64{2}, Fit: Fit{DocsKept: 2}}},
		{Greedy: h, Knowledge: Knowledge{Edges: []string{"n"}, KGSource: "nodes", Fit: Fit{EdgesKept: 1}}},
		{Greedy: h},
		{Greedy: h},
	}
	gs := readingsOf(&Suite{}, rs)
	if coverage("parametric", gs) != nil {
		t.Error("parametric has no coverage row")
	}
	c := coverage("kg+lit", gs)
	notes := strings.Join(c.notes, "\n")
	if strings.Join(c.row, "|") != "kg+lit|5|2 (40%)|1 (20%)|2 (40%)|0.6 of up to 32|1|0" || len(c.notes) != 3 ||
		!strings.Contains(notes, "only 2 of 5 items had KG knowledge") || !strings.Contains(notes, "only 2 of 5 items had a retrieved document") ||
		!strings.Contains(notes, "1 of 5 items had retrieved knowledge left out") {
		t.Fatalf("coverage %+v", c)
	}
	if c := coverage("kg", gs); strings.Join(c.row, "|") != "kg|5|2 (40%)|1 (20%)|–|–|1|0" {
		t.Fatalf("kg coverage %+v", c)
	}
}

// Retrieved documents are fitted to the model's window from the end of
// their ranking, and the counts recorded: with a 512-token window only the
// first documents fit; with 8,192 all do.
func TestDocumentsFitTheWindow(t *testing.T) {
	var hits []index.Hit
	for i := 0; i < 10; i++ {
		hits = append(hits, index.Hit{PMID: uint64(i + 1), Title: fmt.Sprintf("Title %d", i), Abstract: strings.Repeat("word ", 60)})
	}
	for _, tc := range []struct {
		numCtx   int
		kept     int
		overflow bool
	}{{8192, 10, false}, {600, 3, false}, {64, 0, true}} {
		srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply { return fakeollama.Reply{Content: "x"} },
			fakeollama.Model{Name: "m:latest", Digest: "d", ParameterCount: 1e9, ContextLength: 32768})
		e := enginetest.New(t, srv.Host(), 1)
		e.Config.NumCtx = tc.numCtx
		s := &Suite{cfg: DefaultConfig(), prompts: LoadPrompts()}
		vals := map[string]string{"background": "Is X related to Y?"}
		_, kept, fit, err := s.fitKnowledge(context.Background(), e.NewCalls("t"), "m", []string{s.prompts.System}, s.prompts.User["lit"], vals,
			"knowledge", nil, "document", hits, 100)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if fit.DocsKept != len(kept) || fit.DocsDropped != 10-len(kept) || fit.Overflow != tc.overflow ||
			tc.kept == 10 && len(kept) != 10 || tc.kept < 10 && (len(kept) == 0) != (tc.kept == 0) {
			t.Errorf("num_ctx %d: kept %d, fit %+v; want about %d kept, overflow %v", tc.numCtx, len(kept), fit, tc.kept, tc.overflow)
		}
		if strings.Count(vals["document"], "[Title: ") != len(kept) {
			t.Errorf("num_ctx %d: the prompt holds %d documents, %d kept", tc.numCtx, strings.Count(vals["document"], "[Title: "), len(kept))
		}
	}
}

// Under the paper protocol every item counts (§2.3): an unparseable
// hypothesis matches no label and predicts no link — 2 of 3 right, and a
// link F1 of 2·1·(2/3)/(1+2/3) = 0.8 — while its count is still shown and
// in the metric's support, so a gate sees its share.
func TestUnparseableCountsAsThePaperCountsIt(t *testing.T) {
	var recs []rundir.Record
	for i, h := range []Hypothesis{{Label: "positive_correlate", Parsed: true}, {Label: "positive_correlate", Parsed: true}, {Parsed: false}} {
		b, _ := json.Marshal(Result{Model: "m", Setting: "parametric", Task: "chem-gene", Gold: "positive_correlate", Greedy: &h})
		recs = append(recs, rundir.Record{Item: fmt.Sprint(i), Data: b})
	}
	sum, err := (&Suite{cfg: DefaultConfig()}).Summarize(rundir.RecordsOf(recs))
	if err != nil {
		t.Fatal(err)
	}
	if acc, f1 := sum.Metrics["m/parametric/chem-gene.accuracy"], sum.Metrics["m/parametric/chem-gene.f1"]; math.Abs(acc-2.0/3) > 1e-12 || math.Abs(f1-0.8) > 1e-12 {
		t.Errorf("accuracy %v, F1 %v; want 2/3 and 0.8 (every item counts)", acc, f1)
	}
	if sup := sum.Support["m/parametric/chem-gene.accuracy"]; sup.N != 2 || sup.Unscored != 1 {
		t.Errorf("support %+v, want n 2, unscored 1", sup)
	}
	if row := sum.Tables[0].Rows[0]; row[len(row)-1] != "1" || !strings.Contains(sum.Tables[0].Columns[len(row)-1], "counted wrong") {
		t.Errorf("Table 2: %v %v", sum.Tables[0].Columns, row)
	}
	// A task none of whose hypotheses was read has no figure, though the
	// paper's rule would count it 0: a number that rests on no reply is
	// "–", and a gate on it fails as unmeasured.
	b, _ := json.Marshal(Result{Model: "m", Setting: "parametric", Task: "dis-gene", Gold: "stimulate", Greedy: &Hypothesis{}})
	only := []rundir.Record{{Item: "d", Data: b}}
	sum, err = (&Suite{cfg: DefaultConfig()}).Summarize(rundir.RecordsOf(only))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := sum.Metrics["m/parametric/dis-gene.accuracy"]; ok {
		t.Errorf("an accuracy (%v) from no hypothesis read", v)
	}
	if sup := sum.Support["m/parametric/dis-gene.accuracy"]; sup.N != 0 || sup.Unscored != 1 {
		t.Errorf("dis-gene support %+v", sup)
	}
	if row := sum.Tables[0].Rows[0]; row[4] != "–" || row[5] != "–" || row[9] != "–" {
		t.Errorf("Table 2 row %v: dis-gene and the average should read –", row)
	}
	for _, f := range sum.Figures {
		if f.Headline && f.N > 0 {
			t.Errorf("headline figure %+v from no hypothesis read", f)
		}
	}
}

// With --unreadable unscored an unparseable hypothesis is left out of
// accuracy and F1 (not read as wrong, not as "no link"), counted, and in
// the metric's support.
func TestUnparseableIsUnscored(t *testing.T) {
	var recs []rundir.Record
	for i, h := range []Hypothesis{{Label: "positive_correlate", Parsed: true}, {Label: "positive_correlate", Parsed: true}, {Parsed: false}} {
		b, _ := json.Marshal(Result{Model: "m", Setting: "parametric", Task: "chem-gene", Gold: "positive_correlate", Greedy: &h})
		recs = append(recs, rundir.Record{Item: fmt.Sprint(i), Data: b})
	}
	cfg := DefaultConfig()
	cfg.Unreadable = "unscored"
	sum, err := (&Suite{cfg: cfg}).Summarize(rundir.RecordsOf(recs))
	if err != nil {
		t.Fatal(err)
	}
	if acc := sum.Metrics["m/parametric/chem-gene.accuracy"]; acc != 1 {
		t.Errorf("accuracy %v, want 1 (2 of 2 scored)", acc)
	}
	if sup := sum.Support["m/parametric/chem-gene.accuracy"]; sup.N != 2 || sup.Unscored != 1 {
		t.Errorf("support %+v, want n 2, unscored 1", sup)
	}

	// A task whose every hypothesis is unparseable has no figure: "–" in
	// the table, no metric, and support n = 0 so that a gate on it fails as
	// unmeasured.
	b, _ := json.Marshal(Result{Model: "m", Setting: "parametric", Task: "dis-gene", Gold: "stimulate", Greedy: &Hypothesis{}})
	sum, err = (&Suite{cfg: cfg}).Summarize(rundir.RecordsOf(append(recs, rundir.Record{Item: "d", Data: b})))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sum.Metrics["m/parametric/dis-gene.accuracy"]; ok {
		t.Error("an accuracy from no scored hypothesis")
	}
	if sup := sum.Support["m/parametric/dis-gene.accuracy"]; sup.N != 0 || sup.Unscored != 1 {
		t.Errorf("dis-gene support %+v", sup)
	}
	failed, err := sum.Check(summary.Gate{Metric: "dis-gene.accuracy", Bound: 0.5, MaxUnscored: 0.1})
	if err != nil || len(failed) != 1 || !strings.Contains(failed[0], "not measured") {
		t.Errorf("gate on an unmeasured accuracy: %v %v", failed, err)
	}
	if row := sum.Tables[0].Rows[0]; row[4] != "–" || row[5] != "–" {
		t.Errorf("Table 2 row %v: dis-gene should read –", row)
	}
	if c := coverage("lit", readingsOf(&Suite{}, []Result{{}})); strings.Join(c.row[:4], "|") != "lit|0|–|–" {
		t.Errorf("coverage of nothing: %v", c.row)
	}
}

// Default flags are the authors' values: no departures. A retrieval
// setting's parameters count only when a setting retrieves; --protocol
// halu departs in BM25 and KG chain choice; values the paper leaves open
// are named as assumptions.
func TestProtocolDepartures(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Models = []string{"m"}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.cfg.Settings().ProtocolOf() != setting.ProtocolPaper || len(s.cfg.Settings().Departures()) != 0 || s.cfg.MaxTokens != 2048 || s.cfg.Candidates != 5 || s.bm25() != index.PyseriniBM25 {
		t.Fatalf("default: %s %v, config %+v", s.cfg.Settings().ProtocolOf(), s.cfg.Settings().Departures(), s.cfg)
	}
	if a := s.cfg.Settings().Assumptions(); len(a) != 1 || a[0].Setting != "candidate-temperature" {
		t.Errorf("assumptions %v", a)
	}
	// halu's protocol on the parametric setting retrieves nothing: no departure.
	cfg.Protocol = setting.ProtocolHalu
	if err := setting.ApplyProtocol(&cfg, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if s, _ := New(cfg); names(s.cfg.Settings().Departures()) != "--unreadable unscored (paper: wrong)" {
		t.Errorf("halu, parametric: %s", names(s.cfg.Settings().Departures()))
	}
	cfg.Knowledge, cfg.KG, cfg.Index = []string{"kg+lit"}, "kg", "ix"
	s, _ = New(cfg)
	if got := names(s.cfg.Settings().Departures()); got != "--bm25 textbook (paper: pyserini); --kg-chains ranked (paper: sampled); --kg-context edges (paper: chains); --unreadable unscored (paper: wrong)" {
		t.Errorf("halu, kg+lit: %s", got)
	}
	// A flag given keeps its value under either protocol.
	cfg = DefaultConfig()
	cfg.Models, cfg.Protocol, cfg.Candidates, cfg.MaxTokens = []string{"m"}, setting.ProtocolHalu, 0, 1024
	setting.ApplyProtocol(&cfg, func(f string) bool { return f == "bm25" })
	s, _ = New(cfg)
	if got := names(s.cfg.Settings().Departures()); got != "--max-tokens 1024 (paper: 2048); --candidates 0 (paper: 5); --unreadable unscored (paper: wrong)" || s.cfg.BM25 != "pyserini" {
		t.Errorf("given flags: %s, bm25 %s", got, s.cfg.BM25)
	}
	// A run recorded before the settings existed keeps its behaviour.
	oldCfg, err := Declaration.Decode([]byte(`{"models":["m"],"settings":["lit"],"index":"ix","tasks":["chem-gene"],"max_tokens":1024}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	s, _ = New(*oldCfg.(*Config))
	if s.cfg.BM25 != "textbook" || s.cfg.KGChains != "ranked" || s.cfg.Protocol != setting.ProtocolPaper || s.cfg.Unreadable != "unscored" {
		t.Errorf("old run: %+v", s.cfg)
	}
	// A format-2 run keeps its settings (format 1's renames are not
	// applied again) and left unreadable hypotheses out.
	f2, err := Declaration.Decode([]byte(`{"models":["m"],"setting":["lit"],"index":"ix","tasks":["chem-gene"],"bm25":"pyserini","kg_chains":"sampled","sample":"stratified","protocol":"halu"}`), 2)
	if err != nil {
		t.Fatal(err)
	}
	if c := f2.(*Config); c.BM25 != "pyserini" || c.KGChains != "sampled" || c.Sample != "stratified" || c.Protocol != setting.ProtocolHalu || c.Unreadable != "unscored" {
		t.Errorf("format-2 run: %+v", c)
	}
	// A format-3 run fell back to sentences.
	f3, err := Declaration.Decode([]byte(`{"models":["m"],"setting":["lit"],"index":"ix","tasks":["chem-gene"],"knowhd":["lit"],"verifier":"v"}`), 3)
	if err != nil {
		t.Fatal(err)
	}
	if c := f3.(*Config); c.ClaimFallback != "sentences" {
		t.Errorf("format-3 run falls back to %q", c.ClaimFallback)
	}
}

// Each agent asks for entities in its own words: kg.py "from the user
// input", rag_kg.py "from the background statement".
func TestEntityPromptPerSetting(t *testing.T) {
	p := LoadPrompts()
	if !strings.HasPrefix(p.Extract["kg"], "### User Input\n{background}") || !strings.Contains(p.Extract["kg"], "from the user input") {
		t.Errorf("kg: %q", p.Extract["kg"])
	}
	if !strings.HasPrefix(p.Extract["kg+lit"], "### Background\n{background}") || !strings.Contains(p.Extract["kg+lit"], "from the background statement") {
		t.Errorf("kg+lit: %q", p.Extract["kg+lit"])
	}
}

// KG knowledge: chains between the nodes when any links two of them, each
// edge once, at most 32 lines; otherwise the nodes' own edges (the
// authors' fallback). "ranked" keeps the best-supported, "sampled" a
// random sample fixed by the seed and the item.
func TestKGKnowledge(t *testing.T) {
	dir := t.TempDir()
	var rel strings.Builder
	// Hub A: 40 neighbours N1…N40, neighbour Ni supported by i articles.
	pmid := 1
	for i := 1; i <= 40; i++ {
		for j := 0; j < i; j++ {
			fmt.Fprintf(&rel, "%d\tAssociation\tGene|A\tGene|N%d\n", pmid, i)
			pmid++
		}
	}
	// B — N1 links B to A in two hops; Z is linked to nothing but Y.
	fmt.Fprintf(&rel, "%d\tAssociation\tGene|B\tGene|N1\n", pmid)
	fmt.Fprintf(&rel, "%d\tAssociation\tGene|Z\tGene|Y\n", pmid+1)
	// Chemical X → A: with A → N5, a chain X → A → N5 that follows every
	// edge head → tail (pairs are stored Chemical, Disease, Gene, then by id).
	fmt.Fprintf(&rel, "%d\tAssociation\tChemical|X\tGene|A\n", pmid+2)
	f := filepath.Join(dir, "rel")
	os.WriteFile(f, []byte(rel.String()), 0o644)
	kg, _ := kg.Open(filepath.Join(dir, "kg"), true)
	if _, err := kg.Import(context.Background(), []string{f}); err != nil {
		t.Fatal(err)
	}
	defer kg.Close()
	s := &Suite{cfg: DefaultConfig(), kg: kg}
	s.cfg.BelowPMID = 0

	// The authors' chains follow edges x → y: A → N1 ← B is none, so A and
	// B show their own edges; X → A → N5 is one, on one line.
	lines, src, err := s.kgKnowledge([]string{"Gene|A", "Gene|B"}, "q1")
	if err != nil || src != "nodes" {
		t.Fatalf("A–B, chains: %s %q %v", src, lines, err)
	}
	lines, src, err = s.kgKnowledge([]string{"Gene|N5", "Chemical|X"}, "q1")
	want := `Chemical X (X) has the relation "associate" with Gene A (A); Gene A (A) has the relation "associate" with Gene N5 (N5)`
	if err != nil || src != "chains" || len(lines) != 1 || lines[0] != want {
		t.Fatalf("X–N5, chains: %s %q %v", src, lines, err)
	}
	// halu's edges: chains walked either way, their edges one per line.
	s.cfg.KGContext = "edges"
	lines, src, err = s.kgKnowledge([]string{"Gene|A", "Gene|B"}, "q1")
	if err != nil || src != "chains" || len(lines) != 2 {
		t.Fatalf("A–B, edges: %s %q %v", src, lines, err)
	}
	if lines, _, _ := s.kgKnowledge([]string{"Gene|N5", "Chemical|X"}, "q1"); len(lines) != 2 || lines[0]+"; "+lines[1] != want && lines[1]+"; "+lines[0] != want {
		t.Fatalf("X–N5, edges: %q", lines)
	}
	// A and Z: no chain; the fallback shows 32 of the 41 own edges.
	s.cfg.KGChains = "ranked"
	ranked, src, _ := s.kgKnowledge([]string{"Gene|A", "Gene|Z"}, "q1")
	if src != "nodes" || len(ranked) != 32 || !strings.Contains(ranked[0], "(N40)") || strings.Contains(strings.Join(ranked, "\n"), "(N1)") {
		t.Fatalf("ranked fallback: %s %d lines, first %q", src, len(ranked), ranked[0])
	}
	s.cfg.KGChains = "sampled"
	a, _, _ := s.kgKnowledge([]string{"Gene|A", "Gene|Z"}, "q1")
	b, _, _ := s.kgKnowledge([]string{"Gene|A", "Gene|Z"}, "q1")
	c, _, _ := s.kgKnowledge([]string{"Gene|A", "Gene|Z"}, "q2")
	if len(a) != 32 || strings.Join(a, "\n") != strings.Join(b, "\n") || strings.Join(a, "\n") == strings.Join(c, "\n") || strings.Join(a, "\n") == strings.Join(ranked, "\n") {
		t.Fatalf("sampled: not a fixed sample per item, or the ranked one")
	}
	if lines, src, _ := s.kgKnowledge([]string{"Gene|Q"}, "q1"); src != "" || lines != nil {
		t.Fatalf("unknown node: %s %q", src, lines)
	}
}

// KnowHD needs its verifier named: the authors check every generator's
// claims with one fixed model, so the generator checking itself is never
// a silent default; --verifier self chooses it and the run says so.
func TestKnowHDVerifierIsNamed(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Models, cfg.Knowledge, cfg.KnowHD = []string{"m"}, []string{"parametric"}, []string{"kg"}
	cfg.KG = t.TempDir()
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "needs a verifier") {
		t.Fatalf("KnowHD without a verifier: %v", err)
	}
	cfg.Verifier = VerifierSelf
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Models(); len(got) != 1 || got[0] != "m" {
		t.Errorf("models with --verifier self: %v", got)
	}
	if s.verifier("m") != "m" {
		t.Errorf("--verifier self verifies with %q", s.verifier("m"))
	}
	sum, err := s.Summarize(rundir.RecordsOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(sum.Notes, "\n"), "KnowHD verifier = generator") {
		t.Errorf("notes do not name the verifier choice: %q", sum.Notes)
	}
}

// KnowHD's support verdicts are asked as the authors ask them (their
// prompt, a free reply capped at 2,048 tokens); the careful reading makes
// the headline and the authors' rule — "1" anywhere in the reply — is read
// beside it: "supported by document 1 … groundness: 0" is 0 carefully, 1
// by their rule. OtherReading puts that reading in place and recomputes
// groundedness (here 1/2 → 2/2).
func TestKnowHDAuthorsRuleBeside(t *testing.T) {
	reply := "Document 1 mentions the chemical but not this effect.\nGroundness: 0"
	if g, err := ParseGroundness(reply); err != nil || *g.Groundness != 0 {
		t.Errorf("careful reading of %q: %v %v", reply, g.Groundness, err)
	}
	if g, _ := ParseGroundnessPaper(reply); *g.Groundness != 1 {
		t.Errorf("the authors' rule on %q: %v, want 1", reply, *g.Groundness)
	}
	cfg := DefaultConfig()
	if cfg.VerdictFormat != "text" || cfg.VerifierMaxTokens != 2048 {
		t.Errorf("default verdicts: %s, cap %d", cfg.VerdictFormat, cfg.VerifierMaxTokens)
	}
	yes := true
	h := Hypothesis{Label: "positive_correlate", Parsed: true, Grounding: map[string]*Grounding{"kg": {
		Claims:       []ClaimCheck{{Claim: "a", Scored: true, Supported: false, Other: &yes}, {Claim: "b", Scored: true, Supported: true}},
		Groundedness: 0.5, Scored: true}}}
	b, _ := json.Marshal(Result{Model: "m", Setting: "kg", Task: "chem-gene", Gold: "positive_correlate", Greedy: &h})
	recs := []rundir.Record{{Item: "1", Data: b}}
	s := &Suite{cfg: cfg}
	alt, err := s.OtherReading(rundir.RecordsOf(recs)).Sorted()
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	json.Unmarshal(alt[0].Data, &r)
	g := r.Greedy.Grounding["kg"]
	if g.Groundedness != 1 || !g.Claims[0].Supported || g.Claims[0].Other == nil || *g.Claims[0].Other {
		t.Errorf("other reading: %+v", g)
	}
}

// KnowHD finds a claim's graph nodes as the authors' code does by default:
// the top 100 nodes per extracted entity by BM25 (node_k), so an entity
// named otherwise than the graph names it is still found; --claim-nodes
// exact looks ids and names up exactly. Each way of finding is named.
func TestClaimNodesByBM25(t *testing.T) {
	dir := t.TempDir()
	table := filepath.Join(dir, "names.tsv")
	var b strings.Builder
	b.WriteString("id\tname\ttype\n6469\tsonic hedgehog signaling molecule\tGene\n5727\tpatched 1\tGene\n")
	for i := 0; i < 150; i++ {
		fmt.Fprintf(&b, "%d\tsignaling protein %d\tGene\n", 10000+i, i)
	}
	os.WriteFile(table, []byte(b.String()), 0o644)
	g, _ := kg.Open(filepath.Join(dir, "kg"), true)
	if _, err := g.Import(context.Background(), []string{table}); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cfg := DefaultConfig()
	cfg.Knowledge, cfg.KnowHD, cfg.Models, cfg.Verifier = []string{"kg"}, []string{"kg"}, []string{"m"}, "v"
	s := &Suite{cfg: cfg, kg: g}
	ents := []string{"Gene sonic hedgehog", "Gene signaling"}
	got, err := s.claimNodes(ents)
	// Every node is a Gene, so each entity fills its 100: sonic hedgehog
	// first, then the shortest documents (patched 1, then by id); the
	// second entity's 100 (the signaling proteins, by id) add two more.
	if err != nil || len(got) != 102 || got[0] != "Gene|6469" || got[1] != "Gene|5727" || !slices.Contains(got, "Gene|10099") || slices.Contains(got, "Gene|10100") {
		t.Fatalf("bm25: %d nodes, first %v, %v", len(got), got[:min(len(got), 3)], err)
	}
	if m := strings.Join(s.MethodDepartures(), "\n"); !strings.Contains(m, "halu's BM25 (top 100 per entity, node_k)") || !strings.Contains(m, "KG chains: the authors' rendering") {
		t.Errorf("method notes %q", m)
	}
	s.cfg.ClaimNodes, s.cfg.KGContext = "exact", "edges"
	if got, _ := s.claimNodes(ents); len(got) != 0 {
		t.Errorf("exact: %v", got)
	}
	if got, _ := s.claimNodes([]string{"Gene patched 1 (5727)"}); len(got) != 1 || got[0] != "Gene|5727" {
		t.Errorf("exact by id: %v", got)
	}
	if m := s.MethodDepartures(); len(m) != 0 {
		t.Errorf("exact, edges: method notes %q", m)
	}
	if d := names(s.cfg.Settings().Departures()); d != "--kg-context edges (paper: chains); --claim-nodes exact (paper: bm25)" {
		t.Errorf("departures %s", d)
	}
}

// names lists departures as a run prints them.
func names(deps []setting.Departure) string {
	var out []string
	for _, d := range deps {
		out = append(out, d.String())
	}
	return strings.Join(out, "; ")
}

// Fig. 4's row, like Table 2's, shows no figure when every greedy
// hypothesis went unread and was counted wrong: a 0.00 there would rest on
// no reply.
func TestSelectionRowOfNothingRead(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Models, cfg.Candidates = []string{"m"}, 2
	s := &Suite{cfg: cfg}
	rs := []Result{
		{Gold: "stimulate", Greedy: &Hypothesis{}, Candidates: []Hypothesis{{}, {}}},
		{Gold: "inhibit", Greedy: &Hypothesis{}, Candidates: []Hypothesis{{}, {}}},
	}
	row := s.selectionRow("m", "parametric", readingsOf(s, rs))
	if row[2] != "–" || row[3] != "–" || row[7] != "2" {
		t.Errorf("row %v: want – for greedy and majority, 2 unread", row)
	}
	rs[0].Greedy = &Hypothesis{Parsed: true, Label: "stimulate"}
	if row := s.selectionRow("m", "parametric", readingsOf(s, rs)); row[2] == "–" {
		t.Errorf("row %v: one greedy hypothesis read, a figure is due", row)
	}
}

// A parametric prompt shows no knowledge, but still needs its instructions
// and the reply's cap: the run's window is raised to hold them (at
// --num-ctx 640 a 2,048-token reply would run past it), and a model whose
// trained context cannot hold them is refused before the first call.
func TestParametricPromptsSizeTheWindow(t *testing.T) {
	for _, tc := range []struct {
		ctxLen int
		refuse bool
	}{{4096, false}, {1024, true}} {
		srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
			return fakeollama.Reply{Content: `{"proposed_hypothesis": "positive_correlate"}`}
		}, fakeollama.Model{Name: "m:latest", Digest: "d", ParameterCount: 1e9, ContextLength: tc.ctxLen})
		cfg := DefaultConfig()
		cfg.Models, cfg.Knowledge, cfg.Tasks, cfg.Limit = []string{"m"}, []string{"parametric"}, []string{"chem-gene"}, 1
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		e := enginetest.New(t, srv.Host(), 1)
		e.Config.NumCtx = 640
		res, err := e.Run(context.Background(), s.Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "run")})
		switch {
		case tc.refuse:
			// Refused before any item: the one call is the engine's
			// calibration of the model's tokens (engine.Calls.Need).
			if err == nil || !strings.Contains(err.Error(), "lower --max-tokens") || len(srv.Chats()) > 1 {
				t.Errorf("context %d: %v, %d calls", tc.ctxLen, err, len(srv.Chats()))
			}
		case err != nil:
			t.Fatal(err)
		case recordedCtx(t, res.Manifest) < cfg.MaxTokens:
			t.Errorf("context %d: the run's window %d cannot hold a %d-token reply", tc.ctxLen, recordedCtx(t, res.Manifest), cfg.MaxTokens)
		}
		srv.Close()
	}
}

// recordedCtx is the context window the run's manifest records.
func recordedCtx(t *testing.T, m *rundir.Manifest) int {
	t.Helper()
	ec, err := engine.Recorded(m)
	if err != nil {
		t.Fatal(err)
	}
	return ec.NumCtx
}

// --hypothesis-format labels asks for the prompt's JSON object with its
// proposed_hypothesis held to the task's labels (the server's structured
// output), reads the reply like any other, and is a departure named in the
// run; with KnowHD or open-ended backgrounds it is refused.
func TestHypothesisFormatLabels(t *testing.T) {
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if len(r.Format) == 0 {
			return fakeollama.Reply{Content: "### Step-by-step Reasoning\nIt rises.\n```json\n{\"proposed_hypothesis\": \"X increases Y\"}\n```"}
		}
		return fakeollama.Reply{Content: `{ "proposed_hypothesis" : "negative_correlate"}`}
	}, fakeollama.Model{Name: "m:latest", Digest: "d", ParameterCount: 1e9, ContextLength: 8192})
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.Models, cfg.Knowledge, cfg.Tasks, cfg.Limit, cfg.Candidates, cfg.HypothesisFormat = []string{"m"}, []string{"parametric"}, []string{"chem-gene"}, 2, 1, "labels"
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := enginetest.New(t, srv.Host(), 1).Run(context.Background(), s.Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "run")})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"properties":{"proposed_hypothesis":{"enum":["positive_correlate","negative_correlate","no_relation"],"type":"string"}},"required":["proposed_hypothesis"],"type":"object"}`
	asked := 0
	for _, r := range srv.Chats() {
		if len(r.Format) > 0 {
			asked++
			if string(r.Format) != want {
				t.Errorf("format %s, want %s", r.Format, want)
			}
		}
	}
	if asked != 4 { // 2 items × (greedy + 1 candidate)
		t.Errorf("%d generations held to the labels, want 4", asked)
	}
	_, recs, err := engine.ReadRun(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		r, _ := rundir.Decode[Result](rec)
		if r.Greedy == nil || !r.Greedy.Parsed || r.Greedy.Label != "negative_correlate" {
			t.Errorf("%s: greedy %+v", rec.Item, r.Greedy)
		}
	}
	if got := names(s.cfg.Settings().Departures()); got != "--candidates 1 (paper: 5); --hypothesis-format labels (paper: free)" {
		t.Errorf("departures: %s", got)
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.KnowHD, c.Verifier = []string{"kg"}, "m" },
		func(c *Config) { c.Open = "backgrounds.jsonl" },
	} {
		c := cfg
		bad(&c)
		if err := c.Settings().Validate(); err == nil || !strings.Contains(err.Error(), "hypothesis-format") {
			t.Errorf("labels with KnowHD or open-ended backgrounds: %v", err)
		}
	}
}

// A summary is the same whatever order the records were written in: its
// groups in the tables' order (model, then setting in the paper's order),
// each group's results in item order, so that a mean of groundedness sums
// its values in one order — the items' — whichever finished first.
func TestSummaryIsTheSameInAnyRecordOrder(t *testing.T) {
	cfg := DefaultConfig()
	cfg.KnowHD = []string{"kg"}
	s := &Suite{cfg: cfg}
	var recs []rundir.Record
	want := map[string][]float64{} // model/setting: groundedness in item order
	for _, m := range []string{"b", "a"} {
		for _, st := range []string{"kg", "parametric"} {
			for i := range 40 {
				task := tasks[i%3]
				claims := []ClaimCheck{}
				sup := 0
				for c := range 1 + i%7 {
					ok := (i*c)%3 != 0
					if ok {
						sup++
					}
					claims = append(claims, ClaimCheck{Claim: "c", Scored: true, Supported: ok})
				}
				g := float64(sup) / float64(len(claims))
				want[m+"/"+st] = append(want[m+"/"+st], g)
				label := []string{"positive_correlate", "negative_correlate"}[i%2]
				b, _ := json.Marshal(Result{Model: m, Setting: st, Task: task, XID: fmt.Sprintf("x%02d", i), YID: "y", Gold: "positive_correlate",
					Greedy: &Hypothesis{Label: label, Parsed: i%5 != 0, Grounding: map[string]*Grounding{"kg": {Claims: claims, Groundedness: g, Scored: true}}}})
				recs = append(recs, rundir.Record{Item: fmt.Sprintf("%s/%s/%s/x%02d/y", m, st, task, i), Data: b})
			}
		}
	}
	summarize := func(recs []rundir.Record) []byte {
		sum, err := s.Summarize(rundir.RecordsOf(recs))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(sum)
		return b
	}
	first := summarize(recs)
	shuffled := slices.Clone(recs)
	for i := range shuffled {
		j := (i*37 + 11) % len(shuffled)
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	}
	slices.Reverse(recs)
	if string(summarize(recs)) != string(first) || string(summarize(shuffled)) != string(first) {
		t.Fatal("the summary changes with the records' order")
	}
	var sum summary.Summary
	json.Unmarshal(first, &sum)
	var rows []string
	for _, r := range sum.Tables[0].Rows {
		rows = append(rows, r[0]+" "+r[1])
	}
	if got := strings.Join(rows, ", "); got != "a parametric, a kg, b parametric, b kg" {
		t.Errorf("Table 2 rows %s", got)
	}
	checked := 0
	for _, f := range sum.Figures {
		if f.Metric != "groundedness (kg)" {
			continue
		}
		checked++
		// Item order within a group is the x IDs' (the tasks interleave).
		byItem := map[string]float64{}
		for i, g := range want[f.Model+"/"+f.Group] {
			byItem[fmt.Sprintf("%s/x%02d", tasks[i%3], i)] = g
		}
		var keys []string
		for k := range byItem {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var gs []float64
		for _, k := range keys {
			gs = append(gs, byItem[k])
		}
		if mean := metrics.Mean(gs); float64(f.Estimate) != mean {
			t.Errorf("%s %s groundedness %v, the mean in item order %v", f.Model, f.Group, f.Estimate, mean)
		}
	}
	if checked != 4 {
		t.Errorf("%d groundedness figures, want 4", checked)
	}
}
