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
//   - every statement of a field must agree — labelled, in prose that
//     names the field, in a conclusion that names none for a field that is
//     the reply's only one of its kind, beside a JSON verdict: two
//     different values that no recognised revision settles are "two
//     values" (ErrTwoValues), unscored and counted, never a guess;
//   - a statement that describes the scale (a rubric restated, a
//     hypothetical) and a hedge that does not commit state nothing;
//   - markdown tables, number words and the labels and yes/no words of
//     the languages judges answer in are read as the statements they are.

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

var (
	correctionMark = regexp.MustCompile(`(?i)^[*_#>\s]*(?:correction|corrected|revised|revision)\b`)
	// verdictWords are what a correction of the verdict speaks of.
	verdictWords = regexp.MustCompile(`(?i)\b(?:hallucinat\w*|invent\w*|fabricat\w*|made[- ]up|scores?|scored|grades?|graded|rating|verdict|answer|correct|incorrect|wrong|supported|unsupported|accurate|inaccura\w*|groundn?ess|groundedness|originality|feasibility|clarity|value|option|choice|response|claim|statement|pass|fail(?:s|ed)?)\b|幻觉|评分|分数|答案|选项|正确|错误`)
	// unchangedWords say the verdict stands.
	unchangedWords = regexp.MustCompile(`(?i)\b(?:(?:does|do|did)(?: not|n't) (?:change|affect|alter)|unaffected|unchanged|still (?:stands?|holds?)|either way|regardless)\b|不影响|不变`)
	// valueLike is a value standing alone: a yes/no word, an option
	// letter, or a small number after "be", "is", ":" and their kin ("it
	// should be 2.", "Correction: C."), not a number that names or counts
	// ("Idea 1", "2 mg", "1908").
	valueLike = regexp.MustCompile(`(?i)\b(?:yes|no|true|false)\b|(?:^|[\s:(])(?-i:[A-D])(?:[.,;!?)]|\s*$)|(?:^|[:=(]|\b(?:be|is|was|to|a|an|it|give|rate|score|as|at)\s)\s*(?:10|\d)(?:\s*(?:/|out of)\s*\d+)?\s*(?:[.,;!?)]|$)|是|否`)
)

// LeavesVerdict reports whether a revision (what Revision returns) is a
// correction of the reasoning that leaves the verdict alone: it opens with
// "Correction:", "Revised:" or their kin, and either speaks of no verdict
// nor of the evaluated response ("Correction: Canberra was chosen in
// 1908, not 1913") or says the
// verdict stands ("…; the scores are unaffected"), and states no value
// ("Correction: it should be 2." and "Correction: C." revise the verdict).
// The marks that revise wherever they stand ("Wait,", "On second thought")
// always revise.
func LeavesVerdict(revision string) bool {
	body := strings.TrimLeft(correctionMark.ReplaceAllString(revision, ""), ":：*_ \t")
	if !correctionMark.MatchString(revision) || valueLike.MatchString(body) || len(strings.Fields(body)) <= 3 {
		return false // "Revised: Fail." is a verdict, however short
	}
	return !verdictWords.MatchString(body) || unchangedWords.MatchString(body)
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
//
// plainMarks are the emphasis marks Plain drops and the full-width colon
// it writes as ": " (one Replacer for every reply: building one costs
// more than reading a short reply).
var plainMarks = strings.NewReplacer("*", "", "`", "", "：", ": ", "__", "")

// A markdown table is read as the statements it lays out: each row as
// "first cell: second cell" ("| Originality | 4 |" is "Originality: 4"),
// and a table of one row under a header of labels as "header: cell" for
// each column ("| Score | Hallucination |" over "| 2 | Yes |").
func Plain(s string) string {
	s = tables(s)
	s = plainMarks.Replace(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, "#> \t")
	}
	return strings.Join(lines, "\n")
}

var (
	tableRow = regexp.MustCompile(`^\s*\|?([^|\n]*(?:\|[^|\n]*)+?)\|?\s*$`)
	tableSep = regexp.MustCompile(`^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$`)
	// valueCell is a cell that holds a value, not a label: a number, a
	// yes/no word or an option letter.
	valueCell = regexp.MustCompile(`(?i)^[*_\s]*(?:\d|(?:yes|no|true|false)\b|[A-D]\b)`)
)

