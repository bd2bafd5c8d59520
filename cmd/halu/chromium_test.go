package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

	shots := os.Getenv("HALU_ARTEFACTS")
	if shots == "" {
		shots = dir
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(shots, "report-xss.png")
	headless(t, bin, page, "--screenshot="+shot)
	if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
		t.Fatalf("screenshot %s missing or blank: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}
