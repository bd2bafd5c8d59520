package intent

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Countable constraints are checked by code, not by the judge: the paper
// (§8.1, "LLMs struggle with numbers and words") finds models fail exactly
// these, and judges count no better. A constraint is checked by code only
// when its text matches one of the patterns below; the record says which.
//
// Patterns (case-insensitive; N in digits or as a word up to "twenty"):
//
//	words-per-line     "N words per line", "each line … N words"       every line has N words
//	lines-per-stanza   "each stanza … N lines", "N lines per stanza"   every stanza has N lines
//	stanzas            "N stanzas"                                     N blank-line-separated stanzas
//	lines              "N lines", "at least/at most N lines"          non-empty lines
//	line-end-letter    "every/each line … end(s) with the letter X"    last letter of each line
//	line-end-word      "every/each line … end(s) with the word X"      last word of each line
//	forbid-letter      "not … the letter X", "without the letter X"    X absent
//	forbid-word        "not … the word X", "avoid the word X"          X absent as a word
//	require-word       "include/contain/use/mention the word X"        X present as a word
//	max-words          "at most / no more than / fewer than N words"   word count
//	min-words          "at least / more than N words"                  word count
//	exact-words        "exactly N words"                               word count
//
// Lines are the response's non-empty lines, stanzas its blank-line
// separated blocks; a first line that is a markdown title ("# …", "**…**",
// "Title: …") is not counted. Words are whitespace-separated tokens with at
// least one letter or digit.
type check struct {
	rule string
	re   *regexp.Regexp
	eval func(m []string, r response) bool
}

const num = `(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty)`

var numberWords = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
	"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
	"seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20}

func atoi(s string) int {
	if n, ok := numberWords[strings.ToLower(s)]; ok {
		return n
	}
	n, _ := strconv.Atoi(s)
	return n
}

const quoted = `['"“‘]?([\p{L}\p{N}-]+)['"”’]?`

var checks = []check{
	{"words-per-line", regexp.MustCompile(`(?i)(?:(?:exactly )?` + num + ` words? (?:per|in each|on each|for each|in every|on every) line|(?:each|every) line[^.;]*?(?:exactly )?` + num + ` words?\b)`),
		func(m []string, r response) bool {
			n := atoi(first(m[1], m[2]))
			return len(r.lines) > 0 && all(r.lines, func(l string) bool { return len(words(l)) == n })
		}},
	{"lines-per-stanza", regexp.MustCompile(`(?i)(?:(?:each|every) stanza[^.;]*?(?:exactly )?` + num + ` lines?|` + num + ` lines? (?:per|in each|for each) stanza)`),
		func(m []string, r response) bool {
			n := atoi(first(m[1], m[2]))
			return len(r.stanzas) > 0 && all(r.stanzas, func(s string) bool { return len(nonEmpty(s)) == n })
		}},
	{"stanzas", regexp.MustCompile(`(?i)\b` + num + ` stanzas?\b`),
		func(m []string, r response) bool { return len(r.stanzas) == atoi(m[1]) }},
	{"lines", regexp.MustCompile(`(?i)(at least |no fewer than |more than |at most |no more than |fewer than )?\b(?:exactly )?` + num + ` lines?\b`),
		func(m []string, r response) bool {
			n, l := atoi(m[2]), len(r.lines)
			switch strings.TrimSpace(strings.ToLower(m[1])) {
			case "at least", "no fewer than":
				return l >= n
			case "more than":
				return l > n
			case "at most", "no more than":
				return l <= n
			case "fewer than":
				return l < n
			}
			return l == n
		}},
	{"line-end-letter", regexp.MustCompile(`(?i)(?:each|every|all) lines?[^.;]*?ends? with (?:the )?(?:letter|character) ` + quoted),
		func(m []string, r response) bool {
			x := strings.ToLower(m[1])
			return len(r.lines) > 0 && all(r.lines, func(l string) bool { return strings.HasSuffix(strings.ToLower(lastWord(l)), x) })
		}},
	{"line-end-word", regexp.MustCompile(`(?i)(?:each|every|all) lines?[^.;]*?ends? with (?:the )?word ` + quoted),
		func(m []string, r response) bool {
			x := strings.ToLower(m[1])
			return len(r.lines) > 0 && all(r.lines, func(l string) bool { return strings.ToLower(lastWord(l)) == x })
		}},
	{"forbid-letter", regexp.MustCompile(`(?i)(?:not|never|avoid|without|no)\b[^.;]*?\bthe letter ` + quoted),
		func(m []string, r response) bool {
			return !strings.Contains(strings.ToLower(r.body), strings.ToLower(m[1]))
		}},
	{"forbid-word", regexp.MustCompile(`(?i)(?:not|never|avoid|without|no)\b[^.;]*?\bthe (?:word|term) ` + quoted),
		func(m []string, r response) bool { return !hasWord(r.body, m[1]) }},
	{"require-word", regexp.MustCompile(`(?i)(?:include|contain|use|mention|feature)s?\b[^.;]*?\bthe (?:word|term) ` + quoted),
		func(m []string, r response) bool { return hasWord(r.body, m[1]) }},
	{"max-words", regexp.MustCompile(`(?i)(at most|no more than|not exceed|maximum of|up to|fewer than|less than|under) ` + num + ` words\b`),
		func(m []string, r response) bool {
			n, w := atoi(m[2]), len(words(r.body))
			switch strings.ToLower(m[1]) {
			case "fewer than", "less than", "under":
				return w < n
			}
			return w <= n
		}},
	{"min-words", regexp.MustCompile(`(?i)(at least|no fewer than|minimum of|more than|over) ` + num + ` words\b`),
		func(m []string, r response) bool {
			n, w := atoi(m[2]), len(words(r.body))
			switch strings.ToLower(m[1]) {
			case "more than", "over":
				return w > n
			}
			return w >= n
		}},
	{"exact-words", regexp.MustCompile(`(?i)exactly ` + num + ` words\b`),
		func(m []string, r response) bool { return len(words(r.body)) == atoi(m[1]) }},
}

