package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"halu/localmodels/fakeollama"
)

// chromium finds a headless-capable Chromium. Without one the test is
// skipped on a developer's machine and fails in CI (CI set), where .ci/run
// installs Debian's chromium.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("CI is set and no chromium is installed (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH")
	return ""
}

// headless runs Chromium on a local file with one extra mode flag
// (--dump-dom or --screenshot=FILE) and returns its standard output: for
// --dump-dom, the DOM after every script that could run has run.
func headless(t *testing.T, bin, page, mode string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--window-size=1280,2400", mode, "file://"+page)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", mode, err, stderr.String())
	}
	return string(out)
}

// TestReportInChromium opens a report of a model that answers with script
// and markup in a real browser: the payload must show as text, no script may
// run, and the tables and charts must be in the rendered page. A control page
// that does run the same script proves the check can see it.
func TestReportInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()

	control := filepath.Join(dir, "control.html")
	os.WriteFile(control, []byte("<!doctype html><html><body>"+xssPayload+"</body></html>"), 0o644)
	if dom := headless(t, bin, control, "--dump-dom"); !strings.Contains(dom, `data-xss="`) {
		t.Fatalf("control page: the payload's script did not run, so the check below would prove nothing:\n%s", dom)
	}

	f := newFake(t)
	cache := t.TempDir()
	run := filepath.Join(dir, "run")
	if r := halu(t, f, cache, "run", "smoke", "--models", "xss", "--judges", "judge,bad", "--limit", "2", "--out", run); r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	page := filepath.Join(dir, "report.html")
	if r := halu(t, f, cache, "report", run, "--html", page); r.code != exitOK {
		t.Fatalf("report: exit %d: %s", r.code, r.stderr)
	}
	dom := headless(t, bin, page, "--dump-dom")
	// The payload's text names the attribute too; only the attribute set
	// on an element (data-xss="…") means a script ran.
	if strings.Contains(dom, `data-xss="`) {
		t.Fatal("a script from the model's answer ran in the report")
	}
	for _, want := range []string{"<svg", "<table", "&lt;script&gt;document.body.setAttribute(", "&lt;/table&gt;"} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered report lacks %q", want)
		}
	}

	screenshot(t, bin, page, "report-xss.png")
}

// screenshot saves a screenshot of page as name in $HALU_ARTEFACTS (CI
// keeps it), else in a temporary directory, and checks it is not blank.
func screenshot(t *testing.T, bin, page, name string) {
	t.Helper()
	shots := os.Getenv("HALU_ARTEFACTS")
	if shots == "" {
		shots = t.TempDir()
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(shots, name)
	headless(t, bin, page, "--screenshot="+shot)
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot %s missing or blank: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}

// BenchmarkReportOf1000Items makes the report of a 1,000-item ideas run
// (one model, three critics, fluency pairs) and opens it in headless
// Chromium: it reports the page's size and the time Chromium takes to load
// it, measured in the page (an iframe's load event, from a harness page
// that may run script; the report itself runs none) and as the wall-clock
// time of a headless --dump-dom beyond that of an empty page.
func BenchmarkReportOf1000Items(b *testing.B) {
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		b.Skip("no chromium on PATH")
	}
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		switch {
		case r.Model == "gen":
			return fakeollama.Reply{Content: "Measure the salt content of cloud droplets with drone-borne sensors over " + r.LastUser()[len(r.LastUser())/2:] + " and relate it to rainfall over a season."}
		case strings.Contains(r.LastUser(), "ONLY ANSWER"):
			return fakeollama.Reply{Content: "B"}
		}
		return fakeollama.Reply{Content: `The idea is sound but narrow. {"originality": 6, "feasibility": 5, "clarity": 7}`}
	}, panelModels()...)
	b.Cleanup(srv.Close)
	f := &fakeServer{Server: srv, byKind: map[string]int{}}
	dir := b.TempDir()
	run := filepath.Join(dir, "run")
	if r := haluB(b, f, "run", "ideas", "--models", "gen", "--judges", "j1,j2,j3", "--limit", "1000", "--out", run, "--parallel", "8"); r.code != exitOK {
		b.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	page := filepath.Join(dir, "report.html")
	var size int64
	var inPage, wall, blankWall time.Duration
	blank := filepath.Join(dir, "blank.html")
	os.WriteFile(blank, []byte("<!doctype html><title>blank</title>"), 0o644)
	harness := filepath.Join(dir, "harness.html")
	os.WriteFile(harness, []byte(`<!doctype html><html><head><title>pending</title></head><body><script>
const t0 = performance.now();
const f = document.createElement('iframe');
f.style.width = '1280px'; f.style.height = '2400px';
f.onload = () => { document.title = 'loaded-ms=' + Math.round(performance.now() - t0); };
f.src = 'report.html';
document.body.appendChild(f);
</script></body></html>`), 0o644)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if r := haluB(b, f, "report", run, "--html", page); r.code != exitOK {
			b.Fatalf("report: exit %d: %s", r.code, r.stderr)
		}
		b.StopTimer()
		st, err := os.Stat(page)
		if err != nil {
			b.Fatal(err)
		}
		size = st.Size()
		dom, _ := headlessTimed(b, bin, harness, "--allow-file-access-from-files")
		m := regexp.MustCompile(`loaded-ms=(\d+)`).FindStringSubmatch(dom)
		if m == nil {
			b.Fatalf("the harness saw no load event:\n%s", clipTail(dom))
		}
		ms, _ := strconv.Atoi(m[1])
		inPage = time.Duration(ms) * time.Millisecond
		_, wall = headlessTimed(b, bin, page)
		_, blankWall = headlessTimed(b, bin, blank)
		b.StartTimer()
	}
	b.ReportMetric(float64(size)/(1<<20), "page-MiB")
	b.ReportMetric(float64(inPage.Milliseconds()), "chromium-load-ms")
	b.ReportMetric(float64((wall - blankWall).Milliseconds()), "dump-dom-extra-ms")
}

