package main

import (
	"path/filepath"
	"strings"
	"testing"

	"halu/localmodels/fakeollama"
)

// TestRunCFaithReleasedLayout: `halu run cfaith` on a directory in the
// released C-FAITH layout (testdata/cfaith/released, written by hand after
// the published schema) evaluates it and prints Tables 5 and 6.
func TestRunCFaithReleasedLayout(t *testing.T) {
	f := &fakeServer{byKind: map[string]int{}}
	f.Server = fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		u := r.LastUser()
		switch {
		case r.Model == "judge":
			return fakeollama.Reply{Content: "[冲突检测]：冲突"}
		case strings.Contains(u, "四个可能的选项"):
			return fakeollama.Reply{Content: "答案：B"}
		case strings.Contains(u, "请判断这个回答是否正确"):
			return fakeollama.Reply{Content: "正确"}
		}
		return fakeollama.Reply{Content: "不知道。"}
	}, fakeollama.Model{Name: "gen:latest", Digest: "dg", ParameterCount: 1e9}, fakeollama.Model{Name: "judge:latest", Digest: "dj", ParameterCount: 1e9})
	t.Cleanup(f.Close)
	data := filepath.Join("..", "..", "testdata", "cfaith", "released")
	res := halu(t, f, t.TempDir(), "run", "cfaith", "--data", data, "--models", "gen", "--judge", "judge", "--out", filepath.Join(t.TempDir(), "run"))
	if res.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	for _, want := range []string{
		"C-FAITH Table 5", "C-FAITH Table 6", "released C-FAITH layout",
		// 3 generative answers, all judged in conflict; choice B is right
		// for the first item and wrong for the second; true/false always
		// says 正确: the 3 hallucinated statements are accepted.
		"100.00 (n=3)", "50.00 (n=2)", "50.00 (n=6)",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, res.stdout)
		}
	}
}