// response is a response cut into the units the checks count.
type response struct {
	body    string
	lines   []string
	stanzas []string
}

var blankLineRE = regexp.MustCompile(`\n\s*\n`)

var titleRE = regexp.MustCompile(`^(#+\s|\*\*[^*]+\*\*$|(?i:title)\s*:)`)

func parseResponse(text string) response {
	lines := strings.Split(strings.ReplaceAll(strings.TrimSpace(text), "\r\n", "\n"), "\n")
	if len(lines) > 0 && titleRE.MatchString(strings.TrimSpace(lines[0])) {
		lines = lines[1:]
	}
	body := strings.TrimSpace(strings.Join(lines, "\n"))
	r := response{body: body, lines: nonEmpty(body)}
	for _, s := range blankLineRE.Split(body, -1) {
		if strings.TrimSpace(s) != "" {
			r.stanzas = append(r.stanzas, s)
		}
	}
	return r
}

// CheckCountable returns the code's verdict on a constraint, with the rule
// that decided it; ok is false when no rule applies (the judge decides).
func CheckCountable(constraint, responseText string) (satisfied bool, rule string, ok bool) {
	r := parseResponse(responseText)
	for _, c := range checks {
		if m := c.re.FindStringSubmatch(constraint); m != nil {
			return c.eval(m, r), c.rule, true
		}
	}
	return false, "", false
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func nonEmpty(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

func words(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		if strings.IndexFunc(f, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) >= 0 {
			out = append(out, f)
		}
	}
	return out
}

func lastWord(line string) string {
	ws := words(line)
	if len(ws) == 0 {
		return ""
	}
	return strings.TrimFunc(ws[len(ws)-1], func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

// hasWord reports whether w occurs in body as a whole word, ignoring case.
func hasWord(body, w string) bool {
	lb, lw := strings.ToLower(body), strings.ToLower(w)
	isWord := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }
	for i := 0; ; {
		j := strings.Index(lb[i:], lw)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(lw)
		before, _ := utf8.DecodeLastRuneInString(lb[:start])
		after, _ := utf8.DecodeRuneInString(lb[end:])
		if (start == 0 || !isWord(before)) && (end == len(lb) || !isWord(after)) {
			return true
		}
		i = start + 1
	}
}

func all(xs []string, f func(string) bool) bool {
	for _, x := range xs {
		if !f(x) {
			return false
		}
	}
	return true
}
