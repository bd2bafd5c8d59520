package judging

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file is the one reading discipline every judge and answer reader
// follows. A reader reads the verdict a model states as its answer:
//
//   - reasoning is removed first (<think>…</think> and its kin; Ollama's
//     separate thinking field never reaches a reader);
//   - text the judge quotes from what it evaluates is removed next (the
//     evaluated text itself, each of its lines, and anything between the
//     Fence markers), so an evaluated answer that imitates a verdict cannot
//     supply one;
//   - a verdict is a labelled answer ("Label: value", bold, bulleted,
//     quoted as a JSON key, with an optional range hint such as "(1-5)"),
//     never a word or letter that merely occurs in prose;
//   - every statement of a field must agree: two different values are
//     ambiguous, and ambiguous is unscored, never a guess.

var (
	reasoningBlock = regexp.MustCompile(`(?is)<(think|thinking|reasoning)>.*?</(?:think|thinking|reasoning)>`)
	reasoningTags  = []string{"think", "thinking", "reasoning"}
)

// StripReasoning removes a reply's reasoning: closed <think>, <thinking> or
// <reasoning> blocks; everything up to a closing tag whose opening tag the
// chat template put in the prompt; and everything after an opening tag that
// never closed (the answer never came).
func StripReasoning(s string) string {
	s = reasoningBlock.ReplaceAllString(s, "")
	low := strings.ToLower(s)
	for _, t := range reasoningTags {
		if i := strings.LastIndex(low, "</"+t+">"); i >= 0 {
			s, low = s[i+len(t)+3:], low[i+len(t)+3:]
		}
	}
	for _, t := range reasoningTags {
		if i := strings.Index(low, "<"+t+">"); i >= 0 {
			s, low = s[:i], low[:i]
		}
	}
	return strings.TrimSpace(s)
}

// Answer is what an answer reader reads of a model's answer (a C-FAITH
// choice or true/false judgement, a TruthHypo hypothesis label): the reply
// without its reasoning, from its last revision on (Revision). Judge
// replies are read by Read, which also removes quoted evaluated text.
func Answer(reply string) string {
	return Revision(StripReasoning(reply))
}

// revisionMark is where a reply takes back what it said. Two kinds:
//
//   - words that revise wherever they stand: "On second thought", "On
//     reflection", "Upon reflection", "Wait,", "I made a mistake", "Let me
//     correct/revise/reconsider", "I'd revise/lower/raise it to", "a fairer
//     score", "more like a 6", "should actually be"; 更正, 修正, 纠正,
//     "不对，", 重新核对/考虑/评估/判断, and a contrast that says what a
//     fact should be ("不过…应为", "但…应该是");
//   - words that revise only where they begin a clause: "Correction:",
//     "Corrected:", "Revised:", "Revision:" (not "the revised plan", not
//     "needs no correction").
//
// Softer words ("However", "Actually") are not marks: judges use them
// inside an analysis that ends in the verdict.
var (
	revisionAnywhere = regexp.MustCompile(`(?i)\b(?:on (?:second thought|reflection|closer (?:look|inspection))|upon (?:reflection|review|closer (?:look|inspection))|wait\s*[,.:!—–-]|i made (?:a|an) (?:mistake|error)|let me (?:correct|revise|reconsider|re-?evaluate|adjust)|i(?:'d| would) (?:revise|lower|raise|adjust|change|downgrade|upgrade)\b|(?:a )?(?:fairer|more accurate|better) (?:score|rating|grade|verdict|answer)|(?:is|be|feels|seems) (?:more like|closer to) (?:a |an )?\d|should actually be)|更正|修正|纠正|重新(?:核对|考虑|评估|判断)|(?:不过|但是?|然而)[^。\n]{0,40}?应(?:为|该是|当是)`)
	revisionClause   = regexp.MustCompile(`(?im)(?:^|[.!?;。！？；]\s*|[-—–:]\s+|\(\s*)[*_#>\s]*(correction|corrected|revised|revision)\b|(?:^|[。！？；，,.!?;]\s*)(不对)[，,。：:]`)
	revisionNegated  = regexp.MustCompile(`(?i)\b(?:no|not|without|needs? no|any)[ \t]+$`)
)