// tables rewrites each markdown table in s (a header row, a separator row,
// data rows) as the "label: value" lines it lays out (see Plain).
func tables(s string) string {
	if !strings.Contains(s, "|") {
		return s
	}
	lines := strings.Split(s, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		if i+1 >= len(lines) || !tableRow.MatchString(lines[i]) || !tableSep.MatchString(lines[i+1]) {
			out = append(out, lines[i])
			continue
		}
		header := cells(lines[i])
		j := i + 2
		var rows [][]string
		for ; j < len(lines) && tableRow.MatchString(lines[j]); j++ {
			rows = append(rows, cells(lines[j]))
		}
		if len(rows) == 1 && len(rows[0]) == len(header) && valueCell.MatchString(rows[0][0]) {
			for k, h := range header {
				out = append(out, h+": "+rows[0][k])
			}
		} else {
			for _, r := range rows {
				if l, v, ok := labelAndValue(r); ok {
					out = append(out, l+": "+v)
				}
			}
		}
		i = j - 1
	}
	return strings.Join(out, "\n")
}

// labelAndValue are a table row's label — its first cell that is not a
// value or a row number ("| 1 | Originality | 4 |") — and the cell after
// it, the value.
func labelAndValue(r []string) (label, value string, ok bool) {
	for i := 0; i+1 < len(r); i++ {
		if !valueCell.MatchString(r[i]) && strings.TrimSpace(strings.Trim(r[i], "*_#.")) != "" {
			return r[i], r[i+1], true
		}
	}
	return "", "", false
}

