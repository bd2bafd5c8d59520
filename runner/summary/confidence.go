package summary

import (
	"fmt"
	"math"
	"sort"

	"halu/metrics"
	"halu/runner/rundir"
)

// ConfidenceScore names a model-side confidence score (higher: surer) that
// a suite may give each answer it can check against its truth.
type ConfidenceScore struct {
	Key, Name string
}

// The confidence scores, in the table's order. The token scores come from
// the answer's log-probabilities (metrics.TokenConfidence: --logprobs N);
// the sample scores from the k answers a suite draws for the same prompt.
var (
	ScoreMeanLogprob = ConfidenceScore{"mean_logprob", "mean token log-prob"}
	ScoreMinLogprob  = ConfidenceScore{"min_logprob", "least token log-prob"}
	ScoreNegEntropy  = ConfidenceScore{"neg_entropy", "− mean top-k entropy"}
	// ScoreNegSemanticEntropy is minus the discrete semantic entropy of
	// the samples, ÷ ln k (metrics.NormalizedSemanticEntropy; Farquhar et
	// al. 2024's cluster_assignment_entropy).
	ScoreNegSemanticEntropy = ConfidenceScore{"neg_semantic_entropy", "− semantic entropy (samples; discrete, Farquhar et al. 2024; ÷ ln k)"}
	// ScoreNegWeightedSemanticEntropy is minus the probability-weighted
	// semantic entropy of the samples, ÷ ln k (metrics.
	// WeightedSemanticEntropy; Kuhn et al. 2023), where every sample's
	// token log-probabilities are known.
	ScoreNegWeightedSemanticEntropy = ConfidenceScore{"neg_semantic_entropy_weighted", "− semantic entropy (samples; probability-weighted, Kuhn et al. 2023; ÷ ln k)"}
	// ScoreAgreement is the share of the samples in the answer's own
	// semantic set (self-consistency, Wang et al. 2023).
	ScoreAgreement = ConfidenceScore{"agreement", "samples agreeing with the answer"}
	// ScorePTrue is the model's own probability that its answer is true,
	// asked in one more call (Kadavath et al. 2022).
	ScorePTrue = ConfidenceScore{"p_true", "P(True), asked"}
	// ScoreVerdictProb is a judge's probability for the verdict it gave,
	// read at its verdict token.
	ScoreVerdictProb = ConfidenceScore{"verdict_prob", "P(verdict), at its token"}
	confidenceScores = []ConfidenceScore{ScoreVerdictProb, ScoreMeanLogprob, ScoreMinLogprob, ScoreNegEntropy, ScoreNegSemanticEntropy, ScoreNegWeightedSemanticEntropy, ScoreAgreement, ScorePTrue}
)

// TokenScores are the token-level confidence scores of c (nil for none).
// A reply held to a schema has none: its token log-probabilities are the
// unconstrained model's (metrics.TokenConfidence.Grammar).
func TokenScores(c *metrics.TokenConfidence) map[string]float64 {
	if c == nil || c.Tokens == 0 || c.Grammar {
		return nil
	}
	return map[string]float64{ScoreMeanLogprob.Key: c.MeanLogprob, ScoreMinLogprob.Key: c.MinLogprob, ScoreNegEntropy.Key: c.NegEntropy}
}

// ConfidenceMetrics are the last parts of the confidence figures' keys
// (MODEL/SETTING.confidence.SCORE.auroc …): any suite whose answers carry a
// score makes them, so every suite's gates may name them.
var ConfidenceMetrics = []string{"auroc", "aurc", "confident_wrong"}

// ReplyScores are the token scores (TokenScores) of the reply the last
// chat call of stage to model in calls wrote — an answer's own confidence
// from its call log, the one stored copy; nil when there is none.
func ReplyScores(calls []rundir.CallLog, stage, model string) map[string]float64 {
	for j := len(calls) - 1; j >= 0; j-- {
		if c := calls[j]; c.Stage == stage && c.Model == model && c.Kind == "chat" {
			return TokenScores(c.Confidence)
		}
	}
	return nil
}

