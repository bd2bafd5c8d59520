package metrics

import (
	"errors"
	"math"
)

// ErrZeroVector is returned for a vector of norm 0 (an embedding of nothing
// has no direction, so no similarity).
var ErrZeroVector = errors.New("zero vector")

// Cosine is the cosine similarity of a and b, summed in float64.
func Cosine(a, b []float32) (float64, error) {
	if len(a) != len(b) {
		return 0, errors.New("cosine: vectors of different length")
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0, ErrZeroVector
	}
	return dot / math.Sqrt(na*nb), nil
}