// cells are the trimmed cells of a table row.
func cells(row string) []string {
	m := tableRow.FindStringSubmatch(row)
	parts := strings.Split(m[1], "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// statedRE is "label: value": the label at a line's start or after a
// separator, optionally quoted or bracketed, an optional range hint in
// parentheses or brackets, then ":", "=", or a spaced dash.
func statedRE(label, value string) *regexp.Regexp {
	return regexp.MustCompile(`(?im)(?:^|[\s{,;|(（，。；]|\p{Han})([“‘"'\[]?)(?:` + label + `)([”’"'\]]?)\s*` +
		`(?:\((?:[^()\n]{0,24})\)|\[[^\[\]\n]{0,24}\])?\s*(?::|=|\s[-–—]\s)\s*["'\[]?\s*(?:` + value + `)`)
}

// Labelled finds what a reply states for one field. Build it once (it
// compiles regular expressions) and read many replies with it.
//
// A field's value is what its labelled statements state ("Label: value");
// a statement that describes the scale rather than answering (a rubric
// restated: "Score: 1 = poor", "Value: 5 indicates…", "Hallucination: Yes
// would be wrong") states nothing. Prose that states the field again with
// another value ("so hallucination is yes", "I'd give originality a 4")
// and — for a field that is the reply's only one of its kind (Sole) — a
// conclusion that names no field ("so yes.", "I'd go with 4") are second
// values: they never supply a value of their own, but a reply whose
// statements disagree with them states two values (ErrTwoValues).
type Labelled struct {
	name  string
	re    *regexp.Regexp
	prose *regexp.Regexp
	concl *regexp.Regexp
	sole  bool
}

// NewLabelled reads "label: value" statements; label and value are
// regular-expression fragments (case-insensitive), label without groups
// (use (?:…)) and value with exactly one.
func NewLabelled(name, label, value string) *Labelled {
	return &Labelled{name: name, re: statedRE(label, value),
		prose: regexp.MustCompile(`(?i)(?:^|[^\p{L}_])(?:` + label + `)\s+(?:(?:is|was|should be|would be|must be|becomes|stays|of|at|to|as)\s+|(?:is\s+|feels\s+|seems\s+)?(?:more like|closer to)\s+)?(?:a\s+|an\s+)?["']?(?:` + value + `)` + clauseEnd),
		concl: regexp.MustCompile(`(?i)(?:\b(?:so|thus|hence|therefore|actually|in fact|no wait|wait|oops|hold on|more (?:like|of)|closer to|makes? (?:it|this|that)(?: more of)?|i(?:'d| would) (?:say|give it|go with|rate it|score it|pick|choose)|i(?:'ll| will) go with|(?:give|rate|score) it|call it|make (?:it|that)|settle on|(?:it|that|this) (?:should|must) be|should be)|(?:所以|因此|其实|应为|改为)(?:应该是|应是|是)?)[\s,:—–-]*(?:(?:really|actually|then|definitely|clearly|it's|it is|that's|that is|this is|a|an)\s+){0,3}(?:` + value + `)` + clauseEnd +
			`|(?:^|\s)(?:` + value + `)\s+(?:is|would be|seems|feels)\s+(?:fairer|more (?:accurate|appropriate|honest|reasonable)|better|right|closer)\b`),
	}
}

// clauseEnd is what follows a value stated in prose: the clause ends
// ("so yes." "so 4, …", "a 4 instead") — "so no further checks" and "it is
// 4 of 5 constraints" state nothing.
const clauseEnd = `(?:\s*(?:[.!?,;:)\]。，！？；—–]|\s-\s|$)|\s+(?:and|but|because|since|given|instead|rather|now|here|overall|then|I)\b)`

// Sole marks the field as the reply's only field of its kind (the only
// yes/no answer, the only score): a conclusion that names no field ("so
// yes.", "I'd go with 4") can only restate it. It returns l.
func (l *Labelled) Sole() *Labelled {
	l.sole = true
	return l
}

// All returns every value stated for the field in s, with what follows each
// (so a caller can reject "3-4" or "3 or 4").
func (l *Labelled) All(s string) (vals, after []string) {
	for _, st := range l.statements(s) {
		vals, after = append(vals, st.val), append(after, st.after)
	}
	return vals, after
}

// Again returns the values s states for the field after its first labelled
// statement in prose or, for a Sole field, in a conclusion: values that
// must agree with the labelled ones (see Labelled).
func (l *Labelled) Again(s string) []string {
	first := l.re.FindStringIndex(s)
	if first == nil {
		return nil
	}
	var out []string
	for _, m := range l.prose.FindAllStringSubmatchIndex(s, -1) {
		if m[0] >= first[0] && m[2] >= 0 && !rubric.MatchString(s[m[3]:]) && !rangeAfter.MatchString(s[m[3]:]) && !hedged(s, m[0]) {
			out = append(out, s[m[2]:m[3]])
		}
	}
	if l.sole {
		for _, m := range l.concl.FindAllStringSubmatchIndex(s, -1) {
			if m[0] < first[1] || hedged(s, m[0]) {
				continue
			}
			for g := 2; g+1 < len(m); g += 2 {
				if m[g] >= 0 {
					out = append(out, s[m[g]:m[g+1]])
					break
				}
			}
		}
	}
	return out
}

// hedge is a clause that offers another value without committing to it
// ("some might rate it a 6, but…", "a stricter reviewer might put
// originality at 5"): not a second value.
var hedge = regexp.MustCompile(`(?i)\b(?:could|might|may|some(?:one)?|stricter|harsher|more lenient)\b[^.;!?\n]*$`)

// hedged reports whether the clause before byte i of s hedges.
func hedged(s string, i int) bool { return hedge.MatchString(s[max(0, i-80):i]) }

// statement is one value stated for a field: the value, the 12 bytes after
// it, and the rest of its line.
type statement struct{ val, after, line string }

// rubric is what follows a value that describes the scale instead of
// answering ("Score: 1 = ignores the constraints", "Originality: 1 means a
// known idea", "Mentions missing: Yes if…", "Clarity: 10 would be a
// publication-ready…") or that the judge rejects ("Hallucination: Yes
// would be wrong").
var rubric = regexp.MustCompile(`(?i)^\s*(?:[-–—]\s*)?(?:=|means?\b|would (?:mean|require|indicate|be (?:a|an|the|wrong|incorrect|a mistake|unfair|unjustified|too)\b)|indicates?\b|stands for|corresponds to|if\b|when\b|is (?:for|reserved|given|perfect|excellent|poor|the (?:best|highest|top|maximum|lowest|worst))\b)|^\s*\([^()\n]{0,24}\)\s*(?:to\b|[-–—])\s*\d`)

// hypothetical is what precedes, on its line, a statement that describes
// the scale rather than answering ("a response that met them all would
// get Score: 10", "for example Score: 3").
var hypothetical = regexp.MustCompile(`(?i)(?:\b(?:would|could|might)\s+(?:get|earn|receive|deserve|have)\b|\bif\b[^.!?\n]*$|\be\.g\.|\bfor example\b|\bsuch as\b|\b(?:a|an) (?:perfect|ideal)\b)`)

// Described reports whether the statement at byte i of s describes the
// scale (hypothetical: the words before it on its line) rather than
// stating the judge's answer.
func Described(s string, i int) bool {
	for i < len(s) && strings.IndexByte(" \t\n(", s[i]) >= 0 {
		i++ // a match that begins at the separator before the label
	}
	return hypothetical.MatchString(s[strings.LastIndexByte(s[:i], '\n')+1 : i])
}

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
		if rubric.MatchString(rest) || Described(s, m[2]) {
			continue
		}
		line := rest
		if j := strings.IndexByte(rest, '\n'); j >= 0 {
			line = rest[:j]
		}
		out = append(out, statement{val: s[m[6]:m[7]], after: rest[:min(12, len(rest))], line: line})
	}
	return out
}

