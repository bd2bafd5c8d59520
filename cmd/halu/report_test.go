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
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/runner"
	"halu/runner/report"
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
// departure; a setting changed from the paper's is recorded by name, and
// the report then reads the published board as not comparable, saying why.
// The December 2024 LiveIdeaBench board was scored with the first
// release's scales, so only a run with --scoring first-release and nothing
// else changed is comparable with it.
func TestProtocolDeparturesAndComparability(t *testing.T) {
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
		comparable bool
		why        string
	}{
		{"default", nil, "", false, "the published numbers used --scoring first-release"},
		{"first-release", []string{"--scoring", "first-release"}, "scoring", true, "comparable: this run used the protocol"},
		{"more ideas", []string{"--scoring", "first-release", "--ideas-per-keyword", "3"}, "scoring,ideas-per-keyword", false, "--ideas-per-keyword 3 (paper: 2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := filepath.Join(dir, tc.name)
			args := append([]string{"run", "ideas", "--models", "gen", "--judges", "j1,j2,j3", "--limit", "2", "--out", run}, tc.args...)
			if r := halu(t, f, cache, args...); r.code != exitOK {
				t.Fatalf("run: exit %d: %s", r.code, r.stderr)
			}
			m, err := runner.ReadManifest(run)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, d := range m.Departures {
				names = append(names, d.Setting)
			}
			sort.Strings(names)
			want := strings.Split(tc.departures, ",")
			sort.Strings(want)
			if m.Protocol != runner.ProtocolPaper || strings.Join(names, ",") != strings.Trim(strings.Join(want, ","), ",") {
				t.Fatalf("protocol %q, departures %v; want paper, %s", m.Protocol, m.Departures, tc.departures)
			}
			html := filepath.Join(dir, tc.name+".html")
			if r := halu(t, f, cache, "report", run, "--html", html); r.code != exitOK {
				t.Fatalf("report: exit %d: %s", r.code, r.stderr)
			}
			page, _ := os.ReadFile(html)
			label := "<b>not comparable</b>"
			if tc.comparable {
				label = "<b>comparable</b>"
			}
			if !strings.Contains(string(page), label) || !strings.Contains(string(page), tc.why) {
				t.Errorf("report lacks %q and %q", label, tc.why)
			}
			// The leaderboard holds the published rows only where the run
			// is comparable, and otherwise says why in one line.
			board := string(page)[strings.Index(string(page), `id="leaderboards"`):strings.Index(string(page), `<section id="run1"`)]
			published := strings.Contains(board, "<td>published: LiveIdeaBench (Ruan et al.)</td><td>google/gemini-pro-1.5</td>")
			notShown := strings.Contains(board, "Published numbers of LiveIdeaBench (Ruan et al.) are not shown") && strings.Contains(board, tc.why)
			if published != tc.comparable || notShown == tc.comparable {
				t.Errorf("leaderboard: published rows %v, reason why not %v; want published %v\n%s", published, notShown, tc.comparable, board)
			}
		})
	}
}

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
		if r := halu(t, f, cache, args...); r.code != exitOK {
			t.Fatalf("%s: exit %d: %s", tc.name, r.code, r.stderr)
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
func figureFromLong(t *testing.T, rec map[string]string) runner.Figure {
	t.Helper()
	num := func(s string) runner.Num {
		if s == "" {
			return runner.Num(math.NaN())
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("long CSV: %q is not a number", s)
		}
		return runner.Num(v)
	}
	n, err1 := strconv.Atoi(rec["n"])
	u, err2 := strconv.Atoi(rec["unscored"])
	if err1 != nil || err2 != nil {
		t.Fatalf("long CSV: n %q, unscored %q", rec["n"], rec["unscored"])
	}
	return runner.Figure{Model: rec["model"], Group: rec["group"], Metric: rec["metric"], Estimate: num(rec["estimate"]),
		Lo: num(rec["lo"]), Hi: num(rec["hi"]), N: n, Unscored: u, Percent: rec["percent"] == "true"}
}
