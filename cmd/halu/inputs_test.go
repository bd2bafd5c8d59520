package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file kg import refuses creates no store (an empty one once read as a
// graph without edges); a damaged kg.db is an input error (exit 2) for kg
// query and for a hypo run, named, never a panic's stack trace, and the
// run stops before any model call.
func TestKGInputErrors(t *testing.T) {
	f := newFake(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "notes.txt")
	os.WriteFile(bad, []byte("these are my notes\nnothing here is a relation\n"), 0o644)
	refused := filepath.Join(dir, "refused")
	if r := halu(t, f, t.TempDir(), "kg", "import", "--out", refused, bad); r.code != exitUsage || !strings.Contains(r.stderr, "notes.txt") {
		t.Errorf("refused import: exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(refused); !os.IsNotExist(err) {
		t.Errorf("a refused import left %s (%v)", refused, err)
	}
	kgDir := filepath.Join(dir, "kg")
	if r := halu(t, f, t.TempDir(), "kg", "import", "--out", kgDir, "../../testdata/kg/biored_train_sample.pubtator"); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	db := filepath.Join(kgDir, "kg.db")
	b, _ := os.ReadFile(db)
	os.WriteFile(db, b[:len(b)/3], 0o644)
	r := halu(t, f, t.TempDir(), "kg", "query", kgDir, "type II diabetes")
	if r.code != exitUsage || !strings.Contains(r.stderr, "kg.db is damaged") || strings.Contains(r.stderr, "goroutine") {
		t.Errorf("kg query on a cut kg.db: exit %d: %s", r.code, r.stderr)
	}
	os.WriteFile(db, nil, 0o644)
	calls := len(f.Chats())
	r = halu(t, f, t.TempDir(), "run", "hypo", "--models", "gen", "--setting", "kg", "--kg", kgDir, "--limit", "1", "--out", filepath.Join(dir, "run"))
	if r.code != exitUsage || !strings.Contains(r.stderr, "is empty") || len(f.Chats()) != calls {
		t.Errorf("hypo on an empty kg.db: exit %d, %d model calls: %s", r.code, len(f.Chats())-calls, r.stderr)
	}
	if st, err := os.Stat(db); err != nil || st.Size() != 0 {
		t.Errorf("the empty kg.db was rewritten: %v", err)
	}
}
