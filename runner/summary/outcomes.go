package summary

// Outcome is one measurement of one unit of a run, for the paired
// comparison of two runs (halu compare). Unit names the unit of analysis
// without the model ("SCP/T1/q001", a keyword, an item id), so that the
// same unit of two runs pairs up whether the runs differ in model, seed or
// settings.
type Outcome struct {
	Model  string
	Unit   string
	Metric string
	// Kind says which paired tests fit: "ratio" (a share within the unit,
	// such as HIC's IH ratio over a question's answers: sign-flip
	// permutation test), "score" (paired t and Wilcoxon), "binary" (exact
	// McNemar).
	Kind  string
	Value float64
}