// MeanLogprob is a sample's length-normalised log-likelihood (its mean
// token log-probability), the weight of the probability-weighted semantic
// entropy; NaN where TokenScores has none.
func MeanLogprob(c *metrics.TokenConfidence) float64 {
	if s := TokenScores(c); s != nil {
		return s[ScoreMeanLogprob.Key]
	}
	return math.NaN()
}

// VerdictCall is the confidence of the reply a judge's verdict was read
// from: the last call of stage to model (a repair turn, when there was
// one), nil when the run did not ask for log-probabilities.
func VerdictCall(calls []rundir.CallLog, stage, model string) *metrics.TokenConfidence {
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		if c.Stage == stage && c.Model == model && (c.Kind == "judge" || c.Kind == "repair") {
			return c.Confidence
		}
	}
	return nil
}

// ConfidenceUnit is one answer checked against the suite's truth: whether
// it was right, and its confidence scores (a score missing or NaN was not
// measured for it). Cluster names the unit's cluster when units are not
// drawn independently — hic's answers to one question share the question
// and its sample scores —; "" is a unit of its own.
type ConfidenceUnit struct {
	Correct bool
	Scores  map[string]float64
	Cluster string
}

// ConfidenceGroup is the units of one model in one setting.
type ConfidenceGroup struct {
	Model, Setting string
	Units          []ConfidenceUnit
}

// minPerClass is the right and the wrong answers AUROC's interval needs
// of each: its coverage is measured from 5 of each up
// (metrics.AUROCInterval).
const minPerClass = 5

