package rundir

import (
	"slices"
	"testing"
)

// Every item lands in exactly one shard, the shards differ in size by one
// at most, and the split is the same every time it is made.
func TestShardsPartitionTheItems(t *testing.T) {
	for _, tc := range []struct{ items, n int }{{0, 3}, {1, 3}, {7, 3}, {120, 4}, {2000, 4}, {5, 5}, {9, 1}} {
		for _, seed := range []uint64{0, ShardSeed, 42} {
			count := make([]int, tc.items)
			var sizes []int
			for i := 1; i <= tc.n; i++ {
				sh := &Shard{I: i, N: tc.n, Seed: seed}
				held := sh.Holds(tc.items)
				if again := sh.Holds(tc.items); !slices.Equal(held, again) {
					t.Errorf("%d items, shard %s seed %d: two calls, two splits", tc.items, sh, seed)
				}
				size := 0
				for k, in := range held {
					if in {
						count[k]++
						size++
					}
				}
				sizes = append(sizes, size)
			}
			for k, c := range count {
				if c != 1 {
					t.Errorf("%d items in %d shards, seed %d: item %d in %d shards", tc.items, tc.n, seed, k, c)
				}
			}
			if slices.Max(sizes)-slices.Min(sizes) > 1 {
				t.Errorf("%d items in %d shards, seed %d: sizes %v", tc.items, tc.n, seed, sizes)
			}
		}
	}
}

// Seed 0 is the list's own order (item k in shard k mod N + 1), as shards
// made before the seed was recorded were split. On a list that runs four
// models in turn, that gives shard 1 the first model's items alone; the
// seeded order gives every shard each model's share, within a few items.
func TestShardSeedBalancesModels(t *testing.T) {
	const items, n, models = 2000, 4, 4
	old := &Shard{I: 2, N: n}
	for k, in := range old.Holds(items) {
		if in != (k%n == 1) {
			t.Fatalf("seed 0: item %d held %v", k, in)
		}
	}
	for i := 1; i <= n; i++ {
		per := make([]int, models)
		for k, in := range (&Shard{I: i, N: n, Seed: ShardSeed}).Holds(items) {
			if in {
				per[k%models]++
			}
		}
		// 500 items a shard, 125 of each model expected; a binomial's
		// spread is about ±10.
		for m, c := range per {
			if c < 95 || c > 155 {
				t.Errorf("shard %d/%d holds %d of model %d's 500 items (want about 125)", i, n, c, m)
			}
		}
	}
	if sh, err := ParseShard("3/4"); err != nil || sh.Seed != ShardSeed {
		t.Errorf("ParseShard: %+v %v: a new shard is ordered by ShardSeed", sh, err)
	}
}
