package hypo

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"halu/runner/rundir"
)

// TruthHypo's test items (edges_test.tsv), checked line by line before any
// call.

// TestItem is one TruthHypo question.
type TestItem struct {
	XID, YID, XType, YType, RelType, Relation, Question string
}

// LoadTestItems reads edges_test.tsv (x_id, y_id, x_type, y_type, rel_type,
// relation, question); path "" reads the bundled 2,024 items. Every value
// the scores depend on is checked (an rundir.InputError naming the line):
// the task is one of Tasks, its entity types are the task's, the gold
// relation is one of the task's labels, the IDs are "Type|ID" of those
// types, the question is text, and no pair of entities is asked twice in
// one task; a file without items is refused.
func LoadTestItems(path string) ([]TestItem, error) {
	var r io.Reader
	name := path
	if path == "" {
		b, _ := assets.ReadFile("data/edges_test.tsv")
		r, name = bytes.NewReader(b), "edges_test.tsv (bundled)"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("hypo data: %w", err)
		}
		defer f.Close()
		r = f
	}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	var out []TestItem
	seen := rundir.IDs{}
	for line := 1; s.Scan(); line++ {
		if line == 1 || strings.TrimSpace(s.Text()) == "" {
			continue
		}
		c := strings.Split(s.Text(), "\t")
		if len(c) < 7 {
			return nil, rundir.BadInput(name, line, "%d columns, want 7 (x_id, y_id, x_type, y_type, rel_type, relation, question)", len(c))
		}
		it := TestItem{c[0], c[1], c[2], c[3], c[4], c[5], c[6]}
		if err := checkTestItem(it); err != nil {
			return nil, rundir.BadInput(name, line, "%v", err)
		}
		if err := seen.Add(name, line, "entity pair", taskName(it.RelType)+"/"+it.XID+"/"+it.YID); err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	if err := s.Err(); err != nil {
		return nil, rundir.BadInput(name, 0, "%v", err)
	}
	if len(out) == 0 {
		return nil, rundir.BadInput(name, 0, "no test items (a header line, then one item per line)")
	}
	return out, nil
}

// taskTypes are the entity types of each task's pair, as the questions
// name them (x first).
var taskTypes = map[string][2]string{"Chemical & Gene": {"Chemical", "Gene"}, "Disease & Gene": {"Disease", "Gene"}, "Gene & Gene": {"Gene", "Gene"}}

// checkTestItem refuses an item whose task, types, gold label, IDs or
// question the suite cannot score as the paper does.
func checkTestItem(it TestItem) error {
	types, ok := taskTypes[it.RelType]
	if !ok {
		return fmt.Errorf("rel_type %q is not a TruthHypo task (Chemical & Gene, Disease & Gene, Gene & Gene)", it.RelType)
	}
	if it.XType != types[0] || it.YType != types[1] {
		return fmt.Errorf("entity types %s and %s: task %q pairs %s and %s", it.XType, it.YType, it.RelType, types[0], types[1])
	}
	if !slices.Contains(Labels(it.RelType), it.Relation) {
		return fmt.Errorf("relation %q is not a label of task %q (%s)", it.Relation, it.RelType, strings.Join(Labels(it.RelType), ", "))
	}
	for _, p := range [][2]string{{it.XID, it.XType}, {it.YID, it.YType}} {
		typ, id, ok := strings.Cut(p[0], "|")
		if !ok || typ != p[1] || strings.TrimSpace(id) == "" {
			return fmt.Errorf("entity ID %q: want %s|ID", p[0], p[1])
		}
	}
	return rundir.CheckText("question", it.Question)
}
