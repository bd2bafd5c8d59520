package rundir

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is one of N slices of a run's items (halu run --shard I/N): item k
// of the suite's list, in its order, belongs to shard k mod N + 1. The
// slices are disjoint, cover every item, differ in size by one at most,
// and depend only on the item list, so the same command on N machines
// splits the work with no coordination; Merge joins the N runs.
type Shard struct {
	I int `json:"i"`
	N int `json:"n"`
}

// ParseShard reads "I/N" (1 ≤ I ≤ N).
func ParseShard(s string) (*Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return nil, fmt.Errorf("shard %q: want I/N with 1 ≤ I ≤ N (e.g. 1/4)", s)
	}
	return &Shard{I: i, N: n}, nil
}

func (sh *Shard) String() string { return fmt.Sprintf("%d/%d", sh.I, sh.N) }
