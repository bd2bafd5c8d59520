package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// xssPayload is a model answer that would run script if a report pasted it
// into HTML unescaped.
const xssPayload = `<script>document.body.setAttribute('data-xss','ran')</script></table></pre><img src=x onerror="document.body.setAttribute('data-xss','img')">`

func TestReportIsDeterministicAndEscapesModelText(t *testing.T) {
	f := newFake(t)
	cache := t.TempDir()
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if r := halu(t, f, cache, "run", "smoke", "--models", "xss", "--judges", "judge,bad", "--questions", "2", "--out", run); r.code != exitOK {
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
