package engine

import (
	"math"
	"regexp"
	"strings"
	"unicode"

	"halu/localmodels"
)

// VerdictProb is a judge's probability for the yes/no verdict it gave in
// field (a field name as the reply writes it: "hallucination"), read as
// verdict (true: yes) by the suite's reader: at the token that begins the
// value after the field's one mention — `"field": true`, `Field: Yes` —
// the chosen value's probability over its own and the opposite value's
// among the position's alternatives ("yes"/"true" against "no"/"false", by
// their first letters as tokens may cut them). An opposite value missing
// from the alternatives counts 0: it was less likely than the last of
// them. ok is false — never guessed — when the reply carries no
// log-probabilities or alternatives, names the field more than once (a
// revision, a verdict quoted from the judged text) or not at all, or the
// value there is not the verdict read.
func VerdictProb(resp localmodels.ChatResponse, field string, verdict bool) (p float64, ok bool) {
	if len(resp.Logprobs) == 0 || field == "" {
		return math.NaN(), false
	}
	var text strings.Builder
	starts := make([]int, len(resp.Logprobs))
	for i, t := range resp.Logprobs {
		starts[i] = text.Len()
		text.WriteString(t.Token)
	}
	s := text.String()
	re := regexp.MustCompile(`(?i)` + regexp.QuoteMeta(field) + `\W{0,6}?\s*[:：]\s*\**\s*"?`)
	locs := re.FindAllStringIndex(s, -1)
	if len(locs) != 1 {
		// None, or several: a revision, a verdict quoted from the judged
		// text, prose about the field — which one the reader read is not
		// known here.
		return math.NaN(), false
	}
	at := locs[0][1]
	// The token holding the value's first letter.
	k := -1
	for i := range resp.Logprobs {
		if starts[i] <= at && at < starts[i]+len(resp.Logprobs[i].Token) {
			k = i
			break
		}
	}
	for k >= 0 && k < len(resp.Logprobs) && letters(resp.Logprobs[k].Token[max(0, at-starts[k]):]) == "" {
		k++ // the field's separator ended this token: the value begins the next
		if k < len(resp.Logprobs) {
			at = starts[k]
		}
	}
	if k < 0 || k >= len(resp.Logprobs) {
		return math.NaN(), false
	}
	side := func(tok string) int { // +1 yes, −1 no, 0 neither
		w := strings.ToLower(letters(tok))
		switch {
		case strings.HasPrefix("yes", w) && w != "", strings.HasPrefix("true", w) && w != "":
			return 1
		case strings.HasPrefix("no", w) && w != "", strings.HasPrefix("false", w) && w != "":
			return -1
		}
		return 0
	}
	chosen := resp.Logprobs[k]
	dir := side(chosen.Token[max(0, at-starts[k]):])
	if dir == 0 || (dir == 1) != verdict {
		return math.NaN(), false
	}
	alts := chosen.Top
	if len(alts) == 0 {
		return math.NaN(), false // no alternatives asked: nothing to weigh it against
	}
	var same, other float64
	for _, a := range alts {
		switch side(a.Token) {
		case dir:
			same += math.Exp(a.Logprob)
		case -dir:
			other += math.Exp(a.Logprob)
		}
	}
	if same == 0 {
		same = math.Exp(chosen.Logprob)
	}
	return same / (same + other), true
}

// letters is the first run of letters in tok ("" when none): a token's
// word without the quote, colon or space before it and the comma after.
func letters(tok string) string {
	start := strings.IndexFunc(tok, unicode.IsLetter)
	if start < 0 {
		return ""
	}
	rest := tok[start:]
	if end := strings.IndexFunc(rest, func(r rune) bool { return !unicode.IsLetter(r) }); end >= 0 {
		return rest[:end]
	}
	return rest
}
