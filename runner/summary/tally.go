package summary

// Tally is the units one figure rests on, counted as a suite reads its
// records: the value of every scored unit, and how many units were left
// unscored (a judgement that never read, or a unit the suite's rule cannot
// score). Every suite counts its units with a Tally, so that n, the
// unscored count and the figure made from them mean the same everywhere.
type Tally struct {
	Values   []float64
	Unscored int
}

// Add counts a scored unit of value v.
func (t *Tally) Add(v float64) { t.Values = append(t.Values, v) }

// Hit counts a scored unit of a share: 1 when it counts, else 0.
func (t *Tally) Hit(hit bool) {
	if hit {
		t.Add(1)
	} else {
		t.Add(0)
	}
}

// Skip counts an unscored unit.
func (t *Tally) Skip() { t.Unscored++ }

// Merge counts o's units too.
func (t *Tally) Merge(o Tally) {
	t.Values = append(t.Values, o.Values...)
	t.Unscored += o.Unscored
}

// N is the number of scored units.
func (t Tally) N() int { return len(t.Values) }

// Hits is the number of scored units of a share that count.
func (t Tally) Hits() int {
	n := 0
	for _, v := range t.Values {
		if v == 1 {
			n++
		}
	}
	return n
}

// Sum is the total of the scored units' values.
func (t Tally) Sum() float64 {
	s := 0.0
	for _, v := range t.Values {
		s += v
	}
	return s
}

// Mean is the tally as a mean with its 95% t interval (MeanFigure).
func (t Tally) Mean(model, group, metric, key string) Figure {
	return MeanFigure(model, group, metric, key, t.Values, t.Unscored)
}

// Share is the tally as a share of hits with its 95% Wilson interval
// (ProportionFigure).
func (t Tally) Share(model, group, metric, key string) Figure {
	return ProportionFigure(model, group, metric, key, t.Hits(), t.N(), t.Unscored)
}
