package registry_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// fsCalls are the os functions that touch the file system.
var fsCalls = map[string]bool{
	"Chmod": true, "Chtimes": true, "Create": true, "CreateTemp": true, "Link": true, "Lstat": true,
	"Mkdir": true, "MkdirAll": true, "MkdirTemp": true, "Open": true, "OpenFile": true, "ReadDir": true,
	"ReadFile": true, "Remove": true, "RemoveAll": true, "Rename": true, "Stat": true, "Symlink": true,
	"Truncate": true, "WriteFile": true, "DirFS": true,
}

// TestOneWriterOfRunDirectories: runner/rundir is the one package that
// touches a run directory's files. Every other call of the os package's
// file functions in the program (cmd and runner, tests aside) is listed
// here by file and function with what it touches — none of them a run
// directory — so a new one must be looked at and added: a run directory's
// file read, written or removed elsewhere fails this test, and so does a
// listed call that is gone (the list stays true).
func TestOneWriterOfRunDirectories(t *testing.T) {
	const input = "reads an input file the user names"
	allowed := map[string]string{
		"cmd/halu/control.go:readRunFile":            "reads a run file (--run-file) the user names",
		"cmd/halu/control.go:runFileSuite":           "reads a run file the user names, for its suite",
		"cmd/halu/doctor.go:newDoctorCmd":            "doctor: whether the paths a run would read exist",
		"cmd/halu/doctor.go:writable":                "doctor: whether the response cache's directory takes a file (made and removed)",
		"cmd/halu/main.go:cpuProfile":                "writes the CPU profile (--cpu-profile)",
		"cmd/halu/models.go:newTinyCmd":              "models tiny: refuses to overwrite its --out GGUF",
		"cmd/halu/slurm.go:newSlurmStatusCmd":        "Slurm: reads the merge job's log",
		"cmd/halu/withollama.go:newWithOllamaCmd":    "with-ollama: the server's own models directory, log and address file",
		"cmd/halu/withollama.go:ollamaBin":           "with-ollama: finds the Ollama binary",
		"runner/cfaith/aggregate.go:ReadDataset":     "reads a C-FAITH dataset directory",
		"runner/cfaith/aggregate.go:scanItems":       input,
		"runner/cfaith/build.go:ReadDocs":            input,
		"runner/cfaith/build.go:readCSVDocs":         input,
		"runner/cfaith/eval.go:Suite.Datasets":       "finds the C-FAITH dataset directories named",
		"runner/cfaith/pipeline.go:LoadRules":        input,
		"runner/cfaith/released.go:isReleased":       "tells a released C-FAITH dataset by its files",
		"runner/cfaith/released.go:scanRecords":      input,
		"runner/engine/cache.go:Cache.cleanTemp":     "the response cache",
		"runner/engine/cache.go:Cache.get":           "the response cache",
		"runner/engine/cache.go:Cache.file":          "the response cache",
		"runner/engine/cache.go:Cache.newPack":       "the response cache",
		"runner/engine/cache.go:Cache.ownStill":      "the response cache",
		"runner/engine/cache.go:Cache.placeFile":     "the response cache",
		"runner/engine/cache.go:Cache.readPack":      "the response cache",
		"runner/engine/cache.go:Cache.readIndexFile": "the response cache",
		"runner/engine/cache.go:Cache.rescan":        "the response cache",
		"runner/engine/cache.go:OpenCache":           "the response cache",
		"runner/engine/crash.go:Engine.crashLines":   "reads the log of a server halu started",
		"runner/hic/hic.go:LoadQuestions":            input,
		"runner/hic/hic.go:loadHuman":                input,
		"runner/hypo/input.go:LoadTestItems":         input,
		"runner/hypo/hypo.go:New":                    input,
		"runner/hypo/hypo.go:fileExists":             "whether a KG or index path the user names exists",
		"runner/ideas/ideas.go:Config.Settings":      "whether the keyword file named exists",
		"runner/ideas/ideas.go:New":                  input,
		"runner/ideas/ideas.go:loadExternal":         input,
		"runner/intent/input.go:LoadInputs":          input,
		"runner/intent/make.go:ReadArticles":         input,
		"runner/judgeval/labels.go:readLabels":       "reads the labels file people filled",
		"runner/judgeval/sets.go:LoadSet":            input,
		"runner/report/text.go:CSV":                  "report output: the CSV tables directory",
		"runner/report/text.go:replaceable":          "report output: what the CSV directory holds before it is replaced",
		"runner/slurm/slurm.go:Jobs.rebuild":         "Slurm: the submission's scripts",
		"runner/slurm/slurm.go:ReadJobs":             "Slurm: the submission's jobs.json",
		"runner/slurm/slurm.go:WriteScripts":         "Slurm: the submission's scripts",
		"runner/slurm/slurm.go:lastAttempt":          "Slurm: a task's log",
		"runner/slurm/slurm.go:lock":                 "Slurm: the submission's lock",
	}
	root := filepath.Join("..", "..")
	found := map[string]bool{}
	var unexpected []string
	for _, top := range []string{"cmd", "runner"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if rel == "runner/rundir" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return err
			}
			osName := ""
			for _, imp := range f.Imports {
				if imp.Path.Value == `"os"` {
					osName = "os"
					if imp.Name != nil {
						osName = imp.Name.Name
					}
				}
			}
			if osName == "" {
				return nil
			}
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok {
					continue
				}
				name := fn.Name.Name
				if fn.Recv != nil && len(fn.Recv.List) > 0 {
					name = recvName(fn.Recv.List[0].Type) + "." + name
				}
				ast.Inspect(fn, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == osName && fsCalls[sel.Sel.Name] {
						key := rel + ":" + name
						found[key] = true
						if _, ok := allowed[key]; !ok {
							unexpected = append(unexpected, key+" (os."+sel.Sel.Name+")")
						}
					}
					return true
				})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(unexpected)
	for _, u := range slicesCompact(unexpected) {
		t.Errorf("%s: a file-system call outside runner/rundir that this test does not list; a run directory's files go through rundir", u)
	}
	for k := range allowed {
		if !found[k] {
			t.Errorf("%s: listed, but it calls no os file function any more: take it off the list", k)
		}
	}
}

func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr:
		return recvName(x.X)
	}
	return "?"
}

func slicesCompact(xs []string) []string {
	var out []string
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}