// One is the single value the field is stated as: every statement must agree
// (compared case-insensitively), prose and conclusions that restate it too
// (Again). None is an error, and so are two different values.
func (l *Labelled) One(s string) (string, error) {
	vals, _ := l.All(s)
	v, err := agree(l.name, vals)
	if err != nil {
		return "", err
	}
	return agree(l.name, append([]string{v}, l.Again(s)...))
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
			return "", TwoValues("two different %s values (%s, %s)", name, v, strings.TrimSpace(w))
		}
	}
	return v, nil
}

// ErrTwoValues is what every reader's error wraps (errors.Is) when a reply
// states two values for one field and no revision the reader recognises
// settles which: the reply is read as neither, unscored and counted apart
// ("two values"), and where repairs are on the judge is asked again held
// to the verdict's schema (RepairError).
var ErrTwoValues = errors.New("two values")

// TwoValues is an error that wraps ErrTwoValues, with its message as given.
func TwoValues(format string, args ...any) error {
	return twoValuesError(fmt.Sprintf(format, args...))
}

type twoValuesError string

func (e twoValuesError) Error() string        { return string(e) }
func (e twoValuesError) Is(target error) bool { return target == ErrTwoValues }

var altAfter = regexp.MustCompile(`^\s*[)）]?\s*(?:or|and|/|,|或者|或|、|和)\s*(?:maybe\s+|perhaps\s+)?[(（]?\s*[A-Da-d]\b`)

// Alternative tells whether the text after a stated letter offers another
// letter ("B or C", "A/B", "A、C"): the letter is then not an answer.
func Alternative(after string) bool { return altAfter.MatchString(after) }

// The words judges label a field with, in English and in the languages
// they answer in (German, French, Spanish, Chinese, Japanese): one list per
// field that several suites' judges write, for their NewLabelled.
const (
	OriginalityWords   = `originality|originalit[äé]t?|originalidad|原创性|独创性|新颖性|创新性|独創性|新規性|オリジナリティ`
	FeasibilityWords   = `feasibility|faisabilit[ée]|machbarkeit|durchführbarkeit|umsetzbarkeit|viabilidad|factibilidad|可行性|実現可能性|実行可能性`
	HallucinationWords = `hallucination|halluzination|alucinaci[óo]n|幻觉|幻覺|幻覚|ハルシネーション`
	// ScoreWords are "score" in the other languages (a suite adds its
	// English words: "score", "rating").
	ScoreWords = `punktzahl|punkte|bewertung|puntuaci[óo]n|calificaci[óo]n|分数|评分|得分|スコア|得点|評価`
)

// ScoreValue is the value pattern of a score: a number, optionally "/ N" or
// "out of N" — in digits or as a word (English "seven", Chinese "七",
// numerals the suites' prompts and data use).
const ScoreValue = `(\d+(?:\.\d+)?(?:\s*(?:/|out\s+of)\s*\d+)?|(?:` + numberWords + `)(?:\s*(?:/|out\s+of)\s*(?:\d+|` + numberWords + `))?)`

// numberWords are the whole numbers 0–10 written as words.
const numberWords = `(?:` + wordAlternatives + `)\b|[零一二两三四五六七八九十]`

// wordAlternatives are the number words 0–10 of English, German, French
// and Spanish (the languages judges answer in beside the suites' own).
const wordAlternatives = `zero|one|two|three|four|five|six|seven|eight|nine|ten|null|eins|zwei|drei|vier|fünf|sechs|sieben|acht|neun|zehn|z[ée]ro|une?|deux|trois|quatre|cinq|sept|huit|neuf|dix|cero|uno|dos|tres|cuatro|cinco|seis|siete|ocho|nueve|diez`

