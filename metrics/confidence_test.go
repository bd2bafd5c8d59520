package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
)

func same(a, b float64) bool { return math.Abs(a-b) < 1e-9 || math.IsNaN(a) && math.IsNaN(b) }

// Values computed by hand.
func TestConfidence(t *testing.T) {
	ln := math.Log
	// Mean (−0.1 − 0.5 − 1.2)/3 = −0.6, min −1.2, exp(−0.6) = 0.548811636…;
	// entropies: two equal alternatives ln 2 (also when their log-probs
	// do not sum to 1: renormalised), four equal ln 4; the third position
	// has none: −(ln 2 + ln 4)/2 = −1.039720771….
	c := Confidence([]float64{-0.1, -0.5, -1.2}, [][]float64{{ln(0.3), ln(0.3)}, {ln(0.25), ln(0.25), ln(0.25), ln(0.25)}, nil})
	want := TokenConfidence{Tokens: 3, MeanLogprob: -0.6, MinLogprob: -1.2, SeqProb: 0.5488116360940264, NegEntropy: -(ln(2) + ln(4)) / 2, TopK: 4}
	if c.Tokens != want.Tokens || !same(c.MeanLogprob, want.MeanLogprob) || !same(c.MinLogprob, want.MinLogprob) || !same(c.SeqProb, want.SeqProb) || !same(c.NegEntropy, want.NegEntropy) || c.TopK != 4 {
		t.Errorf("got %+v\nwant %+v", c, want)
	}
	// A single alternative is a certain distribution: entropy 0.
	if c := Confidence([]float64{-2}, [][]float64{{-2}}); !same(c.NegEntropy, 0) {
		t.Errorf("one alternative: %v", c.NegEntropy)
	}
	// No alternatives asked: no entropy. No tokens: nothing at all.
	if c := Confidence([]float64{-1}, nil); !math.IsNaN(c.NegEntropy) || !same(c.MeanLogprob, -1) {
		t.Errorf("no alternatives: %+v", c)
	}
	if c := Confidence(nil, nil); c.Tokens != 0 || !math.IsNaN(c.MeanLogprob) || !math.IsNaN(c.SeqProb) {
		t.Errorf("no tokens: %+v", c)
	}
}

// A score that is not defined is written null, and read back NaN.
func TestTokenConfidenceJSON(t *testing.T) {
	c := Confidence([]float64{-0.5, -1.5}, nil)
	b, err := json.Marshal(c)
	if err != nil || string(b) != `{"tokens":2,"mean_logprob":-1,"min_logprob":-1.5,"seq_prob":0.36787944117144233,"neg_entropy":null}` {
		t.Fatalf("%s %v", b, err)
	}
	var back TokenConfidence
	if err := json.Unmarshal(b, &back); err != nil || back.Tokens != 2 || !same(back.MeanLogprob, -1) || !math.IsNaN(back.NegEntropy) {
		t.Errorf("read back %+v %v", back, err)
	}
}

func TestAUROC(t *testing.T) {
	for _, tc := range []struct {
		score []float64
		pos   []bool
		want  float64
	}{
		// Pairs (positive, negative): (.9,.8) (.9,.6) (.7,.6) won, (.7,.8)
		// lost: 3/4.
		{[]float64{0.9, 0.8, 0.7, 0.6}, []bool{true, false, true, false}, 0.75},
		// A tie counts one half: 0.5.
		{[]float64{0.5, 0.5}, []bool{true, false}, 0.5},
		// Positives 2, 3; negatives 1, 2: 1 + ½ + 1 + 1 of 4 = 0.875.
		{[]float64{1, 2, 2, 3}, []bool{false, true, false, true}, 0.875},
		// Perfect, and perfectly wrong.
		{[]float64{3, 2, 1}, []bool{true, true, false}, 1},
		{[]float64{1, 2, 3}, []bool{true, true, false}, 0},
		// One class only, a NaN score: not defined.
		{[]float64{1, 2}, []bool{true, true}, math.NaN()},
		{[]float64{1, math.NaN()}, []bool{true, false}, math.NaN()},
		{nil, nil, math.NaN()},
	} {
		if got := AUROC(tc.score, tc.pos); !same(got, tc.want) {
			t.Errorf("AUROC(%v, %v) = %v, want %v", tc.score, tc.pos, got, tc.want)
		}
	}
}

