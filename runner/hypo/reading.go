package hypo

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"halu/metrics"
	"halu/runner/judging"
)

// Reading a hypothesis: the proposed statement and the relation it asserts,
// from JSON, marker lines or prose.

var (
	hypoKey    = regexp.MustCompile(`(?s)["']proposed_hypothesis["']\s*:\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')`)
	hypoLine   = regexp.MustCompile(`(?im)^[\s\-*>#]*(?:proposed|final)[ _]hypothesis\s*:\s*(.+)$`)
	negationRE = regexp.MustCompile(`(?i)\b(?:not|no|never|neither|nor|without|cannot)\b|n't\b`)
)

// labelSynonyms maps verbs and their inflections, read as word stems in a
// normalised statement (lower case, spaces and hyphens as underscores), to
// the labels they state. A statement naming a label itself is read by the
// label; otherwise by these stems. Two labels, or a negation beside a
// directional label, are ambiguous: unparseable, never a guess.
var labelSynonyms = map[string][]string{
	"positive_correlate": {"positively_correlat", "positive_correlation", "upregulat", "up_regulat", "increas", "enhanc", "activat", "induc", "promot", "stimulat"},
	"negative_correlate": {"negatively_correlat", "negative_correlation", "downregulat", "down_regulat", "decreas", "reduc", "suppress", "inhibit", "attenuat", "block"},
	"stimulate":          {"stimulat", "upregulat", "up_regulat", "increas", "enhanc", "activat", "induc", "promot", "positively_correlat", "positive_correlat"},
	"inhibit":            {"inhibit", "suppress", "downregulat", "down_regulat", "decreas", "reduc", "attenuat", "block", "negatively_correlat", "negative_correlat"},
	metrics.NoRelation:   {"no_relation", "no_significant_relation", "not_related", "unrelated", "no_association", "no_direct_relation", "no_known_relation"},
}

// ParseHypothesis takes the proposed_hypothesis the output states (reasoning
// removed; the last JSON object with that key, also Python-style quoting;
// else a "Proposed hypothesis:" line) and maps it to exactly one of the
// task's labels: the labels themselves, spaces and hyphens read as
// underscores, else the verbs of labelSynonyms. None, several, or a
// directional label under negation ⇒ unparseable ("", false); the
// statement is returned either way.
func ParseHypothesis(output string, labels []string) (statement, label string, ok bool) {
	out := judging.StripReasoning(output)
	for _, obj := range judging.JSONObjects(out) {
		var v struct {
			H any `json:"proposed_hypothesis"`
		}
		if json.Unmarshal(obj, &v) == nil && v.H != nil {
			statement = fmt.Sprint(v.H)
		}
	}
	if statement == "" {
		if ms := hypoKey.FindAllStringSubmatch(out, -1); len(ms) > 0 {
			if m := ms[len(ms)-1]; m[1] != "" {
				_ = json.Unmarshal([]byte(`"`+m[1]+`"`), &statement) // a JSON string
			} else {
				statement = strings.ReplaceAll(m[2], `\'`, "'") // a Python one
			}
		}
	}
	if statement == "" {
		if ms := hypoLine.FindAllStringSubmatch(judging.Plain(out), -1); len(ms) > 0 {
			statement = strings.TrimSpace(ms[len(ms)-1][1])
		}
	}
	if statement == "" {
		return "", "", false
	}
	label, ok = HypothesisLabel(statement, labels)
	return statement, label, ok
}

