package judging_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneReadingPath keeps one reading path: every judge reply of a run is
// cleaned and read by judging.Read (which JudgeWith calls, and which the
// reply corpus test drives), every verdict in a model's answer by
// judging.Answer. It fails when program code (not tests) cleans a reply
// another way — calling a cleaning step (Unquote, DropCutWord, Revision)
// outside Read and Answer, or removing reasoning (StripReasoning) anywhere
// but where a suite extracts content rather than a verdict.
func TestOneReadingPath(t *testing.T) {
	// Where a cleaning step may be called, by package and function.
	allowed := map[string]map[string][]string{
		"judging": {
			"Read":       {"StripReasoning", "Unquote", "DropCutWord", "Revision", "readReply"},
			"Answer":     {"StripReasoning", "Revision"},
			"DecodeJSON": {"StripReasoning"}, // a JSON reader inside Read's reading: reasoning already gone
			"judgeOnce":  {"Read"},
		},
		// Content, not a verdict: an idea's text, a hypothesis statement.
		"ideas": {"ExtractIdea": {"StripReasoning"}, "ExtractIdeaLine": {"StripReasoning"}, "generate": {"StripReasoning"}},
		"hypo":  {"ParseHypothesis": {"StripReasoning"}},
	}
	steps := map[string]bool{"StripReasoning": true, "Unquote": true, "DropCutWord": true, "Revision": true, "readReply": true, "Read": true}
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	calls := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		pkg := f.Name.Name
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				name := ""
				switch f := call.Fun.(type) {
				case *ast.Ident:
					if pkg == "judging" {
						name = f.Name
					}
				case *ast.IndexExpr: // a generic call: readReply[T](…)
					if id, ok := f.X.(*ast.Ident); ok && pkg == "judging" {
						name = id.Name
					}
				case *ast.SelectorExpr:
					if x, ok := f.X.(*ast.Ident); ok && x.Name == "judging" {
						name = f.Sel.Name
					}
				}
				if !steps[name] {
					return true
				}
				calls++
				for _, ok := range allowed[pkg][fn.Name.Name] {
					if ok == name {
						return true
					}
				}
				t.Errorf("%s: %s.%s calls the reading step %s: a second reading path (judge replies are read by judging.Read, answers' verdicts by judging.Answer)",
					fset.Position(call.Pos()), pkg, fn.Name.Name, name)
				return true
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls < 8 {
		t.Fatalf("found %d calls of reading steps: the walk did not see the program", calls)
	}
}
