package engine

import (
	"hash/fnv"
	"math/rand/v2"
	"sort"
)

// StratifiedSample draws n of items, seeded, so that each stratum (key)
// keeps its share of the whole: each gets n·size/total rounded down, and
// the rest go to the strata with the largest remainders (ties by name).
// Within a stratum the draw is a seeded shuffle; the sample keeps the
// items' order. n ≥ len(items) returns them all. A sample of a file sorted
// by label (TruthHypo's is) then holds every label in its proportion,
// where the first n rows would hold one.
func StratifiedSample[T any](items []T, n int, seed int, key func(T) string) []T {
	if n >= len(items) || n < 0 {
		return items
	}
	byKey := map[string][]int{}
	var keys []string
	for i, it := range items {
		k := key(it)
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], i)
	}
	sort.Strings(keys)
	quota := map[string]int{}
	type rem struct {
		key  string
		frac float64
	}
	var rems []rem
	left := n
	for _, k := range keys {
		exact := float64(n) * float64(len(byKey[k])) / float64(len(items))
		quota[k] = int(exact)
		left -= quota[k]
		rems = append(rems, rem{k, exact - float64(quota[k])})
	}
	sort.SliceStable(rems, func(i, j int) bool { return rems[i].frac > rems[j].frac })
	for i := 0; i < left; i++ {
		quota[rems[i].key]++
	}
	keep := make([]bool, len(items))
	for _, k := range keys {
		h := fnv.New64a()
		h.Write([]byte(k))
		idx := append([]int(nil), byKey[k]...)
		rng := rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
		rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
		for _, i := range idx[:quota[k]] {
			keep[i] = true
		}
	}
	out := make([]T, 0, n)
	for i, it := range items {
		if keep[i] {
			out = append(out, it)
		}
	}
	return out
}
