package engine

import (
	"testing"

	"halu/localmodels"
)

// A reply asked again is the recorded one only when its text and, when
// asked for, its tokens' log-probabilities are; an embedding is identical
// bit for bit and the same reading within EmbedTolerance; the draw keeps
// about its share of keys and is the same for one seed.
func TestReaskComparesWhatTheCallReturned(t *testing.T) {
	lp := func(v float64) []localmodels.TokenLogprob {
		return []localmodels.TokenLogprob{{Token: "a", Logprob: v}}
	}
	for _, c := range []struct {
		name string
		a, b localmodels.ChatResponse
		same bool
	}{
		{"same text", localmodels.ChatResponse{Content: "x"}, localmodels.ChatResponse{Content: "x"}, true},
		{"other text", localmodels.ChatResponse{Content: "x"}, localmodels.ChatResponse{Content: "y"}, false},
		{"same log-probabilities", localmodels.ChatResponse{Content: "x", Logprobs: lp(-0.5)}, localmodels.ChatResponse{Content: "x", Logprobs: lp(-0.5)}, true},
		{"other log-probabilities", localmodels.ChatResponse{Content: "x", Logprobs: lp(-0.5)}, localmodels.ChatResponse{Content: "x", Logprobs: lp(-0.6)}, false},
		{"none and empty", localmodels.ChatResponse{Content: "x"}, localmodels.ChatResponse{Content: "x", Logprobs: []localmodels.TokenLogprob{}}, true},
	} {
		if got := sameReply(c.a, c.b); got != c.same {
			t.Errorf("%s: same %v, want %v", c.name, got, c.same)
		}
	}
	for _, c := range []struct {
		name            string
		a, b            []float32
		identical, near bool
	}{
		{"bit for bit", []float32{1, 2, 3}, []float32{1, 2, 3}, true, true},
		{"last bits", []float32{1, 2, 3}, []float32{1, 2, 3.0000002}, false, true},
		{"another direction", []float32{1, 2, 3}, []float32{3, 2, 1}, false, false},
		{"another length", []float32{1, 2}, []float32{1, 2, 3}, false, false},
	} {
		if id, near := sameEmbedding(c.a, c.b); id != c.identical || near != c.near {
			t.Errorf("%s: identical %v close %v, want %v %v", c.name, id, near, c.identical, c.near)
		}
	}
	r := &Reask{Share: 0.1, Seed: 7}
	n := 0
	for i := range 10000 {
		k := Key(i)
		if r.Draws(k) {
			n++
		}
		if r.Draws(k) != (&Reask{Share: 0.1, Seed: 7}).Draws(k) {
			t.Fatal("the draw is not the same for one seed")
		}
	}
	if n < 900 || n > 1100 {
		t.Errorf("drew %d of 10000 keys at share 0.1", n)
	}
	if (*Reask)(nil).Draws("k") || !(&Reask{Share: 1}).Draws("k") {
		t.Error("nil draws, or share 1 does not")
	}
}