// Revision is what a reply states from its last revision on: a judge that
// revises its verdict ("… Hallucination: No. Correction: … Revised:
// Hallucination: Yes") answers with the revision. The reader then needs
// the whole verdict there; a revision that restates only part of it ("On
// reflection the originality is more like a 6") leaves the reply unread
// (unscored, counted) rather than read as first stated. A mark inside a
// JSON object (a critic's analysis field) is the object's text, not a
// revision of it.
func Revision(s string) string {
	at := -1
	inJSON := jsonSpans(s)
	mark := func(i int) {
		for _, sp := range inJSON {
			if i >= sp[0] && i < sp[1] {
				return
			}
		}
		if i > at {
			at = i
		}
	}
	for _, loc := range revisionAnywhere.FindAllStringIndex(s, -1) {
		mark(loc[0])
	}
	for _, m := range revisionClause.FindAllStringSubmatchIndex(s, -1) {
		at := m[2]
		if at < 0 {
			at = m[4] // 不对， at a clause's start
		} else if revisionNegated.MatchString(s[:at]) {
			continue
		}
		mark(at)
	}
	if at < 0 {
		return s
	}
	return strings.TrimSpace(s[at:])
}

// jsonSpans are the byte ranges of the complete JSON objects in s.
func jsonSpans(s string) [][2]int {
	var out [][2]int
	for i := 0; i < len(s); {
		j := strings.IndexByte(s[i:], '{')
		if j < 0 {
			break
		}
		i += j
		dec := json.NewDecoder(strings.NewReader(s[i:]))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil || len(raw) == 0 || raw[0] != '{' {
			i++
			continue
		}
		n := int(dec.InputOffset())
		out = append(out, [2]int{i, i + n})
		i += n
	}
	return out
}

// DropCutWord removes the word a reply ends in when it may have been cut
// mid-way: a reply stopped at its length cap that ends in a letter or digit
// ("Score: 1" of "Score: 10", "Hallucination: No" of "Not really") loses
// that trailing run; one that ends in a space, newline or punctuation
// ('{"groundness":1}', "Score: 7.") keeps everything.
func DropCutWord(s string) string {
	return strings.TrimRightFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) })
}

// The markers around evaluated text in the judge prompts halu writes.
const (
	FenceOpen  = "<<<EVALUATED TEXT>>>"
	FenceClose = "<<<END OF EVALUATED TEXT>>>"
)

// Fence wraps text under evaluation in markers, so a judge can tell it from
// the instructions and a reader can ignore whatever the judge quotes of it.
func Fence(text string) string {
	return FenceOpen + "\n" + strings.TrimSpace(text) + "\n" + FenceClose
}

// minQuotedLine is the shortest part of an evaluated text (non-space
// characters) that Unquote removes wherever the judge repeats it: shorter
// parts ("Yes", "B", "1") are too common to be told from the judge's own
// words.
const minQuotedLine = 6

// Unquote removes from a judge reply what it quotes of the evaluated texts:
// fenced regions, each evaluated text whole, each of its lines and each of
// their sentences — every part long enough to be told from the judge's own
// words (removable), and only where it stands as words of its own (a
// quoted "Score: 1" is not cut out of the judge's "Score: 10").
func Unquote(reply string, evaluated ...string) string {
	for {
		i := strings.Index(reply, FenceOpen)
		if i < 0 {
			break
		}
		j := strings.Index(reply[i:], FenceClose)
		if j < 0 {
			reply = reply[:i]
			break
		}
		reply = reply[:i] + " " + reply[i+j+len(FenceClose):]
	}
	reply = strings.ReplaceAll(reply, FenceClose, " ")
	for _, e := range evaluated {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		reply = removeQuoted(reply, e)
		for _, l := range strings.Split(e, "\n") {
			reply = removeQuoted(reply, l)
			for _, sent := range sentenceEnd.Split(l, -1) {
				reply = removeQuoted(reply, sent)
			}
		}
	}
	return reply
}

// sentenceEnd splits a line into sentences (the end mark stays with each).
var sentenceEnd = regexp.MustCompile(`(?:[.!?。！？])\s+`)