// haluB runs the command line with a fresh cache, as halu does for a test.
func haluB(b *testing.B, f *fakeServer, args ...string) result {
	b.Helper()
	var out, errb bytes.Buffer
	code := run(append(serverFlags(args, "--ollama", f.Host(), "--cache", b.TempDir(), "--retries", "1"), args...), &out, &errb)
	return result{code, out.String(), errb.String()}
}

func clipTail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

// headlessTimed runs headless Chromium's --dump-dom on page and returns
// the DOM and the wall-clock time the command took.
func headlessTimed(b *testing.B, bin, page string, extra ...string) (string, time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + b.TempDir(), "--window-size=1280,2400"}, extra...)
	args = append(args, "--dump-dom", "file://"+page)
	start := time.Now()
	out, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		b.Fatalf("chromium: %v", err)
	}
	return string(out), time.Since(start)
}

// Text from data files reaches the page too: an ideas keyword (from
// --keywords FILE) and the titles of retrieved documents (in hypo's prompt
// as sent, in the sample browser). A report of runs over payload-laden
// data must show the payloads as text, and a browser must run none.
func TestReportEscapesKeywordsAndTitles(t *testing.T) {
	bin := chromium(t)
	srv := fakeollama.New(suiteReply, panelModels()...)
	t.Cleanup(srv.Close)
	f := &fakeServer{Server: srv, byKind: map[string]int{}}
	dir, cache := t.TempDir(), t.TempDir()

	titled := filepath.Join(dir, "titled.jsonl")
	src, err := os.ReadFile("../../testdata/pubmed/pubmedqa_contexts.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	const titlePayload = `<script>document.body.setAttribute('data-xss','title')</script>`
	os.WriteFile(titled, []byte(strings.ReplaceAll(string(src), `"title": ""`, `"title": "`+strings.ReplaceAll(titlePayload, `'`, `\u0027`)+`"`)), 0o644)
	ix := filepath.Join(dir, "ix")
	if r := halu(t, f, cache, "index", "build", "--out", ix, titled); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	hypo := filepath.Join(dir, "hypo")
	if r := halu(t, f, cache, "run", "hypo", "--models", "gen", "--setting", "lit", "--knowhd", "lit", "--verifier", "self", "--knowledge-fit", "drop", "--index", ix, "--limit", "1", "--out", hypo); r.code != exitOK {
		t.Fatalf("hypo: exit %d: %s", r.code, r.stderr)
	}
	kw := filepath.Join(dir, "keywords.txt")
	os.WriteFile(kw, []byte("quantum <img src=x onerror=document.body.dataset.xss=1> chemistry\n"), 0o644)
	ideas := filepath.Join(dir, "ideas")
	if r := halu(t, f, cache, "run", "ideas", "--models", "gen", "--judges", "j1,j2,j3", "--keywords", kw, "--out", ideas); r.code != exitOK {
		t.Fatalf("ideas: exit %d: %s", r.code, r.stderr)
	}
	page := filepath.Join(dir, "report.html")
	if r := halu(t, f, cache, "report", hypo, ideas, "--html", page); r.code != exitOK {
		t.Fatalf("report: exit %d: %s", r.code, r.stderr)
	}
	html := mustRead(t, page)
	for _, want := range []string{"&lt;script&gt;document.body.setAttribute(&#39;data-xss&#39;,&#39;title&#39;)", "quantum &lt;img src=x onerror=document.body.dataset.xss=1&gt; chemistry"} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks the payload as text: %s", want)
		}
	}
	if dom := headless(t, bin, page, "--dump-dom"); strings.Contains(dom, `data-xss="`) {
		t.Fatal("a payload from a keyword or a document title ran in the report")
	}
}
