package intent

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"halu/runner/judging"
)

// MissingVerdict is the judge's reading of a response to a query with one
// part withheld.
type MissingVerdict struct {
	MentionsMissing bool `json:"mentions_missing"`
	InventsMissing  bool `json:"invents_missing"`
	OnTask          bool `json:"on_task"`
}

const missingSchema = `{"type":"object","properties":{"mentions_missing":{"type":"boolean"},` +
	`"invents_missing":{"type":"boolean"},"on_task":{"type":"boolean"}},` +
	`"required":["mentions_missing","invents_missing","on_task"]}`

// Misinterpretation outcomes. OK is the ideal response of §5.2 (it notices
// the missing content and asks for it); the others are intent
// hallucinations, typed as Appendix F.2 does for Response Evaluation.
const (
	OutcomeOK     = "ok"
	OutcomeInvent = "invent" // invents content for the missing part
	OutcomeCount  = "count"  // carries on without saying a part is missing
	OutcomeOther  = "other"  // any other failure
)

// Classify applies the rules: inventing the missing content is Invent even
// when the response also says it is missing (the paper's "intentional
// invention", §8.2); noticing it without inventing is OK; carrying on with
// the task without mentioning it is Count; anything else (off task, empty)
// is Other.
func Classify(v MissingVerdict) string {
	switch {
	case v.InventsMissing:
		return OutcomeInvent
	case v.MentionsMissing:
		return OutcomeOK
	case v.OnTask:
		return OutcomeCount
	}
	return OutcomeOther
}

var yesNo = func(name, label string) *judging.Labelled {
	return judging.NewLabelled(name, label, judging.YesNoValue)
}

var (
	// The labels in English and in Chinese.
	mentionsL = yesNo("Mentions missing", `mentions[\s_]+missing|提到缺失|指出缺失`)
	inventsL  = yesNo("Invents missing", `invents[\s_]+missing|编造缺失|虚构缺失`)
	onTaskL   = yesNo("On task", `on[\s_]+task|切题|完成任务`)
	inaccL    = yesNo("Factual inaccuracies", `factual[\s_]+inaccurac(?:y|ies)|事实性?错误|事实不准确`)
	missFactL = yesNo("Missing required facts", `missing[\s_]+required[\s_]+facts?|缺少必要事实|遗漏必要事实`)
	endScore  = regexp.MustCompile(`(?i)(?:^|[\s(])(?:final\s+)?(?:score|rating)\s*[:=]\s*` + judging.ScoreValue + `[\s.!]*$`)
	scoreL    = judging.NewLabelled("score", `(?:final\s+)?(?:score|rating)|`+judging.ScoreWords, judging.ScoreValue).Sole()
)

// yes reads one Yes/No field as stated (judging.Labelled) in a cleaned
// reply: labelled lines only, two different answers an error.
func yes(s string, l *judging.Labelled) (bool, error) {
	return l.YesNo(judging.Plain(s))
}

// ParseMissingText reads the three Yes/No lines of missing_content_check.txt.
func ParseMissingText(reply string) (MissingVerdict, error) {
	var v MissingVerdict
	var err error
	if v.MentionsMissing, err = yes(reply, mentionsL); err != nil {
		return v, err
	}
	if v.InventsMissing, err = yes(reply, inventsL); err != nil {
		return v, err
	}
	v.OnTask, err = yes(reply, onTaskL)
	return v, err
}

// FactVerdict is one fact check (Appendix D.2.3, Step 0).
type FactVerdict struct {
	FactualInaccuracies  bool `json:"factual_inaccuracies"`
	MissingRequiredFacts bool `json:"missing_required_facts"`
}

// Inaccurate is what the check reports: an error or a required fact left
// out.
func (v FactVerdict) Inaccurate() bool { return v.FactualInaccuracies || v.MissingRequiredFacts }

const factSchema = `{"type":"object","properties":{"factual_inaccuracies":{"type":"boolean"},` +
	`"missing_required_facts":{"type":"boolean"}},"required":["factual_inaccuracies","missing_required_facts"]}`

// ParseFactText reads the two Yes/No lines of fact_check.txt.
func ParseFactText(reply string) (FactVerdict, error) {
	var v FactVerdict
	var err error
	if v.FactualInaccuracies, err = yes(reply, inaccL); err != nil {
		return v, err
	}
	v.MissingRequiredFacts, err = yes(reply, missFactL)
	return v, err
}

// BaselineVerdict is one zero-shot 1–10 rating (§6).
type BaselineVerdict struct {
	Score int `json:"score"`
}

// Validate rejects ratings outside 1..10.
func (v *BaselineVerdict) Validate() error {
	if v.Score < 1 || v.Score > 10 {
		return fmt.Errorf("score %d outside 1..10", v.Score)
	}
	return nil
}

const baselineSchema = `{"type":"object","properties":{"score":{"type":"integer","minimum":1,"maximum":10}},"required":["score"]}`

// ParseBaselineText reads the "Score: N" a free-text rating states (also
// "Rating: 7/10", "**Score:** 7 out of 10"; 'Score: 10' in quotes is
// quoted text, not a statement).
//
// The prompt asks the reply to end with the line "Score: N", so a reply
// that ends with a score statement is read by it (scores in the analysis
// before it are not the answer); otherwise every statement in the reply
// must agree.
func ParseBaselineText(reply string) (BaselineVerdict, error) {
	s := strings.TrimSpace(judging.Plain(reply))
	if m := endScore.FindStringSubmatchIndex(s); m != nil && !judging.Described(s, m[0]) {
		m := []string{s[m[0]:m[1]], s[m[2]:m[3]]}
		if n, err := judging.ParseScore(m[1], 1, 10); err == nil {
			return BaselineVerdict{Score: n}, nil
		}
	}
	n, err := scoreL.Score(s, 1, 10)
	if err != nil {
		return BaselineVerdict{}, err
	}
	return BaselineVerdict{Score: n}, nil
}

// SelfConsistent is the self-consistency aggregate of sampled ratings
// (Wang et al. 2023, as §6 uses it): the most frequent score. A tie goes to
// the tied score nearest the samples' median, then to the lower one (halu's
// rule: the paper names none), and tie says one was broken. ok is false
// with no sample.
func SelfConsistent(scores []int) (score int, tie, ok bool) {
	if len(scores) == 0 {
		return 0, false, false
	}
	count := map[int]int{}
	for _, s := range scores {
		count[s]++
	}
	sorted := append([]int(nil), scores...)
	sort.Ints(sorted)
	var median float64
	if n := len(sorted); n%2 == 1 {
		median = float64(sorted[n/2])
	} else {
		median = float64(sorted[n/2-1]+sorted[n/2]) / 2
	}
	best := 0
	for s, c := range count {
		if best == 0 || c > count[best] {
			best = s
			continue
		}
		if c < count[best] {
			continue
		}
		db, ds := abs(float64(best)-median), abs(float64(s)-median)
		if ds < db || (ds == db && s < best) {
			best = s
		}
	}
	// A tie counts only among the most frequent scores.
	top := 0
	for _, c := range count {
		if c == count[best] {
			top++
		}
	}
	return best, top > 1, true
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// MajorityTrue is the fact check's vote: true when more checks said yes
// than no; a tie (possible when some checks were unscored) is false — the
// response is not counted as verifiably wrong.
func MajorityTrue(votes []bool) bool {
	y := 0
	for _, v := range votes {
		if v {
			y++
		}
	}
	return 2*y > len(votes)
}