// ConfidenceCheck checks every confidence score a group's units carry
// against their truth: per model, setting and score, the units scored
// (n) and the wrong among them, AUROC of the score as a detector of right
// answers with its 95% interval (Hanley & McNeil, logit scale: metrics.AUROCInterval; random: 0.5), AURC
// beside a random ranking's (the error rate), and the share wrong among the
// most confident tenth (confident hallucination); and per group, the ROC
// curve of each score whose AUROC is defined. "not known" counts the
// group's units the score could not be measured for (no log-probabilities
// returned, a reply held to a schema, a verdict token whose alternatives
// hold no evidence for the value read); a score the same for every unit
// ranks nothing and has no AUROC or AURC ("–"). ok is false when no unit
// carries any score: the table is then left out.
//
// figs are the same figures as rows of the long export (halu report
// --long): per model, setting and score, AUROC with its interval (or the
// warning why none), AURC and the confident-wrong share, each with the
// units it rests on (n) and those the score was not known for (unscored).
// None is a headline figure.
func ConfidenceCheck(truth string, groups []ConfidenceGroup) (t Table, charts []Chart, figs []Figure, ok bool) {
	t = Table{Title: "Model-side confidence checked against " + truth + ": does the model know when it is wrong? (AUROC of each score for telling right answers from wrong, 95% interval (Hanley–McNeil, logit; where answers share a question, \"by question\": Obuchowski's clustered variance, from 20 questions); random 0.5. AURC: lower is better; beside it a random ranking's, the error rate. Confident-wrong: wrong answers among the most confident tenth.)",
		Columns: []string{"model", "setting", "score", "n", "not known", "wrong", "AUROC [95% CI]", "AURC (random)", "confident-wrong"}}
	for _, g := range groups {
		roc := Chart{Kind: "curves", Title: fmt.Sprintf("ROC of the confidence scores: %s %s (right answers detected; the diagonal is random)", g.Model, g.Setting),
			X: "share of wrong answers above the threshold (FPR)", Y: "share of right answers above it (TPR)"}
		for _, sc := range confidenceScores {
			var conf []float64
			var correct []bool
			var cluster []string
			for i, u := range g.Units {
				v, has := u.Scores[sc.Key]
				if !has || math.IsNaN(v) {
					continue
				}
				conf, correct = append(conf, v), append(correct, u.Correct)
				c := u.Cluster
				if c == "" {
					c = fmt.Sprint("unit ", i)
				} else {
					c = "cluster " + c
				}
				cluster = append(cluster, c)
			}
			if len(conf) == 0 {
				continue
			}
			ok = true
			wrong := 0
			for _, c := range correct {
				if !c {
					wrong++
				}
			}
			notKnown := fmt.Sprint(len(g.Units) - len(conf))
			fig := func(metric, key string, v float64) Figure {
				return Figure{Model: g.Model, Group: g.Setting, Metric: metric + " (" + sc.Name + ")",
					Key:      fmt.Sprintf("%s/%s.confidence.%s.%s", g.Model, g.Setting, sc.Key, key),
					Estimate: Num(v), Lo: Num(math.NaN()), Hi: Num(math.NaN()), N: len(conf), Unscored: len(g.Units) - len(conf)}
			}
			if constant(conf) && len(conf) > 1 {
				f := fig("AUROC", "auroc", math.NaN())
				f.Warning = "the same score for every unit: it ranks nothing"
				figs = append(figs, f)
				// A score the same for every unit ranks nothing: no
				// AUROC (its 0.5 would be a tie, not a measurement), no
				// AURC, no most-confident tenth.
				t.Rows = append(t.Rows, []string{g.Model, g.Setting, sc.Name, fmt.Sprint(len(conf)), notKnown, fmt.Sprint(wrong),
					"– (the same score for every unit: it ranks nothing)", fmt.Sprintf("– (%.3f)", float64(wrong)/float64(len(conf))), "–"})
				continue
			}
			auroc := "– (one class only)"
			if fpr, tpr := metrics.ROC(conf, correct); fpr != nil {
				roc.Series = append(roc.Series, Series{Name: sc.Name, X: Nums(fpr...), Values: Nums(tpr...)})
			}
			a := metrics.AUROC(conf, correct)
			af := fig("AUROC", "auroc", a)
			af.Interval = "Hanley–McNeil, logit"
			clusters, shared := clusterCount(cluster)
			if shared {
				af.Interval = "Obuchowski, clustered by question, logit"
			}
			switch {
			case math.IsNaN(a):
				af.Warning = "one class only: every unit right, or every one wrong"
			case wrong < minPerClass || len(conf)-wrong < minPerClass:
				auroc = fmt.Sprintf("%.3f (no interval: %d right, %d wrong; it needs %d of each)", a, len(conf)-wrong, wrong, minPerClass)
				af.Warning = fmt.Sprintf("no interval: %d right, %d wrong; it needs %d of each", len(conf)-wrong, wrong, minPerClass)
			case shared && clusters < metrics.MinClusters:
				auroc = fmt.Sprintf("%.3f (no interval: answers share %d questions; the clustered interval needs %d)", a, clusters, metrics.MinClusters)
				af.Warning = fmt.Sprintf("no interval: answers share %d questions; the clustered interval needs %d", clusters, metrics.MinClusters)
			case shared:
				_, lo, hi := metrics.ClusteredAUROCInterval(conf, correct, cluster, 0.95)
				if math.IsNaN(lo) {
					auroc = fmt.Sprintf("%.3f (no interval: the clustered variance is zero — the score separates every right answer from every wrong one)", a)
					af.Warning = "no interval: the clustered variance is zero — the score separates every right answer from every wrong one"
					break
				}
				auroc = fmt.Sprintf("%.3f [%s, %s] by question", a, f3(lo), f3(hi))
				af.Lo, af.Hi = Num(lo), Num(hi)
			default:
				lo, hi := metrics.AUROCInterval(a, len(conf)-wrong, wrong, 0.95)
				auroc = fmt.Sprintf("%.3f [%s, %s]", a, f3(lo), f3(hi))
				af.Lo, af.Hi = Num(lo), Num(hi)
			}
			aurc := fig("AURC", "aurc", metrics.AURC(conf, correct))
			aurc.Lower = true
			cw := fig("confident-wrong", "confident_wrong", metrics.ConfidentWrong(conf, correct))
			cw.Lower, cw.Percent = true, true
			figs = append(figs, af, aurc, cw)
			t.Rows = append(t.Rows, []string{g.Model, g.Setting, sc.Name, fmt.Sprint(len(conf)), notKnown, fmt.Sprint(wrong), auroc,
				fmt.Sprintf("%.3f (%.3f)", metrics.AURC(conf, correct), float64(wrong)/float64(len(conf))),
				fmt.Sprintf("%.0f%% of %d", 100*metrics.ConfidentWrong(conf, correct), (len(conf)+9)/10)})
		}
		if len(roc.Series) > 0 {
			charts = append(charts, roc)
		}
	}
	return t, charts, figs, ok
}

