package registry_test

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// The import rules ARCHITECTURE.md states, checked against `go list`: each
// package of the module may import, of the module's own packages, only
// those named here. A forbidden import — or a new package no rule names —
// fails, naming both packages: the map of the code stays true.
func TestImportRules(t *testing.T) {
	base := []string{"embed", "index", "index/kg", "localmodels", "metrics"}
	core := []string{"runner/engine", "runner/judging", "runner/rundir", "runner/setting", "runner/summary"}
	// The suites are the packages the registry lists (registry.go): a
	// suite registered there is known here, with nothing added.
	var suites []string
	reg, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, "halu/runner/registry").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, imp := range strings.Fields(string(reg)) {
		if p, ok := strings.CutPrefix(imp, "halu/"); ok && p != "runner/engine" {
			suites = append(suites, p)
		}
	}
	if len(suites) < 7 {
		t.Fatalf("the registry imports %d suite packages: %v", len(suites), suites)
	}
	all := func(lists ...[]string) []string {
		var out []string
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	allowed := map[string][]string{
		// Below the runner: no package imports the runner or cmd.
		"embed": nil, "metrics": nil, "localmodels": nil, "localmodels/fakeollama": nil, "localmodels/fakeopenai": nil,
		"index/internal/zapv17": nil, "index": {"index/internal/zapv17"}, "index/kg": {"index"},
		// The runner's core, layer by layer.
		"runner/setting":           nil,
		"runner/rundir":            {"localmodels", "metrics", "runner/setting"},
		"runner/judging":           {"localmodels", "runner/rundir", "runner/setting"},
		"runner/summary":           {"localmodels", "metrics", "runner/rundir", "runner/setting"},
		"runner/engine":            {"localmodels", "metrics", "runner/judging", "runner/rundir", "runner/setting", "runner/summary"},
		"runner/engine/enginetest": {"localmodels", "runner/engine"},
		// Handing a sharded run to a cluster: it reads run directories.
		"runner/slurm": {"runner/rundir"},
		// The list of suites, and the reports (which find a run's suite).
		"runner/registry": all(suites, []string{"runner/engine"}),
		"runner/report":   all(base, core, []string{"runner/registry", "runner/judgeval"}),
		"cmd/halu":        all(base, core, suites, []string{"runner/registry", "runner/report", "runner/slurm"}),
		// The e2e benches' measuring tool: a command's peak memory.
		"e2e/peakrss": nil,
	}
	for _, s := range suites {
		allowed[s] = all(base, core)
	}
	// HIC-Bench's judge, which a hic run and the judge validation both ask
	// (so a judge is measured with the very prompt and reading a run
	// uses): no suite imports another.
	allowed["runner/hic/hicjudge"] = all(base, core)
	allowed["runner/hic"] = append(allowed["runner/hic"], "runner/hic/hicjudge")
	allowed["runner/judgeval"] = append(allowed["runner/judgeval"], "runner/hic/hicjudge")

	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "halu/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], "halu/")
		if pkg == "e2e" {
			continue // tests only (build tag e2e)
		}
		rules, known := allowed[pkg]
		if !known {
			t.Errorf("package %s is named by no import rule: add it to this test and to ARCHITECTURE.md", pkg)
			continue
		}
		ok := map[string]bool{}
		for _, r := range rules {
			ok[r] = true
		}
		var bad []string
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, "halu/") {
				continue
			}
			n++
			if imp = strings.TrimPrefix(imp, "halu/"); !ok[imp] {
				bad = append(bad, imp)
			}
		}
		sort.Strings(bad)
		for _, b := range bad {
			t.Errorf("%s imports %s: a forbidden import (ARCHITECTURE.md's rules)", pkg, b)
		}
	}
	if n < 40 {
		t.Fatalf("go list named %d imports of the module's packages: it did not list the module", n)
	}
}
