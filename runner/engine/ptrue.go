package engine

import (
	"context"
	"math"
	"strings"

	"halu/localmodels"
)

// PTrueStage is the stage of the P(True) calls.
const PTrueStage = "p-true"

// pTruePrompt is the zero-shot P(True) prompt of Farquhar et al.'s code
// (github.com/jlko/semantic_uncertainty, MIT: p_true.py,
// calculate_p_true, without its few-shot prefix), after Kadavath et al.
// (2022), "Language models (mostly) know what they know".
const pTruePrompt = "Question: {question}\nBrainstormed Answers: {brainstormed}Possible answer: {answer}\nIs the possible answer:\nA) True\nB) False\nThe possible answer is:"

// PTrue asks model, which wrote answer to question, whether answer is
// true, shown its other samples (brainstormed; may be empty): Kadavath et
// al.'s P(True), the probability the model gives "A) True" as the next
// token — here the A among the most likely first tokens, over A and B
// (20 alternatives asked, greedy, one token; a thinking model is asked not
// to think). unknown, when not empty, is why the score is not known
// (PTrueOf): it is then never guessed. One call, cached and planned as
// every call.
func (c *Calls) PTrue(ctx context.Context, model, question string, brainstormed []string, answer string) (p float64, unknown string, err error) {
	var b strings.Builder
	for _, s := range append(append([]string(nil), brainstormed...), answer) {
		b.WriteString(strings.TrimSpace(s) + "\n")
	}
	req := localmodels.ChatRequest{
		Model: model,
		Messages: []localmodels.Message{{Role: "user", Content: Fill(pTruePrompt,
			map[string]string{"question": question, "brainstormed": b.String(), "answer": answer})}},
		Options:     localmodels.Options{Temperature: localmodels.Float(0), NumPredict: localmodels.Int(1)},
		Logprobs:    true,
		TopLogprobs: 20,
	}
	info, err := c.e.ModelInfo(ctx, model)
	if err != nil {
		return math.NaN(), "", err
	}
	if info.Thinks() {
		req.Think = new(bool)
	}
	resp, err := c.Chat(ctx, PTrueStage, req, 0)
	if err != nil {
		return math.NaN(), "", err
	}
	p, unknown = PTrueOf(resp)
	return p, unknown, nil
}

// Why a P(True) is not known, as PTrueOf says it: the reply carried no
// log-probabilities at all (a server that ignores the request), its first
// token came without alternatives (top_logprobs ignored), or neither letter
// was among them.
const (
	PTrueNoLogprobs    = "no log-probabilities returned"
	PTrueNoAlternative = "no alternatives for the first token"
	PTrueNoLetter      = "neither A nor B among the first token's alternatives"
)

// PTrueOf reads P(True) from a reply's first token: the probability of the
// alternatives that read as the letter A — "A", " A", "(A", "A)" — over
// those that read as A or B — a first token "A" is read as the option, as
// Kadavath et al. read it (the prompt ends "The possible answer is:").
// Not known when the reply carries no log-probabilities, no alternatives,
// or neither letter among them: unknown says which (PTrueNoLogprobs,
// PTrueNoAlternative, PTrueNoLetter), "" when p is known.
func PTrueOf(resp localmodels.ChatResponse) (p float64, unknown string) {
	if len(resp.Logprobs) == 0 {
		return math.NaN(), PTrueNoLogprobs
	}
	// Without alternatives the chosen token alone would make P(True) 1 or
	// 0: a server that ignores top_logprobs gives no P(True).
	alts := resp.Logprobs[0].Top
	if len(alts) == 0 {
		return math.NaN(), PTrueNoAlternative
	}
	var pa, pb float64
	for _, a := range alts {
		switch strings.Trim(strings.TrimSpace(a.Token), "().:") {
		case "A":
			pa += math.Exp(a.Logprob)
		case "B":
			pb += math.Exp(a.Logprob)
		}
	}
	if pa+pb == 0 {
		return math.NaN(), PTrueNoLetter
	}
	return pa / (pa + pb), ""
}
