package ideas

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"halu/metrics"
	"halu/runner/judging"
)

// Reading the critics' replies: a fluency grade (A–D) of a pair of ideas,
// and a critic's originality, feasibility and clarity scores, the careful
// way and the authors' way.

// FluencyGrade is the fluency critic's verdict: structured output
// {"grade": "B"}, or the letter a text reader found.
type FluencyGrade struct {
	Grade string `json:"grade"`
}

// Quantities is the grade as the score it stands for (the judge card's
// quantity: A–D are ranked).
func (g FluencyGrade) Quantities() map[string]float64 {
	v, err := metrics.FluencyScore(g.Grade)
	if err != nil {
		return nil
	}
	return map[string]float64{"fluency": v}
}

// Validate requires one grade letter, A–D.
func (g *FluencyGrade) Validate() error {
	g.Grade = strings.ToUpper(strings.TrimSpace(g.Grade))
	if _, err := metrics.FluencyScore(g.Grade); err != nil {
		return fmt.Errorf("grade %q is not one of A, B, C, D", g.Grade)
	}
	return nil
}

var (
	gradeLabel = judging.NewLabelled("grade", `(?:final\s+)?(?:answer|grade|choice|option|verdict|rating)|antwort|réponse|respuesta|答案|回答|答え`, `(?-i:[(（]?([A-D])\b)`)
	gradeIs    = regexp.MustCompile(`(?:\b(?i:answer|grade|choice|option|verdict)\s+(?i:is|would be|=)|\bI (?i:choose|pick|select|would choose|would pick)|^(?i:option|grade|answer))\s*(?:(?i:option|grade)\s+)?[(（]?\s*["']?([A-D])\b`)
	gradeBare  = regexp.MustCompile(`^[(（\[]?([A-D])[)）\]]?[.。:：)]?$`)
	gradeLead  = regexp.MustCompile(`^[(（\[]?([A-D])[)）\]]?(?:[.。:：,，)]|\s+[-–—]\s)`)
)

// parseFluency is halu's reader of the fluency critic's text reply: the
// grade it states — a reply that is only the letter, a first line that
// starts with it ("B. Both ideas…"), "Answer: B", "**Grade:** (B)", "The
// answer is B" — never the first letter of a word ("Answer: C" is C, not
// A). Every statement must agree; no grade or two different grades is a
// parse failure. The two ideas, quoted, are not read.
func parseFluency(reply string) (FluencyGrade, error) {
	g, err := gradeLetters.Read(judging.Plain(reply))
	return FluencyGrade{Grade: g}, err
}

var gradeLetters = judging.Letters{Bare: gradeBare, Lead: gradeLead, Is: gradeIs, Label: gradeLabel}

// ReadFluency is halu's reading of a fluency reply as a grade letter (see
// parseFluency).
func ReadFluency(reply string) (string, error) {
	g, err := parseFluency(reply)
	if err == nil {
		err = g.Validate()
	}
	return g.Grade, err
}

// ParseFluencyPaper is the authors' reading: the first letter left after
// stripping everything that is not a letter (metrics.ParseFluencyGrade).
func ParseFluencyPaper(reply string) (FluencyGrade, error) {
	g, err := metrics.ParseFluencyGrade(reply)
	return FluencyGrade{Grade: g}, err
}

// CriticScores is the structured critic reply.
type CriticScores struct {
	Analysis    string `json:"analysis"`
	Originality int    `json:"originality"`
	Feasibility int    `json:"feasibility"`
	Clarity     int    `json:"clarity"`
}

// Scores are the verdict of a critic reply: its three scores.
func (c CriticScores) Scores() Scores {
	return Scores{Originality: c.Originality, Feasibility: c.Feasibility, Clarity: c.Clarity}
}

// Validate rejects scores outside 1..10.
func (c *CriticScores) Validate() error {
	return judging.InRange(1, 10, judging.Score{Name: "originality", Value: c.Originality},
		judging.Score{Name: "feasibility", Value: c.Feasibility}, judging.Score{Name: "clarity", Value: c.Clarity})
}

// CriticSchema is the critic's structured-output schema.
const CriticSchema = `{"type":"object","properties":{"analysis":{"type":"string"},` +
	`"originality":{"type":"integer","enum":[1,2,3,4,5,6,7,8,9,10]},` +
	`"feasibility":{"type":"integer","enum":[1,2,3,4,5,6,7,8,9,10]},` +
	`"clarity":{"type":"integer","enum":[1,2,3,4,5,6,7,8,9,10]}},` +
	`"required":["analysis","originality","feasibility","clarity"]}`

// FluencySchema constrains the fluency critic to one grade.
const FluencySchema = `{"type":"object","properties":{"grade":{"type":"string","enum":["A","B","C","D"]}},"required":["grade"]}`