// clusterCount is how many clusters cluster names, and whether any holds
// more than one unit (then units are not independent).
func clusterCount(cluster []string) (n int, shared bool) {
	seen := map[string]bool{}
	for _, c := range cluster {
		shared = shared || seen[c]
		seen[c] = true
	}
	return len(seen), shared
}

// AddConfidence adds ConfidenceCheck's table, ROC charts and figures to
// sum, when any unit of groups carries a score.
func (sum *Summary) AddConfidence(truth string, groups []ConfidenceGroup) {
	t, charts, figs, ok := ConfidenceCheck(truth, groups)
	if !ok {
		return
	}
	sum.Tables = append(sum.Tables, t)
	sum.Charts = append(sum.Charts, charts...)
	for _, f := range figs {
		sum.AddFigure(f)
	}
}

// constant reports whether every value of xs is the same.
func constant(xs []float64) bool {
	for _, x := range xs[min(1, len(xs)):] {
		if x != xs[0] {
			return false
		}
	}
	return true
}

func f3(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.3f", x)
}

// LogprobTable counts, per model, what the calls that asked for token
// log-probabilities (--logprobs) got back: replies with none (a server
// that ignores the request: their confidence scores are not known), replies
// held to a schema (their token scores are the unconstrained model's and
// no check reads them), and tokens generated without a log-probability —
// besides the end-of-sequence token, which Ollama gives none; it drops
// tokens that are not valid UTF-8 on their own. ok is false when no call
// asked.
func LogprobTable(recs []rundir.Record) (t Table, ok bool) {
	type row struct{ asked, none, grammar, eval, with, missing int }
	rows := map[string]*row{}
	var models []string
	for _, r := range recs {
		for _, c := range r.Calls {
			if c.Logprobs == 0 {
				continue
			}
			x := rows[c.Model]
			if x == nil {
				x = &row{}
				rows[c.Model] = x
				models = append(models, c.Model)
			}
			x.asked++
			x.eval += c.EvalTokens
			cf := c.Confidence
			if cf == nil || cf.Tokens == 0 {
				x.none++
				continue
			}
			if cf.Grammar {
				x.grammar++
			}
			x.with += cf.Tokens
			missing := c.EvalTokens - cf.Tokens
			if c.DoneReason == "stop" && missing > 0 {
				missing-- // the end-of-sequence token
			}
			x.missing += max(0, missing)
		}
	}
	if len(models) == 0 {
		return t, false
	}
	sort.Strings(models)
	t = Table{Title: "Token log-probabilities asked for (--logprobs): what came back, per model (a reply with none has no token scores; one held to a schema has the unconstrained model's, left out of every confidence check)",
		Columns: []string{"model", "calls asked", "returned none", "held to a schema", "tokens generated", "with a log-prob", "missing (besides end-of-sequence)"}}
	for _, m := range models {
		x := rows[m]
		t.Rows = append(t.Rows, []string{m, fmt.Sprint(x.asked), fmt.Sprint(x.none), fmt.Sprint(x.grammar), fmt.Sprint(x.eval), fmt.Sprint(x.with), fmt.Sprint(x.missing)})
	}
	return t, true
}
