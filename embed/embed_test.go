package embed

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

func TestMeanPairwise(t *testing.T) {
	// Pairs of (1,0), (0,1), (1,1): 0, 1/√2, 1/√2 → mean √2/3.
	s := MeanPairwise([][]float32{{1, 0}, {0, 1}, {1, 1}})
	if s.Pairs != 3 || math.Abs(s.Mean-math.Sqrt2/3) > 1e-12 {
		t.Fatalf("%+v", s)
	}
	// One response: no pair, undefined.
	if s := MeanPairwise([][]float32{{1, 0}}); s.Defined() {
		t.Fatalf("one vector: %+v", s)
	}
	// A zero vector (empty answer) is skipped, and counted.
	s = MeanPairwise([][]float32{{1, 0}, {0, 0}, {2, 0}})
	if s.Pairs != 1 || s.Skipped != 2 || s.Mean != 1 {
		t.Fatalf("zero vector: %+v", s)
	}
}

func TestMeanAcross(t *testing.T) {
	// Group 1 {(1,0),(1,0)}, group 2 {(0,1)}: two cross pairs, both 0.
	s := MeanAcross([][][]float32{{{1, 0}, {1, 0}}, {{0, 1}}})
	if s.Pairs != 2 || s.Mean != 0 {
		t.Fatalf("%+v", s)
	}
	// Within-group pairs are not counted: (1,0),(1,0) in one group, (1,0) in the other.
	s = MeanAcross([][][]float32{{{1, 0}, {0, 1}}, {{1, 0}}})
	if s.Pairs != 2 || s.Mean != 0.5 {
		t.Fatalf("%+v", s)
	}
}

type countingEmbedder struct{ calls, texts int }

func (c *countingEmbedder) Embed(_ context.Context, _, model string, texts []string) ([][]float32, error) {
	c.calls++
	c.texts += len(texts)
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{float32(len(texts[i])), 1}
	}
	return out, nil
}

func TestTextsDefaultModel(t *testing.T) {
	e := &countingEmbedder{}
	v, err := Texts(context.Background(), e, "s", "", []string{"a", "bb"})
	if err != nil || len(v) != 2 || e.calls != 1 {
		t.Fatal(v, err, e.calls)
	}
}

func randomVectors(n, dim int) [][]float32 {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([][]float32, n)
	for i := range out {
		out[i] = make([]float32, dim)
		for j := range out[i] {
			out[i][j] = float32(rng.NormFloat64())
		}
	}
	return out
}

// BenchmarkMeanPairwise1000 is the pairwise step at n = 1,000 answers of
// 384-dimensional embeddings (all-minilm's size): 499,500 similarities.
// Compare with BenchmarkEmbed in e2e/ (real embedding calls).
func BenchmarkMeanPairwise1000(b *testing.B) {
	v := randomVectors(1000, 384)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		MeanPairwise(v)
	}
}
