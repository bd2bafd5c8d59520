// Package embed turns texts into sentence embeddings through the local model
// server and measures how alike they are — HIC-Bench's SimCSE-style fluency
// (Flu): the mean pairwise cosine similarity of a model's answers to the
// same question, where lower means more diverse.
//
// Embedding calls go through the engine (engine.Calls.Embed), which batches
// them and caches each vector on disk by (model digest, text).
package embed

import (
	"context"
	"math"
)

// DefaultModel is the embedding model used when none is named: available
// with `ollama pull all-minilm`, or import any GGUF embedding model.
const DefaultModel = "all-minilm"

// Embedder produces embeddings; *engine.Calls is one.
type Embedder interface {
	Embed(ctx context.Context, stage, model string, texts []string) ([][]float32, error)
}

// Texts embeds texts with model through e, for stage.
func Texts(ctx context.Context, e Embedder, stage, model string, texts []string) ([][]float32, error) {
	if model == "" {
		model = DefaultModel
	}
	return e.Embed(ctx, stage, model, texts)
}

// Similarity is a mean similarity over pairs of vectors.
type Similarity struct {
	Mean float64 `json:"mean"`
	// Pairs is how many pairs went into Mean; Skipped how many were left out
	// because a vector was zero (an empty text).
	Pairs   int `json:"pairs"`
	Skipped int `json:"skipped"`
}

// Defined reports whether there was at least one pair to average.
func (s Similarity) Defined() bool { return s.Pairs > 0 }

// unit returns the vectors scaled to length 1, nil for zero vectors.
func unit(vecs [][]float32) [][]float64 {
	out := make([][]float64, len(vecs))
	for i, v := range vecs {
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if n == 0 {
			continue
		}
		n = math.Sqrt(n)
		u := make([]float64, len(v))
		for j, x := range v {
			u[j] = float64(x) / n
		}
		out[i] = u
	}
	return out
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// MeanPairwise is the mean cosine similarity over the n(n−1)/2 unordered
// pairs of vecs: HIC-Bench's Flu for one question's answers. With fewer
// than two vectors there is no pair and the result is undefined (Pairs 0).
// Pairs with a zero vector are skipped and counted.
func MeanPairwise(vecs [][]float32) Similarity {
	u := unit(vecs)
	var s Similarity
	var sum float64
	for i := 0; i < len(u); i++ {
		for j := i + 1; j < len(u); j++ {
			if u[i] == nil || u[j] == nil {
				s.Skipped++
				continue
			}
			sum += dot(u[i], u[j])
			s.Pairs++
		}
	}
	if s.Pairs > 0 {
		s.Mean = sum / float64(s.Pairs)
	}
	return s
}

// MeanAcross is the mean cosine similarity over pairs drawn from different
// groups (HIC-Bench Table 9, "All Answers": similarity of answers to
// different questions). Pairs within a group are not counted.
func MeanAcross(groups [][][]float32) Similarity {
	us := make([][][]float64, len(groups))
	for g := range groups {
		us[g] = unit(groups[g])
	}
	var s Similarity
	var sum float64
	for g := 0; g < len(us); g++ {
		for h := g + 1; h < len(us); h++ {
			for _, a := range us[g] {
				for _, b := range us[h] {
					if a == nil || b == nil {
						s.Skipped++
						continue
					}
					sum += dot(a, b)
					s.Pairs++
				}
			}
		}
	}
	if s.Pairs > 0 {
		s.Mean = sum / float64(s.Pairs)
	}
	return s
}