// removeQuoted removes the occurrences of part from reply that stand as
// words of their own, when part is removable.
func removeQuoted(reply, part string) string {
	part = strings.TrimSpace(part)
	if !removable(part) {
		return reply
	}
	first, fn := utf8.DecodeRuneInString(part)
	last, _ := utf8.DecodeLastRuneInString(part)
	var b strings.Builder
	for {
		i := strings.Index(reply, part)
		if i < 0 {
			b.WriteString(reply)
			return b.String()
		}
		j := i + len(part)
		before, _ := utf8.DecodeLastRuneInString(reply[:i])
		after, _ := utf8.DecodeRuneInString(reply[j:])
		if i > 0 && joins(before, first) || j < len(reply) && joins(last, after) {
			// Inside a longer word or number: the judge's, not the quote.
			b.WriteString(reply[:i+fn])
			reply = reply[i+fn:]
			continue
		}
		b.WriteString(reply[:i])
		b.WriteString(" ")
		reply = reply[j:]
	}
}

// removable reports whether a part of an evaluated text can be told from
// the judge's own words: minQuotedLine non-space characters or more, and
// more than a bare label ("START:", "Final answer:"), which is what the
// judge's own verdict begins with.
func removable(part string) bool {
	if len([]rune(strings.Join(strings.Fields(part), ""))) < minQuotedLine {
		return false
	}
	return !bareLabel.MatchString(part)
}

var bareLabel = regexp.MustCompile(`^[^:：\n]{0,40}[:：]$`)

// joins reports whether two adjacent characters belong to one word or
// number: letters and digits of scripts that separate words by spaces, and
// digits of any script. (Chinese and Japanese run words together, so a
// quote of them is removed wherever it occurs.)
func joins(a, b rune) bool {
	word := func(r rune) bool {
		return unicode.IsDigit(r) || unicode.IsLetter(r) && !unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
	}
	return word(a) && word(b)
}

// Plain removes markdown emphasis and code marks (*, `, heading and quote
// marks at a line's start) and folds full-width colons, so that
// "**Score:** 4" and "Score：4" read as "Score: 4".
func Plain(s string) string {
	s = strings.NewReplacer("*", "", "`", "", "：", ": ", "__", "").Replace(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, "#> \t")
	}
	return strings.Join(lines, "\n")
}

// statedRE is "label: value": the label at a line's start or after a
// separator, optionally quoted or bracketed, an optional range hint in
// parentheses or brackets, then ":", "=", or a spaced dash.
func statedRE(label, value string) *regexp.Regexp {
	return regexp.MustCompile(`(?im)(?:^|[\s{,;|(（])([“‘"'\[]?)(?:` + label + `)([”’"'\]]?)\s*` +
		`(?:\((?:[^()\n]{0,24})\)|\[[^\[\]\n]{0,24}\])?\s*(?::|=|\s[-–—]\s)\s*["'\[]?\s*(?:` + value + `)`)
}

// Labelled finds what a reply states for one field. Build it once (it
// compiles a regular expression) and read many replies with it.
type Labelled struct {
	name string
	re   *regexp.Regexp
}

// NewLabelled reads "label: value" statements; label and value are
// regular-expression fragments (case-insensitive), label without groups
// (use (?:…)) and value with exactly one.
func NewLabelled(name, label, value string) *Labelled {
	return &Labelled{name: name, re: statedRE(label, value)}
}

// All returns every value stated for the field in s, with what follows each
// (so a caller can reject "3-4" or "3 or 4").
func (l *Labelled) All(s string) (vals, after []string) {
	for _, st := range l.statements(s) {
		vals, after = append(vals, st.val), append(after, st.after)
	}
	return vals, after
}

// statement is one value stated for a field: the value, the 12 bytes after
// it, and the rest of its line.
type statement struct{ val, after, line string }

