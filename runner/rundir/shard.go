package rundir

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Shard is one of N slices of a run's items (halu run --shard I/N). The
// items, in the suite's order, are put in an order drawn from Seed (a
// seeded shuffle: the same on every machine), and item k of that order
// belongs to shard k mod N + 1. The slices are disjoint, cover every item,
// differ in size by one at most and depend only on the item list and the
// seed, so the same command on N machines splits the work with no
// coordination; Merge joins the N runs, and checks they used one seed.
//
// The shuffle balances the work: a suite's list runs model by model and
// share by share, so every N-th item of it can be one model's (4 models
// under test, 4 shards: shard 1 would run the first model's items alone),
// while a shuffled slice holds each kind of item in its share, and each
// shard's expected work is the same. Seed 0 is the order of the list
// itself, which shards written before the seed was recorded used (a
// resume keeps its run's own).
type Shard struct {
	I    int    `json:"i"`
	N    int    `json:"n"`
	Seed uint64 `json:"seed,omitempty"`
}

// ShardSeed is the seed of a new shard's order. It is fixed, not drawn:
// N machines given the same command must agree on it.
const ShardSeed = 1

// ParseShard reads "I/N" (1 ≤ I ≤ N), ordered by ShardSeed.
func ParseShard(s string) (*Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return nil, fmt.Errorf("shard %q: want I/N with 1 ≤ I ≤ N (e.g. 1/4)", s)
	}
	return &Shard{I: i, N: n, Seed: ShardSeed}, nil
}

func (sh *Shard) String() string { return fmt.Sprintf("%d/%d", sh.I, sh.N) }

// Holds reports which of n items, by their position in the suite's list,
// belong to the shard (all of them for a nil shard).
func (sh *Shard) Holds(n int) []bool {
	in := make([]bool, n)
	if sh == nil || sh.N <= 1 {
		for k := range in {
			in[k] = true
		}
		return in
	}
	order := make([]int, n)
	for k := range order {
		order[k] = k
	}
	if sh.Seed != 0 {
		rand.New(rand.NewPCG(sh.Seed, 0x68616c75)).Shuffle(n, func(a, b int) { order[a], order[b] = order[b], order[a] })
	}
	for pos, k := range order {
		if pos%sh.N == sh.I-1 {
			in[k] = true
		}
	}
	return in
}