var (
	fenceJSON = regexp.MustCompile("(?s)```json\\s*(\\{.*?\\})\\s*```")
	fenceAny  = regexp.MustCompile("(?s)```\\w*\\s*(\\{.*?\\})\\s*```")
	braces    = regexp.MustCompile(`(?s)\{[^{}]*\}`)
	keyRE     = map[string]*regexp.Regexp{
		"originality": regexp.MustCompile(`(?i)"?originality"?\s*[:=]\s*(\d+)`),
		"feasibility": regexp.MustCompile(`(?i)"?feasibility"?\s*[:=]\s*(\d+)`),
		"clarity":     regexp.MustCompile(`(?i)"?clarity"?\s*[:=]\s*(\d+)`),
	}
	criticLabels = []*judging.Labelled{
		judging.NewLabelled("originality", judging.OriginalityWords, judging.ScoreValue),
		judging.NewLabelled("feasibility", judging.FeasibilityWords, judging.ScoreValue),
		judging.NewLabelled("clarity", `clarity|klarheit|clart[ée]|claridad|清晰度|清晰性|明确性|明確さ|明瞭さ`, judging.ScoreValue),
	}
)

// ParseCriticText is halu's reader of the critic's free-text reply: the
// three scores as stated — in the JSON block the prompt asks for, or as
// labelled lines ("**Originality:** 8/10") — in the cleaned reply
// (judging.Read: reasoning and the quoted idea removed). Every statement of a score must agree (a final JSON
// block followed by a quoted {"originality": 10, …} is ambiguous), scores
// must be whole numbers in 1..10 ("7.5" is rejected, not read as 7).
func ParseCriticText(reply string) (CriticScores, error) {
	s := judging.Plain(reply)
	var c CriticScores
	for i, p := range []*int{&c.Originality, &c.Feasibility, &c.Clarity} {
		n, err := criticLabels[i].Score(s, 1, 10)
		if err != nil {
			return c, err
		}
		*p = n
	}
	c.Analysis = analysisOf(s)
	return c, nil
}

func analysisOf(s string) string {
	for _, cut := range []string{"```", "{"} {
		if i := strings.Index(s, cut); i >= 0 {
			s = s[:i]
		}
	}
	return strings.TrimSpace(s)
}

// ParseCriticPaper is the authors' reading of the critic's reply: a
// ```json fence, else any fence, else the first brace block, else key:
// value pairs; the three scores must all be present and within 1..10.
func ParseCriticPaper(reply string) (CriticScores, error) {
	var c CriticScores
	try := func(block string) bool {
		var m map[string]any
		if json.Unmarshal([]byte(block), &m) != nil {
			return false
		}
		get := func(k string) (int, bool) {
			switch v := m[k].(type) {
			case float64:
				return int(v), v == float64(int(v))
			case string:
				n, err := strconv.Atoi(strings.TrimSpace(v))
				return n, err == nil
			}
			return 0, false
		}
		var ok1, ok2, ok3 bool
		c.Originality, ok1 = get("originality")
		c.Feasibility, ok2 = get("feasibility")
		c.Clarity, ok3 = get("clarity")
		return ok1 && ok2 && ok3
	}
	found := false
	if m := fenceJSON.FindStringSubmatch(reply); m != nil && try(m[1]) {
		found = true
	} else if m := fenceAny.FindStringSubmatch(reply); m != nil && try(m[1]) {
		found = true
	} else if bs := braces.FindAllString(reply, -1); len(bs) > 0 && try(bs[0]) {
		found = true
	} else {
		all := true
		for k, re := range keyRE {
			m := re.FindStringSubmatch(reply)
			if m == nil {
				all = false
				break
			}
			v, _ := strconv.Atoi(m[1])
			switch k {
			case "originality":
				c.Originality = v
			case "feasibility":
				c.Feasibility = v
			case "clarity":
				c.Clarity = v
			}
		}
		found = all
	}
	if !found {
		return c, errors.New("no originality/feasibility/clarity scores found")
	}
	c.Analysis = analysisOf(reply)
	return c, c.Validate()
}

// CriticReader is how a critic's reply about idea is read, in a run and
// in the reply corpus.
func CriticReader(idea string) judging.Reader[CriticScores] {
	return judging.Reader[CriticScores]{
		Text:   ParseCriticText,
		Paper:  ParseCriticPaper,
		Quoted: []string{idea},
		Check:  true,
		Schema: json.RawMessage(CriticSchema),
		// The verdict is the three scores: the two readers cut the
		// analysis prose differently, which is no disagreement.
		Same: func(a, b CriticScores) bool { return a.Scores() == b.Scores() },
	}
}

// FluencyReader is how a fluency judge's reply about ideas a and b is
// read, in a run and in the reply corpus.
func FluencyReader(a, b string) judging.Reader[FluencyGrade] {
	return judging.Reader[FluencyGrade]{Text: parseFluency, Paper: ParseFluencyPaper, Quoted: []string{a, b}, Check: true, Schema: json.RawMessage(FluencySchema)}
}
