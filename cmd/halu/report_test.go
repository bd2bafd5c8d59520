package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/runner/report"
	"halu/runner/rundir"
	"halu/runner/setting"
	"halu/runner/summary"
)

// xssPayload is a model answer that would run script if a report pasted it
// into HTML unescaped.
const xssPayload = `<script>document.body.setAttribute('data-xss','ran')</script></table></pre><img src=x onerror="document.body.setAttribute('data-xss','img')">`

func TestReportIsDeterministicAndEscapesModelText(t *testing.T) {
	f := newFake(t)
	cache := t.TempDir()
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if r := halu(t, f, cache, "run", "smoke", "--models", "xss", "--judges", "judge,bad", "--limit", "2", "--out", run); r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	a, b := filepath.Join(dir, "a.html"), filepath.Join(dir, "b.html")
	csvDir := filepath.Join(dir, "csv")
	for _, out := range []string{a, b} {
		if r := halu(t, f, cache, "report", run, "--html", out, "--csv", csvDir); r.code != exitOK {
			t.Fatalf("report: exit %d: %s", r.code, r.stderr)
		}
	}
	ha, _ := os.ReadFile(a)
	hb, _ := os.ReadFile(b)
	if len(ha) == 0 || !bytes.Equal(ha, hb) {
		t.Fatalf("two reports of the same run differ (%d and %d bytes)", len(ha), len(hb))
	}
	page := string(ha)
	// The payload appears, escaped, and no tag of it survives.
	if !strings.Contains(page, "&lt;script&gt;document.body.setAttribute(") {
		t.Error("the model's answer is not in the report as text")
	}
	if n := len(regexp.MustCompile(`(?i)<script`).FindAllString(page, -1)); n != 0 {
		t.Errorf("%d <script> tags in the report", n)
	}
	if strings.Contains(page, "<img src=x") || strings.Contains(page, `onerror="document`) {
		t.Error("an <img onerror> from model output survived")
	}
	for _, want := range []string{"Content-Security-Policy", "Unscored judgements", "bad:latest", "dx", "Judges: parse failures"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	csvs, _ := filepath.Glob(filepath.Join(csvDir, "*.csv"))
	if len(csvs) == 0 {
		t.Error("no CSV tables written")
	}
	r := halu(t, f, cache, "report", run, "--md")
	if r.code != exitOK || !strings.Contains(r.stdout, "|---|") || strings.Contains(r.stdout, "<script") {
		t.Errorf("markdown: exit %d\n%s", r.code, r.stdout)
	}
}

func TestCompareTwoRuns(t *testing.T) {
	f := newFake(t)
	cache := t.TempDir()
	dir := t.TempDir()
	for _, seed := range []string{"1", "2"} {
		if r := halu(t, f, cache, "run", "smoke", "--models", "gen", "--judges", "judge", "--seed", seed, "--out", filepath.Join(dir, seed)); r.code != exitOK {
			t.Fatalf("run: %s", r.stderr)
		}
	}
	r := halu(t, f, cache, "compare", filepath.Join(dir, "1"), filepath.Join(dir, "2"))
	if r.code != exitOK {
		t.Fatalf("compare: exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"score", "hallucinated", "exact McNemar p=", "Cohen's dz"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("compare output lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := halu(t, f, cache, "compare", filepath.Join(dir, "1")); r.code != exitUsage {
		t.Errorf("one run: exit %d", r.code)
	}
}

// A run with default flags follows the paper's protocol and records no
// departure; a setting changed from the paper's is recorded by name.
func TestProtocolDepartures(t *testing.T) {
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if r.Model == "gen" {
			return fakeollama.Reply{Content: "Measure the salt content of cloud droplets with drone-borne sensors and relate it to rainfall over a season."}
		}
		if strings.Contains(r.LastUser(), "ONLY ANSWER") {
			return fakeollama.Reply{Content: "B"}
		}
		return fakeollama.Reply{Content: `Sound. {"originality": 6, "feasibility": 5, "clarity": 7}`}
	}, panelModels()...)
	t.Cleanup(srv.Close)
	f := &fakeServer{Server: srv, byKind: map[string]int{}}
	cache, dir := t.TempDir(), t.TempDir()
	for _, tc := range []struct {
		name       string
		args       []string
		departures string
	}{
		// A sample of the keywords is a departure (the paper: every one).
		{"default", nil, "--limit 2 (paper: 0)"},
		{"first-release", []string{"--scoring", "first-release"}, "--limit 2 (paper: 0); --scoring first-release (paper: current)"},
		{"more ideas", []string{"--scoring", "first-release", "--ideas-per-keyword", "3", "--readers", "paper"},
			"--limit 2 (paper: 0); --ideas-per-keyword 3 (paper: 2); --scoring first-release (paper: current)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := filepath.Join(dir, tc.name)
			args := append([]string{"run", "ideas", "--models", "gen", "--judges", "j1,j2,j3", "--limit", "2", "--out", run}, tc.args...)
			if r := halu(t, f, cache, args...); r.code != exitOK {
				t.Fatalf("run: exit %d: %s", r.code, r.stderr)
			}
			m, err := rundir.ReadManifest(run)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range m.Departures {
				got = append(got, d.String())
			}
			if m.Protocol != setting.ProtocolPaper || strings.Join(got, "; ") != tc.departures {
				t.Fatalf("protocol %q, departures %q; want paper, %q", m.Protocol, got, tc.departures)
			}
		})
	}
}

