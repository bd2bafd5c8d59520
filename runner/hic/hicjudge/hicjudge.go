// Package hicjudge is HIC-Bench's judge: the prompt the authors' code
// sends (EVALUATION_SYSTEM_PROMPT, DHP's own system prompt, the evaluator's
// user prompt), the one-line verdict "Originality: [1-5] Feasibility: [1-5]
// Value: [1-5] Hallucination: Yes/No" and its two readings (halu's careful
// one, the authors' token rule beside). A hic run and the judge validation
// (package judgeval) both ask their judges through Judge, so a judge is
// measured with the very prompt and reading a run uses.
package hicjudge

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"halu/localmodels"
	"halu/runner/engine"
	"halu/runner/judging"
)

//go:embed prompts/*.txt
var assets embed.FS

func prompt(name string) string { return engine.Embedded(assets, "prompts/"+name+".txt") }

// Templates returns the judge's prompt templates by name, as shipped.
func Templates() map[string]string {
	out := map[string]string{}
	for _, n := range []string{"evaluation_system_prompt", "dhp_evaluation_system_prompt", "evaluation_user_prompt"} {
		out[n] = prompt(n)
	}
	return out
}

// Verdict is one judge's assessment of one answer.
type Verdict struct {
	Originality   int  `json:"originality"`
	Feasibility   int  `json:"feasibility"`
	Value         int  `json:"value"`
	Hallucination bool `json:"hallucination"`
}

// Scores are the verdict's 1–5 scores by the names the judge writes them
// under.
func (v Verdict) Scores() []judging.Score {
	return []judging.Score{{Name: "originality", Value: v.Originality}, {Name: "feasibility", Value: v.Feasibility}, {Name: "value", Value: v.Value}}
}

// Validate rejects scores outside 1..5.
func (v *Verdict) Validate() error {
	return judging.InRange(1, 5, v.Scores()...)
}

// VerdictSchema is the structured-output schema sent as the judge's format.
const VerdictSchema = `{"type":"object","properties":{` +
	`"originality":{"type":"integer","enum":[1,2,3,4,5]},` +
	`"feasibility":{"type":"integer","enum":[1,2,3,4,5]},` +
	`"value":{"type":"integer","enum":[1,2,3,4,5]},` +
	`"hallucination":{"type":"boolean"}},` +
	`"required":["originality","feasibility","value","hallucination"]}`

var (
	// The labels in English and in the languages judges answer in
	// (German, French, Spanish, Chinese, Japanese).
	orL  = judging.NewLabelled("originality", judging.OriginalityWords, judging.ScoreValue)
	feL  = judging.NewLabelled("feasibility", judging.FeasibilityWords, judging.ScoreValue)
	vaL  = judging.NewLabelled("value", `value|valeur|wert|valor|价值|價值|価値`, judging.ScoreValue)
	halL = judging.NewLabelled("hallucination", judging.HallucinationWords, judging.YesNoValue).Sole()
)

// ParseVerdictText is halu's reader of the paper's one-line judge format,
// "Originality: [1-5] Feasibility: [1-5] Value: [1-5] Hallucination:
// Yes/No", by the engine's reading discipline (judging.Labelled), from the
// cleaned reply (judging.Read: reasoning and the quoted answer removed by
// the engine); each field is read from its
// labelled statements (bold, bulleted, "(1-5)" hints, "4/5", "4 out of 5",
// JSON keys), never from prose; a field missing, outside 1–5, not whole, a
// range, or stated twice with different values is a parse failure.
func ParseVerdictText(reply string) (Verdict, error) {
	s := judging.Plain(reply)
	var v Verdict
	var err error
	if v.Originality, err = orL.Score(s, 1, 5); err != nil {
		return v, err
	}
	if v.Feasibility, err = feL.Score(s, 1, 5); err != nil {
		return v, err
	}
	if v.Value, err = vaL.Score(s, 1, 5); err != nil {
		return v, err
	}
	v.Hallucination, err = halL.YesNo(s)
	return v, err
}

// ParseVerdictPaper is the authors' reading (HIC-bench evaluator): the
// reply split on white space, Originality, Feasibility and Value the
// integers at tokens 1, 3 and 5, and Hallucination the word at token 7
// ("Yes" counts as hallucinated). Anything else there is a parse failure,
// as int() of it fails in their code.
func ParseVerdictPaper(reply string) (Verdict, error) {
	f := strings.Fields(reply)
	if len(f) < 8 {
		return Verdict{}, fmt.Errorf("%d tokens, the authors' reading needs 8", len(f))
	}
	var v Verdict
	for i, p := range []*int{&v.Originality, &v.Feasibility, &v.Value} {
		n, err := strconv.Atoi(f[1+2*i])
		if err != nil {
			return Verdict{}, fmt.Errorf("token %d %q is not an integer", 1+2*i, f[1+2*i])
		}
		*p = n
	}
	switch strings.ToLower(strings.Trim(f[7], ".,;")) {
	case "yes":
		v.Hallucination = true
	case "no":
	default:
		return Verdict{}, fmt.Errorf("token 7 %q is not Yes or No", f[7])
	}
	return v, nil
}