// statements finds every statement of the field in s, in one pass.
func (l *Labelled) statements(s string) []statement {
	var out []statement
	for _, m := range l.re.FindAllStringSubmatchIndex(s, -1) {
		if m[3] > m[2] && m[5] == m[4] && closesQuote(s[m[7]:]) {
			// 'Score: 10' — a verdict in quotes that close right after
			// it, not a JSON key ("score": 10): quoted text, not the
			// judge's own statement.
			continue
		}
		rest := s[m[7]:]
		line := rest
		if j := strings.IndexByte(rest, '\n'); j >= 0 {
			line = rest[:j]
		}
		out = append(out, statement{val: s[m[6]:m[7]], after: rest[:min(12, len(rest))], line: line})
	}
	return out
}

// One is the single value the field is stated as: every statement must agree
// (compared case-insensitively). None is an error, and so are two different
// values.
func (l *Labelled) One(s string) (string, error) {
	vals, _ := l.All(s)
	return agree(l.name, vals)
}

var closeQuote = regexp.MustCompile(`^[\s\]]*[”’"']`)

func closesQuote(after string) bool { return closeQuote.MatchString(after) }

func agree(name string, vals []string) (string, error) {
	if len(vals) == 0 {
		return "", fmt.Errorf("no %s stated", name)
	}
	v := strings.TrimSpace(vals[0])
	for _, w := range vals[1:] {
		if !strings.EqualFold(strings.TrimSpace(w), v) {
			return "", fmt.Errorf("two different %s values (%s, %s)", name, v, strings.TrimSpace(w))
		}
	}
	return v, nil
}

var altAfter = regexp.MustCompile(`^\s*[)）]?\s*(?:or|and|/|,|或者|或|、|和)\s*(?:maybe\s+|perhaps\s+)?[(（]?\s*[A-Da-d]\b`)

// Alternative tells whether the text after a stated letter offers another
// letter ("B or C", "A/B", "A、C"): the letter is then not an answer.
func Alternative(after string) bool { return altAfter.MatchString(after) }

// ScoreValue is the value pattern of a score: a number, optionally "/ N" or
// "out of N".
const ScoreValue = `(\d+(?:\.\d+)?(?:\s*(?:/|out\s+of)\s*\d+)?)`

var scoreParts = regexp.MustCompile(`^(\d+)(?:\.(\d+))?(?:\s*(?:/|out\s+of)\s*(\d+))?$`)
var rangeAfter = regexp.MustCompile(`^\s*(?:[-–~]|to\b|or\b)\s*(\d+)`)

// Score reads the one score stated for the field on a lo..hi scale: a whole
// number ("8.0" is 8; "8.5" is not a score on a whole-number scale), with a
// denominator only if it is hi ("4/5", "4 out of 5" on 1..5; "8/10" there is
// rejected). A range ("3-4", "3 or 4") and two different scores are
// rejected.
func (l *Labelled) Score(s string, lo, hi int) (int, error) {
	vals, after := l.All(s)
	if len(vals) == 0 {
		return 0, fmt.Errorf("no %s stated", l.name)
	}
	var got []string
	for i, v := range vals {
		if m := rangeAfter.FindStringSubmatch(after[i]); m != nil {
			if v == strconv.Itoa(lo) && m[1] == strconv.Itoa(hi) {
				continue // "[1-5]": the format's placeholder, echoed
			}
			return 0, fmt.Errorf("%s is a range, not a score", l.name)
		}
		n, err := ParseScore(v, lo, hi)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", l.name, err)
		}
		got = append(got, strconv.Itoa(n))
	}
	if len(got) == 0 {
		return 0, fmt.Errorf("no %s stated (only the format's placeholder)", l.name)
	}
	v, err := agree(l.name, got)
	if err != nil {
		return 0, err
	}
	n, _ := strconv.Atoi(v)
	return n, nil
}

// ParseScore reads one score on a lo..hi scale (see Labelled.Score).
func ParseScore(v string, lo, hi int) (int, error) {
	m := scoreParts.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return 0, fmt.Errorf("%q is not a score", v)
	}
	if m[2] != "" && strings.Trim(m[2], "0") != "" {
		return 0, fmt.Errorf("%s.%s is not a whole score", m[1], m[2])
	}
	if m[3] != "" {
		if d, _ := strconv.Atoi(m[3]); d != hi {
			return 0, fmt.Errorf("%s/%s is not on the %d..%d scale", m[1], m[3], lo, hi)
		}
	}
	n, _ := strconv.Atoi(m[1])
	if n < lo || n > hi {
		return 0, fmt.Errorf("%d outside %d..%d", n, lo, hi)
	}
	return n, nil
}