// A published table is read beside a run only as far as what made it is
// shown equal, setting by setting: each of these runs read as comparable
// before (settings outside a short hand-kept list were never looked at)
// and is now "reference only", with the differences listed.
func TestPublishedTablesAreProven(t *testing.T) {
	srv := fakeollama.New(suiteReply, append(panelModels(), fakeollama.Model{Name: "judge:latest", Digest: "dj", ParameterCount: 1e9})...)
	t.Cleanup(srv.Close)
	f := &fakeServer{Server: srv, byKind: map[string]int{}}
	dir, cache := t.TempDir(), t.TempDir()
	ix := filepath.Join(dir, "ix")
	if r := halu(t, f, cache, "index", "build", "--out", ix, "../../testdata/pubmed/pubmedqa_contexts.jsonl"); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	kg := filepath.Join(dir, "kg")
	if r := halu(t, f, cache, "kg", "import", "--out", kg, "../../testdata/kg/biored_train_sample.pubtator"); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	for _, tc := range []struct {
		name string
		args []string
		// want are parts of the report's verdict on the published table
		// named first.
		table string
		want  []string
	}{
		{"ideas first release on 10 keywords", []string{"ideas", "--models", "gen", "--judges", "j1,j2,j3", "--limit", "10", "--scoring", "first-release", "--max-tokens", "100", "--judge-max-tokens", "300"},
			"LiveIdeaBench", []string{"| --limit | 10 | every keyword | difference |", "| --max-tokens | 100 | no cap: the authors' code sends none |",
				"| --judge-max-tokens | 300 | no cap",
				"| --judges | j1,j2,j3 | not known: the top 10 LiveBench models"}},
		{"ideas default", []string{"ideas", "--models", "gen", "--judges", "j1,j2,j3", "--limit", "2"},
			"LiveIdeaBench", []string{"| --scoring | current | the first release's scales"}},
		{"intent bundled sample", []string{"intent", "--models", "gen", "--judges", "judge"},
			"FaithQA", []string{"| --data | the bundled 10-item sample (3 of the paper's example queries, 1 story written for halu, 6 items made from PubMedQA abstracts; none from the FaithQA test set) | not known: the FaithQA test set",
				"| --judges | judge | GPT-4o", "misinterpretation scoring is halu's design"}},
		{"intent hot and short", []string{"intent", "--models", "gen", "--judges", "judge", "--temperature", "1.2", "--max-tokens", "64"},
			"FaithQA", []string{"| --temperature | 1.2 | unstated: the temperature the paper sets for the models under test was lost from its text | difference: halu assumes 0 |",
				"| --max-tokens | 64 | unstated: the paper states no generation cap | difference: halu assumes 512 |", "| assumption (the paper is silent) |"}},
		{"hic cold", []string{"hic", "--models", "gen", "--judges", "judge", "--embed-model", "gen", "--questions", "1", "--temperature", "0.2"},
			"HIC-Bench", []string{"| --temperature | 0.2 | 1.0 (§4.1: generation temperature 1.0) | difference |",
				"| --questions | 1 | all 100 questions |", "| --judges | judge | gpt-4o and deepseek-v3, scores averaged (Appendix A.2) | difference (a model that measures) |",
				"| --embed-model | gen | SimCSE sup-simcse-bert-base-uncased (pooler output) |", "Flu: the paper's SimCSE similarity is BERT's pooler output"}},
		{"hypo literature at the default window", []string{"hypo", "--models", "gen", "--setting", "lit", "--index", ix, "--limit", "1", "--tasks", "chem-gene", "--knowledge-fit", "drop"},
			"TruthHypo (Xiong et al.), Table 2", []string{"| prompts that lost content to fit the window |", "| --index | " + ix + " | not known: the authors' PubMed corpus",
				"| --tasks | chem-gene | all three tasks |", "| --limit | 1 | every item |"}},
		{"hypo KnowHD", []string{"hypo", "--models", "gen", "--setting", "kg+lit", "--index", ix, "--kg", kg, "--knowhd", "kg+lit", "--verifier", "self", "--limit", "1", "--tasks", "chem-gene", "--num-ctx", "32768", "--knowledge-fit", "drop"},
			"Table 3: KnowHD", []string{"| --verifier | self | not known: the paper does not name the model that decomposed and checked the claims |",
				"claim → KG nodes: halu's node index is its own, not the authors'", "| --kg | " + kg + " | not known"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			args := append(append([]string{"run"}, tc.args...), "--out", run)
			// The fake judge's replies do not read in every suite's
			// format (intent's Table 7 listing, hypo's entities): such a
			// run measured nothing in part, and its report is still made.
			if r := halu(t, f, cache, args...); r.code != exitOK && r.code != exitNothing {
				t.Fatalf("run: exit %d: %s", r.code, r.stderr)
			}
			r := halu(t, f, cache, "report", run, "--md")
			if r.code != exitOK {
				t.Fatalf("report: exit %d: %s", r.code, r.stderr)
			}
			// The verdict is the first paragraph after the published
			// table's heading that is no table row — its headline — and
			// the table of its reasons under it: setting · this run · the
			// paper · difference or assumption.
			var verdict, reasons string
			if at := strings.Index(r.stdout, "### Published: "); at >= 0 {
				rest := r.stdout[at:]
				rest = rest[strings.Index(rest, tc.table):]
				lines := strings.Split(rest, "\n")[1:]
				for i, line := range lines {
					if line != "" && !strings.HasPrefix(line, "|") {
						verdict = line
						for _, l := range lines[i+1:] {
							if strings.HasPrefix(l, "### ") && strings.Contains(reasons, "|") || strings.HasPrefix(l, "- ") {
								break
							}
							reasons += l + "\n"
						}
						break
					}
				}
			}
			if !strings.HasPrefix(verdict, "reference only: ") || !strings.Contains(reasons, "| setting or count | this run | the paper | difference or assumption |") {
				t.Fatalf("verdict on %s: %q\n%s", tc.table, verdict, r.stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(reasons, w) {
					t.Errorf("the verdict's table lacks %q:\n%s", w, reasons)
				}
			}
			// What halu's method does otherwise than the paper's, whatever
			// the settings, is named in the run's manifest, summary and
			// report.
			if tc.args[0] == "intent" {
				m, err := rundir.ReadManifest(run)
				sum, serr := summary.ReadSummary(run)
				want := "misinterpretation scoring is halu's design"
				if err != nil || serr != nil || len(m.Methods) == 0 || !strings.Contains(m.Methods[0], want) ||
					len(sum.Methods) == 0 || !strings.Contains(r.stdout, mdEscaped("method: 2 departures from the paper's method")) {
					t.Errorf("intent method departures: manifest %v (%v), summary %v (%v), in report %v", m.Methods, err, sum.Methods, serr, strings.Contains(r.stdout, mdEscaped(want)))
				}
			}
			// The leaderboard shows no published row beside a run it is
			// reference only to, and says why.
			if board := r.stdout[:strings.Index(r.stdout, "\n## "+tc.args[0]+" — ")]; strings.Contains(board, "| published") {
				t.Errorf("published rows on the leaderboard:\n%s", board)
			}
		})
	}
}

// suiteReply answers the suites' agents and judges well enough for runs
// to complete: KnowHD's claims and support, hypotheses, fluency letters,
// HIC-Bench's judge line, critics, and an idea from the generator.
func suiteReply(r fakeollama.ChatRequest) fakeollama.Reply {
	u := r.LastUser()
	switch {
	case strings.Contains(u, "Summarize the statement"):
		return fakeollama.Reply{Content: `{"claims": ["Cyclopamine lowers Shh signalling."]}`}
	case strings.Contains(u, "Judge if the given information"):
		return fakeollama.Reply{Content: `{"groundness": 1}`}
	case strings.Contains(u, "proposed_hypothesis"):
		return fakeollama.Reply{Content: "```json\n{\"proposed_hypothesis\": \"negative_correlate\"}\n```"}
	case strings.Contains(u, "ONLY ANSWER"):
		return fakeollama.Reply{Content: "B"}
	case strings.Contains(u, "[Answers to be evaluated]"):
		return fakeollama.Reply{Content: "Originality: 4 Feasibility: 3 Value: 4 Hallucination: No"}
	case r.Model == "gen":
		return fakeollama.Reply{Content: "Measure the salt content of cloud droplets with drone-borne sensors and relate it to rainfall over a season."}
	}
	return fakeollama.Reply{Content: `Sound. {"originality": 6, "feasibility": 5, "clarity": 7}`}
}

// mdEscaped is s as the Markdown report writes it in a paragraph.
func mdEscaped(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

// panelModels are a generator and three judges of three organisations, for
// the ideas panel.
func panelModels() []fakeollama.Model {
	return []fakeollama.Model{
		{Name: "gen:latest", Digest: "g", Family: "llama", ParameterSize: "1B", ParameterCount: 1e9},
		{Name: "j1:latest", Digest: "1", Family: "qwen2", ParameterSize: "7B", ParameterCount: 7e9},
		{Name: "j2:latest", Digest: "2", Family: "gemma2", ParameterSize: "9B", ParameterCount: 9e9},
		{Name: "j3:latest", Digest: "3", Family: "phi3", ParameterSize: "4B", ParameterCount: 4e9},
	}
}

// xssModel is a model name an OpenAI-compatible server could list: it must
// show as text in the leaderboard and the sample browser.
const xssModel = `m<img src=x onerror=document.body.dataset.xss=1>`

// A report of three runs of two models each opens with one leaderboard per
// suite; its cells are the figures of the long CSV, which reads back to
// exactly the numbers the tables print; the sample browser puts both
// models' answers to one prompt together; nothing from a model (answers,
// judge replies, model names) is markup.
func TestLeaderboardOfThreeRuns(t *testing.T) {
	scores := map[string]int{}
	var mu sync.Mutex
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		switch {
		case r.Model == "gen":
			return fakeollama.Reply{Content: "answer: " + r.LastUser()}
		case r.Model == xssModel:
			return fakeollama.Reply{Content: xssPayload}
		case r.Model == "bad":
			return fakeollama.Reply{Content: "no idea </pre><script>document.body.setAttribute('data-xss','judge')</script>"}
		}
		// The judge's score varies with the question, so the two models'
		// figures differ and have intervals.
		mu.Lock()
		defer mu.Unlock()
		scores[r.LastUser()]++
		s := 1 + len(r.LastUser())%5
		return fakeollama.Reply{Content: fmt.Sprintf(`{"score": %d, "hallucination": %v}`, s, s < 3)}
	},
		fakeollama.Model{Name: "gen:latest", Digest: "dg", ParameterCount: 1e9},
		fakeollama.Model{Name: "judge:latest", Digest: "dj", ParameterCount: 1e9},
		fakeollama.Model{Name: "bad:latest", Digest: "db", ParameterCount: 1e9},
		fakeollama.Model{Name: xssModel + ":latest", Digest: "dx", ParameterCount: 1e9},
	)
	t.Cleanup(srv.Close)
	f := &fakeServer{Server: srv, byKind: map[string]int{}}
	cache, dir := t.TempDir(), t.TempDir()
	var runs []string
	for _, tc := range []struct{ name, suite, seed string }{{"smoke-1", "smoke", "1"}, {"smoke-2", "smoke", "2"}, {"hic", "hic", "1"}} {
		out := filepath.Join(dir, tc.name)
		args := []string{"run", tc.suite, "--models", "gen," + xssModel, "--judges", "judge,bad", "--seed", tc.seed, "--out", out}
		if tc.suite == "smoke" {
			args = append(args, "--limit", "5")
		} else {
			args = append(args, "--embed-model", "gen", "--questions", "1,2", "--answers", "1", "--strategy", "scp")
		}
		// hic's text judges read none of the fake's replies: that run
		// measured nothing (its own status), and the leaderboard shows it.
		want := exitOK
		if tc.suite == "hic" {
			want = exitNothing
		}
		if r := halu(t, f, cache, args...); r.code != want {
			t.Fatalf("%s: exit %d, want %d: %s", tc.name, r.code, want, r.stderr)
		}
		runs = append(runs, out)
	}
	page, long, samples := filepath.Join(dir, "report.html"), filepath.Join(dir, "long.csv"), filepath.Join(dir, "samples.jsonl")
	r := halu(t, f, cache, append(append([]string{"report"}, runs...), "--html", page, "--long", long, "--samples", samples)...)
	if r.code != exitOK {
		t.Fatalf("report: exit %d: %s", r.code, r.stderr)
	}
	md := halu(t, f, cache, append(append([]string{"report"}, runs...), "--md")...)
	html := mustRead(t, page)

	// The leaderboards come first, one per suite.
	lb, first := strings.Index(html, `id="leaderboards"`), strings.Index(html, `<section id="run1"`)
	if lb < 0 || first < 0 || lb > first || !strings.Contains(html, `id="board-smoke"`) || !strings.Contains(html, `id="board-hic"`) {
		t.Fatalf("no leaderboard per suite before the runs (leaderboards at %d, first run at %d)", lb, first)
	}
	board := html[lb:first]

	// Every figure of the long CSV: a headline one is a leaderboard cell,
	// printed from the CSV's numbers, and the smoke table's mean score is
	// the CSV's estimate to two decimals.
	rows := readCSV(t, long)
	headline := 0
	for _, row := range rows[1:] {
		rec := longRecord(rows[0], row)
		f := figureFromLong(t, rec)
		if rec["headline"] == "true" {
			headline++
			cell := "<td>" + template.HTMLEscapeString(f.Cell()) + "</td>"
			if !strings.Contains(board, cell) {
				t.Errorf("long CSV %v: leaderboard lacks the cell %s", rec, cell)
			}
			if !strings.Contains(md.stdout, "| "+f.Cell()+" |") {
				t.Errorf("long CSV %v: Markdown leaderboard lacks %q", rec, f.Cell())
			}
		}
		if rec["suite"] == "smoke" && rec["metric"] == "mean score" && f.Measured() {
			want := fmt.Sprintf("<td>%s</td><td>5</td><td>%.2f</td>", template.HTMLEscapeString(rec["model"]), float64(f.Estimate))
			if !strings.Contains(html, want) {
				t.Errorf("smoke table lacks %s (the long CSV's mean score)", want)
			}
		}
	}
	// smoke: 2 runs × 2 models × 2 metrics; hic: 1 run × 2 models × 3.
	if headline != 8+6 {
		t.Errorf("%d headline figures in the long CSV, want 14", headline)
	}

	// The sample browser: the two models' answers to one prompt sit in one
	// block, with the judge's verdict as read and its raw reply.
	var row report.SampleRow
	sc := bufio.NewScanner(strings.NewReader(mustRead(t, samples)))
	sc.Buffer(nil, 1<<24)
	n := 0
	for sc.Scan() {
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		n++
		if row.Suite == "smoke" && (len(row.Calls) < 3 || row.Calls[0].Prompt == "" || row.Calls[0].Reply == "") {
			t.Errorf("sample %s: no transcript: %+v", row.Item, row.Calls)
		}
	}
	if n != 2*5*2+2*2 {
		t.Errorf("%d sample rows, want one per record (24)", n)
	}
	if !strings.Contains(html, " · 4 records") || !strings.Contains(html, `{&#34;score&#34;:`) || !strings.Contains(html, "judged hallucinated (") {
		t.Error("sample browser: no block holding both models' answers of both smoke runs, no verdict as read, or no filter list")
	}

	// Nothing a model wrote or is named is markup, here or in a browser.
	if n := len(regexp.MustCompile(`(?i)<script|<img src=x`).FindAllString(html, -1)); n != 0 {
		t.Errorf("%d live tags from model text in the report", n)
	}
	bin := chromium(t)
	dom := headless(t, bin, page, "--dump-dom")
	if strings.Contains(dom, `data-xss="`) {
		t.Fatal("a script or handler from model text ran in the report")
	}
	screenshot(t, bin, page, "report-leaderboard.png")
}

// figureFromLong rebuilds a figure from a long CSV row.
func figureFromLong(t *testing.T, rec map[string]string) summary.Figure {
	t.Helper()
	num := func(s string) summary.Num {
		if s == "" {
			return summary.Num(math.NaN())
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("long CSV: %q is not a number", s)
		}
		return summary.Num(v)
	}
	n, err1 := strconv.Atoi(rec["n"])
	u, err2 := strconv.Atoi(rec["unscored"])
	if err1 != nil || err2 != nil {
		t.Fatalf("long CSV: n %q, unscored %q", rec["n"], rec["unscored"])
	}
	return summary.Figure{Model: rec["model"], Group: rec["group"], Metric: rec["metric"], Estimate: num(rec["estimate"]),
		Lo: num(rec["lo"]), Hi: num(rec["hi"]), N: n, Unscored: u, Percent: rec["percent"] == "true"}
}