func TestAURCAndConfidentWrong(t *testing.T) {
	for _, tc := range []struct {
		conf           []float64
		correct        []bool
		aurc, topWrong float64
	}{
		// Sorted: right, wrong, right, right. Risk at k = 1…4: 0, 1/2,
		// 1/3, 1/4; mean 13/48. The most confident tenth (⌈4/10⌉ = 1
		// unit) is right: 0.
		{[]float64{0.9, 0.8, 0.7, 0.6}, []bool{true, false, true, true}, 13.0 / 48, 0},
		// A tie at the top (one right, one wrong): half a wrong unit at
		// k = 1 (risk ½), one at k = 2 (½), one of 3 at k = 3: mean 4/9;
		// the top tenth (1 unit) is wrong with chance ½.
		{[]float64{0.9, 0.9, 0.5}, []bool{true, false, true}, 4.0 / 9, 0.5},
		// All wrong: risk 1 everywhere.
		{[]float64{1, 2}, []bool{false, false}, 1, 1},
		{nil, nil, math.NaN(), math.NaN()},
	} {
		if got := AURC(tc.conf, tc.correct); !same(got, tc.aurc) {
			t.Errorf("AURC(%v, %v) = %v, want %v", tc.conf, tc.correct, got, tc.aurc)
		}
		if got := ConfidentWrong(tc.conf, tc.correct); !same(got, tc.topWrong) {
			t.Errorf("ConfidentWrong(%v, %v) = %v, want %v", tc.conf, tc.correct, got, tc.topWrong)
		}
	}
	// The input's order does not matter, ties included.
	a := AURC([]float64{0.5, 0.9, 0.9}, []bool{true, false, true})
	if !same(a, 4.0/9) {
		t.Errorf("reordered: %v", a)
	}
}

func TestSemanticSetsAndEntropy(t *testing.T) {
	// Meanings A, B, A, C: sets 0, 1, 0, 2; each sample is compared with
	// the representatives (samples 0, 1, 3) only.
	meaning := []string{"A", "B", "A", "C"}
	asked := 0
	sets := SemanticSets(4, func(i, j int) bool { asked++; return meaning[i] == meaning[j] })
	if want := []int{0, 1, 0, 2}; !equalInts(sets, want) {
		t.Errorf("sets %v, want %v", sets, want)
	}
	// Sample 1: vs 0 (1 ask, fails); 2: vs 0 (2 asks, joins); 3: vs 0 (1), vs 1 (1): 5.
	if asked != 5 {
		t.Errorf("%d entailment questions, want 5", asked)
	}
	// Entailment one way only is not the same meaning.
	oneWay := SemanticSets(2, func(i, j int) bool { return i > j })
	if !equalInts(oneWay, []int{0, 1}) {
		t.Errorf("one-way entailment: %v", oneWay)
	}
	// p = ½, ¼, ¼: H = ½ ln 2 + ½ ln 4 = 1.0397…; one set: 0; one sample:
	// not defined.
	if h := SemanticEntropy(sets); !same(h, 0.5*math.Log(2)+0.5*math.Log(4)) {
		t.Errorf("entropy %v", h)
	}
	if h := SemanticEntropy([]int{0, 0, 0}); !same(h, 0) {
		t.Errorf("one set: %v", h)
	}
	if h := SemanticEntropy([]int{0}); !math.IsNaN(h) {
		t.Errorf("k = 1: %v, want NaN", h)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The bootstrap is seeded (the same interval twice), holds a constant
// statistic to its value, and gives no interval when most resamples leave
// the statistic undefined.
func TestBootstrapUnits(t *testing.T) {
	score := []float64{0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05}
	pos := []bool{true, true, false, true, false, true, false, false, true, false}
	stat := func(idx []int) float64 {
		s, p := make([]float64, len(idx)), make([]bool, len(idx))
		for k, i := range idx {
			s[k], p[k] = score[i], pos[i]
		}
		return AUROC(s, p)
	}
	lo1, hi1 := BootstrapUnits(len(score), 500, 7, 0.95, stat)
	lo2, hi2 := BootstrapUnits(len(score), 500, 7, 0.95, stat)
	est := AUROC(score, pos)
	if lo1 != lo2 || hi1 != hi2 || !(lo1 <= est && est <= hi1) || lo1 >= hi1 {
		t.Errorf("interval [%v, %v] then [%v, %v] around %v", lo1, hi1, lo2, hi2, est)
	}
	if lo, hi := BootstrapUnits(5, 100, 1, 0.95, func([]int) float64 { return 0.3 }); lo != 0.3 || hi != 0.3 {
		t.Errorf("constant: [%v, %v]", lo, hi)
	}
	if lo, _ := BootstrapUnits(5, 100, 1, 0.95, func([]int) float64 { return math.NaN() }); !math.IsNaN(lo) {
		t.Errorf("undefined statistic: %v", lo)
	}
}

// The curve of TestAUROC's first case, by hand: thresholds past .9 (a
// positive), .8 (a negative), .7 (positive), .6 (negative); a tie enters
// as one step; one class only has no curve.
func TestROC(t *testing.T) {
	fpr, tpr := ROC([]float64{0.9, 0.8, 0.7, 0.6}, []bool{true, false, true, false})
	if fmt.Sprint(fpr, tpr) != "[0 0 0.5 0.5 1] [0 0.5 0.5 1 1]" {
		t.Errorf("fpr %v tpr %v", fpr, tpr)
	}
	fpr, tpr = ROC([]float64{1, 2, 2, 3}, []bool{false, true, false, true})
	if fmt.Sprint(fpr, tpr) != "[0 0 0.5 1] [0 0.5 1 1]" {
		t.Errorf("tie: fpr %v tpr %v", fpr, tpr)
	}
	if f, _ := ROC([]float64{1, 2}, []bool{true, true}); f != nil {
		t.Errorf("one class: %v", f)
	}
}