// YesNoValue is the value pattern of a yes/no answer.
const YesNoValue = `(yes|no|true|false)\b`

var yesNoAlt = regexp.MustCompile(`(?i)^\s*(?:/|or\b)\s*(?:yes|no|true|false)\b`)

// yesNoPivot is an answer turned round on its own line: "No — it does ask
// for the poem, so Yes", "no, actually yes".
var yesNoPivot = regexp.MustCompile(`(?i)\b(?:so|thus|therefore|hence|actually|rather|make (?:that|it)|i mean|i\.e\.|in fact)\b[\s,:—–-]*(?:(?:it|the answer)(?:'s| is)\s+)?(yes|no|true|false)\b|(?:所以|因此|其实|应为|改为)\s*(是|否)`)

// YesNo reads the one yes/no answer stated for the field ("true" and
// "false" read as yes and no). "Yes/No" — the format's placeholder, left in
// or echoed — states nothing.
func (l *Labelled) YesNo(s string) (bool, error) {
	var got []string
	for _, st := range l.statements(s) {
		v := st.val
		if yesNoAlt.MatchString(st.after) {
			continue
		}
		if m := yesNoPivot.FindStringSubmatch(st.line); m != nil {
			turned := strings.ToLower(m[1] + m[2])
			if (turned == "yes" || turned == "true" || turned == "是") != (strings.EqualFold(v, "yes") || strings.EqualFold(v, "true")) {
				return false, fmt.Errorf("%s stated as %s, then turned round on its line", l.name, v)
			}
		}
		switch strings.ToLower(v) {
		case "yes", "true":
			got = append(got, "yes")
		default:
			got = append(got, "no")
		}
	}
	v, err := agree(l.name, got)
	if err != nil {
		return false, err
	}
	return v == "yes", nil
}

// JSONObjects returns the top-level JSON objects in s, in order: each a
// complete, valid object (prose, fences and broken objects around them are
// skipped).
func JSONObjects(s string) []json.RawMessage {
	var out []json.RawMessage
	for _, sp := range jsonSpans(s) {
		out = append(out, json.RawMessage(s[sp[0]:sp[1]]))
	}
	return out
}

// ErrNoJSON is DecodeStated's error when the reply holds no JSON object with
// the required fields.
var ErrNoJSON = errors.New("no JSON object with the required fields")

// DecodeStated decodes the verdict a reply states as a JSON object into v:
// the objects in the reply that decode into v with every required field
// present must all decode to the same value (a reply that states one
// verdict and quotes another is ambiguous).
func DecodeStated(raw string, v any) error {
	var first any
	var lastErr error
	n := 0
	for _, obj := range JSONObjects(raw) {
		cand := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		if err := strictDecode(obj, cand); err != nil {
			lastErr = err
			continue
		}
		if n == 0 {
			first = cand
		} else if !reflect.DeepEqual(first, cand) {
			return errors.New("two different JSON verdicts in one reply")
		}
		n++
	}
	if n == 0 {
		if lastErr != nil {
			return fmt.Errorf("%w (%v)", ErrNoJSON, lastErr)
		}
		return ErrNoJSON
	}
	reflect.ValueOf(v).Elem().Set(reflect.ValueOf(first).Elem())
	return nil
}

// strictDecode decodes one object into v and requires v's required fields.
// An object that states a field twice with two values states two verdicts
// (encoding/json would keep the last): it is refused.
func strictDecode(obj json.RawMessage, v any) error {
	if err := twiceStated(obj); err != nil {
		return err
	}
	if err := json.Unmarshal(obj, v); err != nil {
		return err
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(obj, &present); err != nil {
		return err
	}
	for _, f := range requiredFields(v) {
		if _, ok := present[f]; !ok {
			return fmt.Errorf("field %q missing", f)
		}
	}
	return nil
}

// twiceStated is an error when the object obj names one of its own fields
// twice with different values ({"answer": "A", "answer": "C"}).
func twiceStated(obj json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil // not an object: the decoder says what it is
	}
	seen := map[string]json.RawMessage{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil
		}
		key, _ := k.(string)
		if prev, ok := seen[key]; ok && !bytes.Equal(bytes.TrimSpace(prev), bytes.TrimSpace(val)) {
			return fmt.Errorf("field %q is stated twice, as %s and as %s", key, prev, val)
		}
		seen[key] = val
	}
	return nil
}

