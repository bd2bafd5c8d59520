package zapv17

import (
	"os"
	"regexp"
	"testing"
)

// TestZapxIsTheOneChecked fails when go.mod's zapx/v17 is not the release
// this package's layout was checked against (CheckedZapx).
func TestZapxIsTheOneChecked(t *testing.T) {
	b, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/blevesearch/zapx/v17 (v\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod names no github.com/blevesearch/zapx/v17")
	}
	if got := string(m[1]); got != CheckedZapx {
		t.Fatalf("go.mod has zapx/v17 %s; this package's layout was checked against %s: re-check it (see CheckedZapx) before using it", got, CheckedZapx)
	}
}
