package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/runner"
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
			args := append([]string{"run", "ideas", "--models", "gen", "--judges", "j1,j2,j3", "--keywords", "2", "--out", run}, tc.args...)
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
