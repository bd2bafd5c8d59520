package engine

import (
	"math"
	"regexp"
	"strconv"
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
// their first two letters or more as tokens may cut them: a lone "y", "n",
// "t" or "f" begins too many other words to be read as a value). An
// opposite value missing from the alternatives counts 0: it was less
// likely than the last of them. ok is false — never guessed — when the
// reply carries no log-probabilities or alternatives, names the field more
// than once (a revision, a verdict quoted from the judged text) or not at
// all, the value there is not the verdict read, or the chosen value is not
// among the alternatives (nothing there measures it: a server's
// alternatives that miss the chosen token weigh nothing against it).
//
// Under structured output the server reports the unconstrained model's
// log-probabilities; the ratio of the two values' probabilities is then the
// constrained distribution's (a schema that allows only the two values at
// this position renormalises over them), at temperature 1.
func VerdictProb(resp localmodels.ChatResponse, field string, verdict bool) (p float64, ok bool) {
	k, at, found := valueToken(resp, field, letters)
	if !found {
		return math.NaN(), false
	}
	starts := tokenStarts(resp)
	side := verdictSide
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
		return math.NaN(), false // the chosen value is not among its alternatives
	}
	return same / (same + other), true
}

// verdictSide is the value a token begins: +1 yes or true, −1 no or false,
// 0 neither (or a lone letter).
func verdictSide(tok string) int {
	w := strings.ToLower(letters(tok))
	if len(w) < 2 {
		return 0
	}
	switch {
	case strings.HasPrefix("yes", w), strings.HasPrefix("true", w):
		return 1
	case strings.HasPrefix("no", w), strings.HasPrefix("false", w):
		return -1
	}
	return 0
}

// tokenStarts are the offsets of resp's tokens in the reply they make.
func tokenStarts(resp localmodels.ChatResponse) []int {
	starts := make([]int, len(resp.Logprobs))
	n := 0
	for i, t := range resp.Logprobs {
		starts[i] = n
		n += len(t.Token)
	}
	return starts
}

// valueToken finds the token k that begins the value after field's one
// mention in resp's tokens (`"field": …`, `Field: …`) and at, the value's
// offset in the reply; word gives the part of a token a value is read
// from ("" when it holds none: the field's separator ended the token and
// the value begins the next). found is false when the reply carries no
// log-probabilities, or names the field more than once (a revision, a
// value quoted from the judged text: which one the reader read is not
// known here) or not at all.
func valueToken(resp localmodels.ChatResponse, field string, word func(string) string) (k, at int, found bool) {
	if len(resp.Logprobs) == 0 || field == "" {
		return 0, 0, false
	}
	var text strings.Builder
	for _, t := range resp.Logprobs {
		text.WriteString(t.Token)
	}
	starts := tokenStarts(resp)
	re := regexp.MustCompile(`(?i)` + regexp.QuoteMeta(field) + `\W{0,6}?\s*[:：]\s*\**\s*"?`)
	locs := re.FindAllStringIndex(text.String(), -1)
	if len(locs) != 1 {
		return 0, 0, false
	}
	at = locs[0][1]
	// The token holding the value's first character.
	k = -1
	for i := range resp.Logprobs {
		if starts[i] <= at && at < starts[i]+len(resp.Logprobs[i].Token) {
			k = i
			break
		}
	}
	for k >= 0 && k < len(resp.Logprobs) && word(resp.Logprobs[k].Token[max(0, at-starts[k]):]) == "" {
		if rest := resp.Logprobs[k].Token[max(0, at-starts[k]):]; strings.IndexFunc(rest, unicode.IsLetter) >= 0 || strings.IndexFunc(rest, unicode.IsDigit) >= 0 {
			return 0, 0, false // a word before the value: not the value's token
		}
		k++ // the field's separator ended this token: the value begins the next
		if k < len(resp.Logprobs) {
			at = starts[k]
		}
	}
	if k < 0 || k >= len(resp.Logprobs) {
		return 0, 0, false
	}
	return k, at, true
}

// ExpectedScore is G-Eval's probability-weighted score (Liu et al., EMNLP
// 2023, eq. 1: Σ p(sᵢ)·sᵢ) of the integer score a judge gave in field, read
// as read by the suite's reader, on the scale lo–hi: at the token that
// begins the value after the field's one mention, the scale's scores among
// the position's alternatives, each weighted by its probability over
// theirs. ok is false — never guessed — when the reply carries no
// log-probabilities or alternatives, names the field more than once or not
// at all, the score there is not the one read or not among the
// alternatives, or it is written in more than one token (a "10": its
// alternatives are first digits, not scores).
func ExpectedScore(resp localmodels.ChatResponse, field string, read, lo, hi int) (e float64, ok bool) {
	k, at, found := valueToken(resp, field, digits)
	if !found {
		return math.NaN(), false
	}
	starts := tokenStarts(resp)
	chosen := resp.Logprobs[k]
	v := strings.TrimLeft(chosen.Token[max(0, at-starts[k]):], " \"*")
	d := digits(v)
	if d == "" || !strings.HasPrefix(v, d) || d != strconv.Itoa(read) {
		return math.NaN(), false
	}
	if len(v) == len(d) && k+1 < len(resp.Logprobs) && strings.IndexFunc(resp.Logprobs[k+1].Token, unicode.IsDigit) == 0 {
		return math.NaN(), false // the number goes on in the next token
	}
	if len(chosen.Top) == 0 {
		return math.NaN(), false
	}
	var mass, sum float64
	readThere := false
	for _, a := range chosen.Top {
		t := strings.TrimLeft(a.Token, " \"*")
		d := digits(t)
		if d == "" || !strings.HasPrefix(t, d) {
			continue
		}
		n, err := strconv.Atoi(d)
		if err != nil || n < lo || n > hi {
			continue
		}
		p := math.Exp(a.Logprob)
		mass += p
		sum += p * float64(n)
		readThere = readThere || n == read
	}
	if mass == 0 || !readThere {
		return math.NaN(), false // the score read is not among the alternatives: nothing measures it
	}
	return sum / mass, true
}

// digits is the first run of digits in tok ("" when none).
func digits(tok string) string { return firstRun(tok, unicode.IsDigit) }

// letters is the first run of letters in tok ("" when none): a token's
// word without the quote, colon or space before it and the comma after.
func letters(tok string) string { return firstRun(tok, unicode.IsLetter) }

// firstRun is the first run of runes in tok that are all in ("" when none).
func firstRun(tok string, in func(rune) bool) string {
	start := strings.IndexFunc(tok, in)
	if start < 0 {
		return ""
	}
	rest := tok[start:]
	if end := strings.IndexFunc(rest, func(r rune) bool { return !in(r) }); end >= 0 {
		return rest[:end]
	}
	return rest
}
