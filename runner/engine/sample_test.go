package engine

import (
	"fmt"
	"strings"
	"testing"
)

// A sample keeps every stratum's share (largest remainder), is the same for
// the same seed, differs for another, and keeps the items' order.
func TestStratifiedSample(t *testing.T) {
	// 60 A, 30 B, 10 C in file order, sorted by label.
	var items []string
	for i := 0; i < 100; i++ {
		l := "A"
		if i >= 60 {
			l = "B"
		}
		if i >= 90 {
			l = "C"
		}
		items = append(items, fmt.Sprintf("%s%02d", l, i))
	}
	key := func(s string) string { return s[:1] }
	for _, tc := range []struct {
		n       int
		a, b, c int
	}{{10, 6, 3, 1}, {15, 9, 5, 1}, {7, 4, 2, 1}, {100, 60, 30, 10}} {
		got := StratifiedSample(items, tc.n, 1, key)
		cnt := map[string]int{}
		for _, s := range got {
			cnt[key(s)]++
		}
		if len(got) != tc.n || cnt["A"] != tc.a || cnt["B"] != tc.b || cnt["C"] != tc.c {
			t.Errorf("n=%d: %d drawn, %v; want %d/%d/%d", tc.n, len(got), cnt, tc.a, tc.b, tc.c)
		}
		for i := 1; i < len(got); i++ {
			if got[i-1] > got[i] {
				t.Fatalf("n=%d: order not kept: %v", tc.n, got)
			}
		}
	}
	a := strings.Join(StratifiedSample(items, 10, 1, key), ",")
	if b := strings.Join(StratifiedSample(items, 10, 1, key), ","); a != b {
		t.Error("same seed, different sample")
	}
	if c := strings.Join(StratifiedSample(items, 10, 2, key), ","); a == c {
		t.Error("another seed, same sample")
	}
}