// SchemaNote is what a JSON-mode judge prompt adds, so that a server that
// ignores the structured-output request still hears which JSON to write.
func SchemaNote(schema json.RawMessage) string {
	return "\n\nReply with only a JSON object that follows this JSON schema: " + string(schema)
}

var (
	articleAfter = regexp.MustCompile(`^\s+[a-z]`)
	optionBefore = regexp.MustCompile(`(?i)(?:option|选项)\s*$|[（(]\s*$`)
	negation     = regexp.MustCompile(`(?i)(?:不|没|别|非|不能|不应|不会|不要|\bnot|n't|\bnever)\s*$`)
)

// article tells whether a stated "A" is the English article ("Answer: A bit
// unclear"), not an option: followed by a lower-case word and not named as
// an option ("option A because…", "(A) because…").
func article(letter, before, after string) bool {
	return letter == "A" && articleAfter.MatchString(after) && !optionBefore.MatchString(before)
}

// Letters reads an option letter a reply states as its answer: a first
// line that is only the letter (Bare) or starts with it (Lead), a last line
// that is only the letter, labelled statements (Label), and phrases such as
// "the answer is B" (Is, one group). Every letter stated must agree and none
// may be offered with another ("B or C"); a negated phrase ("不选A") and the
// article ("Answer: A bit unclear") state no letter. The letter is returned
// in upper case.
type Letters struct {
	Bare, Lead, Is *regexp.Regexp
	Label          *Labelled
}

// optionList reports whether s goes through the options line by line ("A.
// Wrong … B. Correct …", "A：错误\nB：正确"): two or more lines lead with
// different letters. The first line's letter is then an option's label,
// not the answer; only a stated answer ("Answer: B") is read.
func (l Letters) optionList(s string) bool {
	seen := map[string]bool{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		m := l.Lead.FindStringSubmatch(line)
		if m == nil {
			m = l.Bare.FindStringSubmatch(line)
		}
		if m != nil {
			seen[strings.ToUpper(m[1])] = true
		}
	}
	return len(seen) >= 2
}

// Read reads s, already cleaned (StripReasoning, Unquote, Plain).
func (l Letters) Read(s string) (string, error) {
	s = strings.TrimSpace(s)
	var found []string
	first, _, _ := strings.Cut(s, "\n")
	first = strings.TrimSpace(first)
	list := l.optionList(s)
	if m := l.Bare.FindStringSubmatch(first); m != nil {
		found = append(found, m[1])
	} else if m := l.Lead.FindStringSubmatch(first); m != nil && !list {
		found = append(found, m[1])
	}
	if i := strings.LastIndex(s, "\n"); i >= 0 && !list {
		if m := l.Bare.FindStringSubmatch(strings.TrimSpace(s[i+1:])); m != nil {
			found = append(found, m[1])
		}
	}
	vals, after := l.Label.All(s)
	for i, v := range vals {
		if Alternative(after[i]) {
			return "", errors.New("two letters offered")
		}
		if !article(v, "", after[i]) {
			found = append(found, v)
		}
	}
	for _, m := range l.Is.FindAllStringSubmatchIndex(s, -1) {
		if Alternative(s[m[3]:]) {
			return "", errors.New("two letters offered")
		}
		if !article(s[m[2]:m[3]], s[max(0, m[2]-8):m[2]], s[m[3]:]) && !negation.MatchString(s[max(0, m[0]-12):m[0]]) {
			found = append(found, s[m[2]:m[3]])
		}
	}
	if len(found) == 0 {
		return "", errors.New("no letter stated as the answer")
	}
	for i := range found {
		found[i] = strings.ToUpper(found[i])
	}
	for _, f := range found[1:] {
		if f != found[0] {
			return "", fmt.Errorf("two different letters (%s, %s)", found[0], f)
		}
	}
	return found[0], nil
}
