package index

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// A build seals the index it leaves; opened to search, the index is
// checked against its seal from the segments' footers alone: a seal that
// is not whole, one that names other segments, and no seal at all are
// refused, naming what differs; a build removes the seal while it works.
func TestSeal(t *testing.T) {
	dir := t.TempDir()
	if err := build(t, dir, 500, "../testdata/pubmed/pubmedqa_contexts.jsonl").Close(); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSeal(dir)
	if err != nil || len(s.Segments) == 0 || s.Docs != 1000 || len(s.Digest) != 64 {
		t.Fatalf("seal %+v: %v", s, err)
	}
	l, err := OpenLiterature(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := l.Stats(context.Background()); st.Digest != s.Digest {
		t.Errorf("halu index stats: digest %q, sealed %q", st.Digest, s.Digest)
	}
	if err := l.Verify(context.Background()); err != nil {
		t.Errorf("a sound index: %v", err)
	}
	if _, err := l.Build(context.Background(), nil, BuildOptions{}); err == nil {
		t.Error("a build of an index opened to search")
	}
	l.Close()
	orig, _ := os.ReadFile(SealPath(dir))
	reseal := func(change func(*Seal)) {
		var x Seal
		json.Unmarshal(orig, &x)
		change(&x)
		x.Digest = x.digest()
		b, _ := json.Marshal(x)
		os.WriteFile(SealPath(dir), b, 0o644)
	}
	for _, tc := range []struct {
		name  string
		write func()
		want  string
	}{
		{"not whole", func() { os.WriteFile(SealPath(dir), orig[:len(orig)/2], 0o644) }, "is not whole"},
		{"another size", func() { reseal(func(x *Seal) { x.Segments[0].Size++ }) }, "bytes, sealed at"},
		{"another segment", func() { reseal(func(x *Seal) { x.Segments[0].Name = "000000000099.zap" }) }, "is gone"},
		{"other documents", func() { reseal(func(x *Seal) { x.Docs = 997 }) }, "sealed with 997"},
		{"no seal", func() { os.Remove(SealPath(dir)) }, "no " + SealFile},
	} {
		tc.write()
		_, err := OpenLiterature(dir, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !(errors.Is(err, ErrDamaged) || errors.Is(err, ErrUnsealed)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	os.WriteFile(SealPath(dir), orig, 0o644)
	if l, err := OpenLiterature(dir, false); err != nil {
		t.Errorf("the seal restored: %v", err)
	} else {
		l.Close()
	}
}