// A direction set by a verb acting on a change ("prevents the decrease
// of X", "blocks the loss of", "attenuates the reduction in", "enhances the
// loss of") is the composition of the two: a verb that lowers what it acts
// on turns the change round. The verb's and the noun's stems alone would
// read the noun's direction, or both directions.
var (
	actingVerb    = regexp.MustCompile(`(?i)\b(?:(prevent|block|attenuat|revers|counteract|abolish|abrogat|rescu|mitigat|inhibit|suppress|reduc|ameliorat|antagoniz|diminish|lessen|alleviat|limit|decreas)|(increas|enhanc|promot|induc|stimulat|accelerat|exacerbat|aggravat|potentiat|augment|amplif))(?:e|es|ed|ing|s|ies|y)?\s+(?:the\s+|an?\s+|its\s+|their\s+)?(?:[\w-]+\s+){0,3}?(?:(decrease|decline|reduction|loss|depletion|down-?regulation|suppression|inhibition|deficiency)|(increase|elevation|rise|up-?regulation|induction|activation|accumulation|overexpression))\b`)
	directionWord = regexp.MustCompile(`(?i)correlat|regulat|increas|enhanc|activat|induc|promot|stimulat|decreas|reduc|suppress|inhibit|attenuat|block|prevent|revers|loss|declin|elevat`)
)

// composedLabel reads a direction set by a verb acting on a change (see
// actingVerb): ok is true when the statement holds exactly one such phrase,
// no other directional word and no negation; found is true when it holds
// one at all (the statement is then read by composition or not at all).
func composedLabel(statement string, labels []string) (label string, found, ok bool) {
	ms := actingVerb.FindAllStringSubmatchIndex(statement, -1)
	if len(ms) == 0 {
		return "", false, false
	}
	if len(ms) > 1 || negationRE.MatchString(statement) {
		return "", true, false
	}
	m := ms[0]
	rest := statement[:m[0]] + " " + statement[m[1]:]
	if directionWord.MatchString(rest) {
		return "", true, false
	}
	lowers, lowered := m[2] >= 0, m[6] >= 0
	positive := lowers == lowered // lowering a fall raises; raising a rise raises
	for _, l := range labels {
		switch {
		case positive && (l == "positive_correlate" || l == "stimulate"),
			!positive && (l == "negative_correlate" || l == "inhibit"):
			return l, true, true
		}
	}
	return "", true, false
}

// LabelSchema is the structured output of --hypothesis-format labels: the
// prompt's JSON object, its proposed_hypothesis one of labels.
func LabelSchema(labels []string) json.RawMessage {
	b, err := json.Marshal(map[string]any{
		"type":       "object",
		"properties": map[string]any{"proposed_hypothesis": map[string]any{"type": "string", "enum": labels}},
		"required":   []string{"proposed_hypothesis"},
	})
	if err != nil {
		panic(err) // strings only
	}
	return b
}

// labelSpaces write a label's spaces and hyphens as its underscores.
var labelSpaces = strings.NewReplacer(" ", "_", "-", "_")

// bareLabel is the label a statement is, word for word (the reply of a
// model held to the labels, and most others'), when no other label is
// within it: what the readings below give such a statement (no verb acting
// on a change, no negation: a label has no space), without their
// patterns' cost.
func bareLabel(statement string, labels []string) (string, bool) {
	if !slices.Contains(labels, statement) {
		return "", false
	}
	for _, l := range labels {
		if l != statement && strings.Contains(statement, l) {
			return "", false
		}
	}
	return statement, true
}

// HypothesisLabel maps a hypothesis statement to one of labels (see
// ParseHypothesis).
func HypothesisLabel(statement string, labels []string) (string, bool) {
	if l, ok := bareLabel(statement, labels); ok {
		return l, true
	}
	return readLabel(statement, labels)
}

// readLabel maps a statement to one of labels by its words: a verb acting
// on a change (composedLabel), else the labels and their synonyms within
// it, exactly one, not negated.
func readLabel(statement string, labels []string) (string, bool) {
	if l, found, ok := composedLabel(statement, labels); found {
		return l, ok
	}
	norm := labelSpaces.Replace(strings.ToLower(statement))
	var found []string
	for _, l := range labels {
		if strings.Contains(norm, l) {
			found = append(found, l)
		}
	}
	if len(found) == 0 {
		for _, l := range labels {
			for _, stem := range labelSynonyms[l] {
				if strings.Contains(norm, stem) {
					found = append(found, l)
					break
				}
			}
		}
	}
	if len(found) != 1 {
		return "", false
	}
	if found[0] != metrics.NoRelation && negationRE.MatchString(statement) {
		return "", false
	}
	return found[0], true
}