var wordNumber = map[string]string{"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
	"six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10",
	"null": "0", "eins": "1", "zwei": "2", "drei": "3", "vier": "4", "fünf": "5", "sechs": "6", "sieben": "7", "acht": "8", "neun": "9", "zehn": "10",
	"zéro": "0", "un": "1", "une": "1", "deux": "2", "trois": "3", "quatre": "4", "cinq": "5", "sept": "7", "huit": "8", "neuf": "9", "dix": "10",
	"cero": "0", "uno": "1", "dos": "2", "tres": "3", "cuatro": "4", "cinco": "5", "seis": "6", "siete": "7", "ocho": "8", "nueve": "9", "diez": "10",
	"零": "0", "一": "1", "二": "2", "两": "2", "三": "3", "四": "4", "五": "5", "六": "6", "七": "7", "八": "8", "九": "9", "十": "10"}

var (
	wordScore = regexp.MustCompile(`(?i)^(` + numberWords + `)(.*)$`)
	tenWord   = regexp.MustCompile(`(?i)\b(?:` + wordAlternatives + `)\b|[零一二两三四五六七八九十]`)
	// wordEnds is what must follow a number word for it to be a score:
	// the clause ends, "out of", a bracketed restatement, or Chinese 分
	// ("Score: one of the better answers" states no score).
	wordEnds = regexp.MustCompile(`(?i)^(?:分)?(?:[ \t]*(?:[.,;:!)(/\]。，；！\n]|$)|\s+out\s+of\b)`)
)

// digits turns a number word at the start of v into digits ("seven out of
// ten" is "7 out of 10"); ok is false for a word that does not stand as a
// number (followed by more words).
func digits(v, after string) (string, bool) {
	m := wordScore.FindStringSubmatch(strings.TrimSpace(v))
	if m == nil {
		return v, true
	}
	rest := m[2]
	if strings.TrimSpace(rest) == "" && !wordEnds.MatchString(after) {
		return v, false
	}
	rest = tenWord.ReplaceAllStringFunc(rest, func(w string) string { return wordNumber[strings.ToLower(w)] })
	return wordNumber[strings.ToLower(m[1])] + rest, true
}

var scoreParts = regexp.MustCompile(`^(\d+)(?:\.(\d+))?(?:\s*(?:/|out\s+of)\s*(\d+))?$`)
var rangeAfter = regexp.MustCompile(`^\s*(?:[-–~]|to\b|or\b)\s*(\d+)`)

