package metrics

import (
	"math"
	"testing"
)

func TestCosine(t *testing.T) {
	tests := []struct {
		a, b []float32
		want float64
	}{
		{[]float32{1, 0}, []float32{0, 1}, 0},
		{[]float32{1, 2, 3}, []float32{2, 4, 6}, 1},
		{[]float32{1, 0}, []float32{-1, 0}, -1},
		// (1,1)·(1,0) / (√2·1) = 1/√2
		{[]float32{1, 1}, []float32{1, 0}, 1 / math.Sqrt2},
	}
	for _, tt := range tests {
		got, err := Cosine(tt.a, tt.b)
		if err != nil || math.Abs(got-tt.want) > 1e-7 {
			t.Errorf("Cosine(%v, %v) = %v, %v; want %v", tt.a, tt.b, got, err, tt.want)
		}
	}
	if _, err := Cosine([]float32{0, 0}, []float32{1, 0}); err != ErrZeroVector {
		t.Errorf("zero vector: %v", err)
	}
}