// Stage is the stage of the judges' calls.
const Stage = "judge"

// Judgement is one judge's verdict; Scored is false when the judge's reply
// never parsed (its raw replies are in the record's failures).
type Judgement struct {
	Judge   string   `json:"judge"`
	Scored  bool     `json:"scored"`
	Verdict *Verdict `json:"verdict,omitempty"`
	// Other is the verdict the reader that did not decide read in the
	// same reply (the authors' rule under the default readers), kept only
	// when the two differ; OtherUnread when it read none.
	Other       *Verdict `json:"other_verdict,omitempty"`
	OtherUnread bool     `json:"other_unread,omitempty"`
	// VerdictProb is the judge's probability for its hallucination
	// verdict, from the verdict token's alternatives (--logprobs N:
	// engine.VerdictProb); nil when not asked or not found.
	VerdictProb *float64 `json:"verdict_prob,omitempty"`
	// Expected are the judge's G-Eval expected scores (engine.ExpectedScore:
	// each 1–5 score weighted by its probability at the score's token), by
	// score name, where --logprobs gave them; beside the scores read, never
	// in their place.
	Expected map[string]float64 `json:"expected_scores,omitempty"`
}

// Spec is how HIC-Bench's judge is asked: the sampling seed, the
// reply cap, the verdict format (text, the paper's one line, or json) and
// whether the answer is a DHP answer (judged with DHP's own system prompt).
type Spec struct {
	Seed, MaxTokens int
	Format          string
	DHP             bool
	// Subject is the model whose answer is judged (the judge card's
	// self-preference check); empty when none made it (people's texts).
	Subject string
}

// VerdictReader is how a judge's reply about answer is read (halu's
// reader, the authors' rule beside), in a run and in the reply corpus.
func VerdictReader(answer string) judging.Reader[Verdict] {
	return judging.Reader[Verdict]{Text: ParseVerdictText, Paper: ParseVerdictPaper, Quoted: []string{answer}, Check: true, Schema: json.RawMessage(VerdictSchema)}
}

// Judge asks one judge for its verdict on an answer to a question, greedy,
// with the system prompt the authors' code sends for the strategy: DHP's
// own (dhp.py's words without line breaks) for DHP answers,
// EVALUATION_SYSTEM_PROMPT for the others. The verdict is read carefully
// (the headline) and by the authors' rule (beside it). Judge validation
// (package judgeval) asks its judges through this too, so a judge is
// measured with the very prompt and reading a HIC run uses.
func Judge(ctx context.Context, c *engine.Calls, spec Spec, judge, question, answer string) (Judgement, error) {
	system := prompt("evaluation_system_prompt")
	if spec.DHP {
		system = prompt("dhp_evaluation_system_prompt")
	}
	req := localmodels.ChatRequest{
		Model: judge,
		Messages: []localmodels.Message{
			{Role: "system", Content: system},
			{Role: "user", Content: engine.Fill(prompt("evaluation_user_prompt"), map[string]string{"question": question, "answer": answer})},
		},
		Options: localmodels.Options{Temperature: localmodels.Float(0), Seed: localmodels.Int(spec.Seed),
			NumPredict: localmodels.Int(spec.MaxTokens)},
	}
	jd := Judgement{Judge: judge}
	r := VerdictReader(answer)
	r.Subject = spec.Subject
	r.Other = func(o Verdict, unread bool) {
		if jd.OtherUnread = unread; !unread {
			jd.Other = &o
		}
	}
	v, ok, err := judging.JudgeWith(ctx, c, Stage, req, judging.Schema(spec.Format, VerdictSchema), r)
	if err != nil {
		return jd, err
	}
	if ok {
		jd.Scored, jd.Verdict = true, &v
		if resp, has := c.LastReply(Stage, judge); has {
			if p, known := engine.VerdictProb(resp, "hallucination", v.Hallucination); known {
				jd.VerdictProb = &p
			}
			for _, sc := range v.Scores() {
				if e, known := engine.ExpectedScore(resp, sc.Name, sc.Value, 1, 5); known {
					if jd.Expected == nil {
						jd.Expected = map[string]float64{}
					}
					jd.Expected[sc.Name] = e
				}
			}
		}
	}
	return jd, nil
}