// Score reads the one score stated for the field on a lo..hi scale: a whole
// number ("8.0" is 8; "8.5" is not a score on a whole-number scale), with a
// denominator only if it is hi ("4/5", "4 out of 5" on 1..5; "8/10" there is
// rejected). A range ("3-4", "3 or 4") and two different scores are
// rejected, and so is a score that prose or a conclusion after it states
// otherwise (Again: "I'd give originality a 4").
func (l *Labelled) Score(s string, lo, hi int) (int, error) {
	vals, after := l.All(s)
	if len(vals) == 0 {
		return 0, fmt.Errorf("no %s stated", l.name)
	}
	var got []string
	for i, v := range vals {
		v, ok := digits(v, after[i])
		if !ok {
			continue // "one of the better…": a word, not a score
		}
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
	for _, v := range l.Again(s) {
		if v, ok := digits(v, ""); ok {
			if n, err := ParseScore(v, lo, hi); err == nil {
				got = append(got, strconv.Itoa(n)) // prose that is no score on the scale is not a second value
			}
		}
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

// YesNoValue is the value pattern of a yes/no answer, in English and in
// the languages judges answer in (German, French, Spanish, Chinese,
// Japanese).
const YesNoValue = `((?:yes|no|true|false|ja|nein|oui|non|si)\b|sí|是|否|有|无|没有|はい|いいえ|あり|なし)`

// yesWord reports whether a yes/no value says yes.
func yesWord(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "yes", "true", "ja", "oui", "si", "sí", "是", "有", "はい", "あり":
		return true
	}
	return false
}

var yesNoAlt = regexp.MustCompile(`(?i)^\s*(?:/|or\b)\s*(?:yes|no|true|false)\b`)

// yesNoPivot is an answer turned round on its own line: "No — it does ask
// for the poem, so Yes", "no, actually yes".
var yesNoPivot = regexp.MustCompile(`(?i)\b(?:so|thus|therefore|hence|actually|rather|make (?:that|it)|i mean|i\.e\.|in fact)\b[\s,:—–-]*(?:(?:it|the answer)(?:'s| is)\s+)?(yes|no|true|false)\b|(?:所以|因此|其实|应为|改为)\s*(是|否)`)

// YesNo reads the one yes/no answer stated for the field ("true", "ja",
// "是" read as yes; "false", "nein", "否" as no). "Yes/No" — the format's
// placeholder, left in or echoed — states nothing. An answer that prose or
// a conclusion after it states otherwise (Again) is two values.
func (l *Labelled) YesNo(s string) (bool, error) {
	var got []string
	yn := func(v string) string {
		if yesWord(v) {
			return "yes"
		}
		return "no"
	}
	for _, st := range l.statements(s) {
		v := st.val
		if yesNoAlt.MatchString(st.after) {
			continue
		}
		if m := yesNoPivot.FindStringSubmatch(st.line); m != nil {
			turned := strings.ToLower(m[1] + m[2])
			if (turned == "yes" || turned == "true" || turned == "是") != yesWord(v) {
				return false, TwoValues("%s stated as %s, then turned round on its line", l.name, v)
			}
		}
		got = append(got, yn(v))
	}
	v, err := agree(l.name, got)
	if err != nil {
		return false, err
	}
	again := []string{v}
	for _, w := range l.Again(s) {
		again = append(again, yn(w))
	}
	if v, err = agree(l.name, again); err != nil {
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
			if errors.Is(err, ErrTwoValues) {
				return err
			}
			lastErr = err
			continue
		}
		if n == 0 {
			first = cand
		} else if !reflect.DeepEqual(first, cand) {
			return TwoValues("two different JSON verdicts in one reply")
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
			return TwoValues("field %q is stated twice, as %s and as %s", key, prev, val)
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
	// rejected is what follows an option the reply names to set aside
	// ("Option A is ruled out", "should it be C?"): not its answer.
	rejected     = regexp.MustCompile(`(?i)^[)）"']?\s*(?:\?|(?:is|was|can be|must be)\s+(?:ruled out|excluded|wrong|incorrect|not (?:right|correct|it|the answer))|does(?:n't| not) (?:apply|fit))`)
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

// letterConclusion is a letter a reply concludes with, however the suite
// labels its answer: "so C.", "I'll go with C", "that makes it C",
// "Correction: C". The clause must end at the letter ("so A new idea" is
// the article).
var letterConclusion = regexp.MustCompile(`(?m)\b([A-D])\s+(?i:fits|matches|is (?:the )?(?:correct|right|better|best))\b|\s[—–]\s*([A-D])[.!]?[ \t]*$|(?:\b(?i:so|thus|hence|therefore)[\s,]+(?i:it's\s+|it is\s+|the answer is\s+|option\s+|grade\s+)?|\bI(?i:'ll| will|'d| would)\s+(?i:go with|pick|choose|say)\s+(?i:option\s+|grade\s+)?|\b(?i:makes?|made)\s+(?i:it|that)\s+(?:a\s+)?|\b(?i:correction|corrected|revised|revision)\s*[:：]\s*|(?:所以|因此)(?:是|选)?\s*)[(（]?([A-D])[)）]?(?:\s*[.!,;:)。，！]|\s*$)`)

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
			return "", TwoValues("two letters offered")
		}
		if !article(v, "", after[i]) {
			found = append(found, v)
		}
	}
	for _, m := range l.Is.FindAllStringSubmatchIndex(s, -1) {
		if Alternative(s[m[3]:]) {
			return "", TwoValues("two letters offered")
		}
		if !article(s[m[2]:m[3]], s[max(0, m[2]-8):m[2]], s[m[3]:]) && !negation.MatchString(s[max(0, m[0]-12):m[0]]) && !rejected.MatchString(s[m[3]:]) {
			found = append(found, s[m[2]:m[3]])
		}
	}
	if len(found) > 0 {
		// A conclusion that names a letter restates the answer ("so C.",
		// "I'll go with C", "Correction: C"): it must agree.
		for _, m := range letterConclusion.FindAllStringSubmatch(s, -1) {
			found = append(found, m[1]+m[2]+m[3])
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
			return "", TwoValues("two different letters (%s, %s)", found[0], f)
		}
	}
	return found[0], nil
}
