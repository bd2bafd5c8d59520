package hic

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"halu/localmodels"
	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/hic/hicjudge"
	"halu/runner/judging"
)

// EntailmentStage is the stage of the entailment calls (--entailment).
const EntailmentStage = "entailment"

// Entailment verdicts, as Farquhar et al.'s prompt asks for them.
const (
	Entails       = "entailment"
	Contradiction = "contradiction"
	Neutral       = "neutral"
)

// SemanticSets sorts a question's answers into semantic sets (Kuhn, Gal &
// Farquhar 2023, Algorithm 1): an answer joins the first set whose first
// answer it entails and that entails it — strict bidirectional entailment,
// the authors' default — else starts a set. Each "does answer i entail
// answer j" is one call to model with Farquhar et al.'s prompt, greedy,
// cached and planned as every call. A reply that does not read leaves the
// sorting unsure: the sets are then nil and unread counts the replies not
// read (never guessed neutral, as the authors' code does).
func SemanticSets(ctx context.Context, c *engine.Calls, spec hicjudge.Spec, model, question string, answers []string) (sets []int, unread int, err error) {
	entails := func(i, j int) bool {
		if err != nil {
			return false
		}
		req := localmodels.ChatRequest{
			Model: model,
			Messages: []localmodels.Message{{Role: "user", Content: engine.Fill(prompt("entailment_prompt"),
				map[string]string{"question": question, "answer1": answers[i], "answer2": answers[j]})}},
			Options: localmodels.Options{Temperature: localmodels.Float(0), Seed: localmodels.Int(spec.Seed), NumPredict: localmodels.Int(spec.MaxTokens)},
		}
		v, ok, e := judging.JudgeWith(ctx, c, EntailmentStage, req, nil, EntailmentReader(question, answers[i], answers[j]))
		if e != nil {
			err = e
			return false
		}
		if !ok {
			unread++
			return false
		}
		return v == Entails
	}
	if c.Planning() {
		k := len(answers)
		c.PlanAssumes("entailment: each question's %d answers planned as if no two shared a meaning and every first question were answered no (%d calls a question); a run makes from %d (one meaning) to %d", k, k*(k-1)/2, k-1, k*(k-1))
	}
	sets = metrics.SemanticSets(len(answers), entails)
	if err != nil {
		return nil, unread, err
	}
	if unread > 0 {
		return nil, unread, nil
	}
	return sets, 0, nil
}

// EntailmentReader reads an entailment reply: halu's reader takes the
// verdict a reply states — one of the three words, alone (a reply naming
// two, or negating the one it names, does not read); the authors' rule
// (semantic_entropy.py) looks in the first 30 characters for entailment,
// then neutral, then contradiction, and reads neutral when none is there.
// quoted are the texts the prompt shows — the question and the two
// answers —, whose words a reply that repeats them does not state.
func EntailmentReader(quoted ...string) judging.Reader[string] {
	var shown []string
	for _, a := range quoted {
		if strings.TrimSpace(a) != "" {
			shown = append(shown, a)
		}
	}
	return judging.Reader[string]{Text: parseEntailment, Paper: parseEntailmentPaper, Quoted: shown}
}

var (
	entailmentWord = regexp.MustCompile(`(?i)\b(entailment|entails|contradiction|contradicts|neutral)\b|(蕴含|蕴涵|矛盾|中立|中性)`)
	negatedBefore  = regexp.MustCompile(`(?i)(?:\bnot|n't|\bno|不是|并非|不)\s*(?:an?\s+)?$`)
	// optionsEcho is the prompt's list of verdicts repeated in a reply
	// ("entailment, contradiction, or neutral? I'd say …"): not a verdict.
	optionsEcho = regexp.MustCompile(`(?i)(?:respond\s+(?:only\s+)?with\s+)?entailment,\s*contradiction,?\s*(?:or|and)\s*neutral`)
	wordVerdict = map[string]string{"entails": Entails, "contradicts": Contradiction, "蕴含": Entails, "蕴涵": Entails, "矛盾": Contradiction, "中立": Neutral, "中性": Neutral}
)

func parseEntailment(raw string) (string, error) {
	text := optionsEcho.ReplaceAllString(judging.Plain(raw), " ")
	found := ""
	for _, m := range entailmentWord.FindAllStringIndex(text, -1) {
		w := strings.ToLower(text[m[0]:m[1]])
		if v, ok := wordVerdict[w]; ok {
			w = v
		}
		if negatedBefore.MatchString(text[:m[0]]) {
			return "", fmt.Errorf("the reply negates %q", w)
		}
		if found != "" && found != w {
			return "", fmt.Errorf("the reply names both %s and %s", found, w)
		}
		found = w
	}
	if found == "" {
		return "", fmt.Errorf("no verdict (entailment, contradiction or neutral) stated")
	}
	return found, nil
}

func parseEntailmentPaper(raw string) (string, error) {
	head := strings.ToLower(raw)
	if len(head) > 30 {
		head = head[:30]
	}
	for _, w := range []string{Entails, Neutral, Contradiction} {
		if strings.Contains(head, w) {
			return w, nil
		}
	}
	return Neutral, nil
}
