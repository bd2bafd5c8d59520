package cfaith

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"halu/runner/judging"
)

// QA is one generated question with its correct answer and the evidence
// extracted from the knowledge document.
type QA struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
	Evidence string `json:"evidence"`
}

var (
	zhQA = regexp.MustCompile(`(?m)^\s*\[?(问题|答案|依据)\s*\d*\]?\s*[：:]\s*(.*)$`)
	enQA = regexp.MustCompile(`(?mi)^\s*\[?(question|answer|evidence)\s*\d*\]?\s*:\s*(.*)$`)
	// cannotRE is the agents' way of declining: the authors' RefErr and
	// Outdated prompts ask for "无法生成" when no such question exists.
	cannotRE = regexp.MustCompile(`(?i)无法生成|cannot generate`)
)

// ParseQA reads the question agent's blocks ("[问题1]：… [答案1]：…
// [依据1]：…", or the English labels). A block missing a part is skipped;
// no complete block is an error, unless the agent said it cannot generate
// such a question (then there are none, and that is not a failure).
func ParseQA(lang, reply string) ([]QA, error) {
	re := enQA
	if lang == "zh" {
		re = zhQA
	}
	var out []QA
	var cur QA
	flush := func() {
		if cur.Question != "" && cur.Answer != "" && cur.Evidence != "" {
			out = append(out, cur)
		}
		cur = QA{}
	}
	for _, m := range re.FindAllStringSubmatch(reply, -1) {
		v := strings.TrimSpace(m[2])
		switch strings.ToLower(m[1]) {
		case "问题", "question":
			flush()
			cur.Question = v
		case "答案", "answer":
			cur.Answer = v
		case "依据", "evidence":
			cur.Evidence = v
		}
	}
	flush()
	if len(out) == 0 {
		if cannotRE.MatchString(reply) {
			return nil, nil
		}
		return nil, errors.New("no complete question/answer/evidence block")
	}
	return out, nil
}

// ParseHaluAnswer reads the hallucinated-response agent's reply: the
// reply itself, without a repeated "[幻觉回复]：" prefix (the authors' code
// takes the stripped output).
func ParseHaluAnswer(reply string) (string, error) {
	s := strings.TrimSpace(reply)
	if m := haluTag.FindStringIndex(s); m != nil {
		s = unbold(s[m[1]:])
	}
	if s == "" {
		return "", errors.New("empty hallucinated response")
	}
	return s, nil
}

var haluTag = regexp.MustCompile(`^(?:\*\*)?\[(?:幻觉回复|Hallucinated response)\](?:\*\*)?\s*[：:]\s*`)

var haluLine = regexp.MustCompile(`^\s*(?:[-*]\s*)?(?:\*\*)?\[(?:幻觉回复|Hallucinated response)\s*(\d+)\](?:\*\*)?\s*[：:]\s*(?:\*\*)?\s*(.*?)\s*$`)

// unbold removes the bold marks left around a generated text when its
// line's bold tag closes after the colon ("**[Hallucinated response 1]:**
// …") or the whole line is bold ("**[…]: …**"): a mark with no partner
// is markdown of the line, not of the text.
func unbold(text string) string {
	text = strings.TrimSpace(text)
	if strings.Count(text, "**")%2 == 1 {
		text = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(text, "**"), "**"))
	}
	return text
}

// ParseHaluAnswers reads a reply to HaluAnswersPrompt: the n numbered
// lines "[幻觉回复k]：…" ("[Hallucinated response k]: …"), in any order,
// other lines (a preamble) and the prompt's format lines echoed with their
// "..." placeholder not read. A number missing, repeated or out of range,
// or a response left empty, is a parse failure: the authors' code drops
// the question's responses when any line breaks its format.
func ParseHaluAnswers(reply string, n int) ([]string, error) {
	got := map[int]string{}
	for _, l := range strings.Split(reply, "\n") {
		m := haluLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		k, _ := strconv.Atoi(m[1])
		text := unbold(m[2])
		if text == "..." || text == "…" || text == "……" {
			continue // the prompt's format line, echoed
		}
		switch _, dup := got[k]; {
		case k < 1 || k > n:
			return nil, fmt.Errorf("response %d, of %d asked for", k, n)
		case dup:
			return nil, fmt.Errorf("response %d given twice", k)
		case text == "":
			return nil, fmt.Errorf("response %d is empty", k)
		}
		got[k] = text
	}
	if len(got) != n {
		return nil, fmt.Errorf("%d of the %d numbered responses", len(got), n)
	}
	out := make([]string, n)
	for k := range out {
		out[k] = got[k+1]
	}
	return out, nil
}

// labelTakenBack is what follows a type name the reply then takes back:
// "EntErr? No — SpaErr", "AttrErr — not quite; rather RelErr", "实体错误？不对".
// ("EntErr — not SpaErr" contrasts the two: EntErr stands.)
var labelTakenBack = regexp.MustCompile(`(?i)^\s*(?:\([^()\n]{0,40}\))?\s*(?:[?？]|[\s,.:;—–-]*(?:no\b|not (?:quite|really|exactly|right|correct)\b|wrong\b|incorrect\b|不是|不对|不，|否))`)

// labelMarks are the emphasis and the label heading ParseLabel drops.
var labelMarks = strings.NewReplacer("*", "", "[幻觉标签]：", "", "[Hallucination label]:", "")

// ParseLabel reads the labelling agent's reply: the type name it starts
// with (the authors' code reads the first four characters), or else the
// one type named anywhere in it. A type the reply questions or takes back
// ("EntErr? No — SpaErr") is not its label: the leading type counts only
// when it is not taken back, and the one other type named is then read.
func ParseLabel(lang, reply string) (string, error) {
	s := strings.TrimSpace(labelMarks.Replace(reply))
	s = strings.TrimSpace(s)
	low := strings.ToLower(s)
	var named []string
	for _, t := range Types {
		names := []string{t, enNames[t]}
		if lang == "zh" {
			names = []string{zhNames[t]}
		}
		for _, n := range names {
			n = strings.ToLower(n)
			if strings.HasPrefix(low, n) {
				if !labelTakenBack.MatchString(low[len(n):]) {
					return t, nil
				}
				break // taken back: not named
			}
			if strings.Contains(low, n) {
				named = append(named, t)
				break
			}
		}
	}
	if len(named) == 1 {
		return named[0], nil
	}
	if len(named) > 1 {
		return "", fmt.Errorf("names %d types", len(named))
	}
	return "", errors.New("no hallucination type named")
}

// Check verdicts.
const (
	Pass      = "pass"
	Fail      = "fail"
	Uncertain = "uncertain"
)

// Verdict is one verification check: pass, fail or uncertain, with the
// verifier's reason.
type Verdict struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
}

// Validate rejects verdicts other than the three.
func (v *Verdict) Validate() error {
	switch v.Verdict {
	case Pass, Fail, Uncertain:
		return nil
	}
	return fmt.Errorf("verdict %q (want pass, fail or uncertain)", v.Verdict)
}

const verdictSchema = `{"type":"object","properties":{"verdict":{"type":"string","enum":["pass","fail","uncertain"]},` +
	`"reason":{"type":"string","maxLength":300}},"required":["verdict","reason"]}`

// Check tags, as the verifier prompts ask for them.
var checkTags = map[string]map[string]string{
	"zh": {"correct": "[正确检测]", "halu": "[幻觉检测]", "type": "[类型检测]"},
	"en": {"correct": "[Correctness check]", "halu": "[Hallucination check]", "type": "[Type check]"},
}

// ParseVerdict reads a verifier reply in the prompts' own format: the tag
// (with or without its brackets) and a colon, then 符合 / 不符合 (Pass /
// Fail), or 不确定 (Uncertain), in the cleaned reply (judging.Read); a tag not
// followed by a verdict (an echoed format line such as "开头必须是符合或者不符合"
// or "Pass or Fail") is not a verdict; every verdict stated must agree. The
// authors' code rejects only replies starting with the tag and 不符合 and
// keeps everything else; halu treats a reply without a stated verdict as a
// failure to parse (retried, then the item is dropped as unverifiable) —
// never as a pass.
func ParseVerdict(lang, check, reply string) (Verdict, error) {
	tag := checkTags[lang][check]
	words := []tagWord{{"不符合", Fail}, {"不确定", Uncertain}, {"符合", Pass},
		{"failed", Fail}, {"fails", Fail}, {"fail", Fail}, {"uncertain", Uncertain}, {"unsure", Uncertain},
		{"passed", Pass}, {"passes", Pass}, {"pass", Pass}}
	v, reason, err := taggedVerdict(reply, tag, words)
	if err != nil {
		return Verdict{}, err
	}
	return Verdict{Verdict: v, Reason: reason}, nil
}

type tagWord struct{ word, verdict string }

// wordEnds tells whether a verdict word ends where tail starts: at the end,
// a space, or punctuation other than a hyphen — or, for the Chinese
// verifier words, before 要求/条件/定义 ("符合要求").
func wordEnds(tail string) bool {
	r, _ := utf8.DecodeRuneInString(tail)
	switch {
	case tail == "", unicode.IsSpace(r):
		return true
	case r == '-' || r == '_':
		return false
	case unicode.IsPunct(r):
		return true
	}
	return strings.HasPrefix(tail, "要求") || strings.HasPrefix(tail, "条件") || strings.HasPrefix(tail, "定义")
}

var echoAfter = regexp.MustCompile(`^\s*(?:或者|或|/|、|\bor\b)`)

// taggedVerdict finds every "tag: word" in the cleaned reply (markdown
// made plain) and returns the one verdict they agree on, with the text
// after the first. Words are tried in order (put 不符合 before 符合).
func taggedVerdict(reply, tag string, words []tagWord) (verdict, reason string, err error) {
	s := judging.Plain(reply)
	nameRE := regexp.MustCompile(`(?i)` + regexp.QuoteMeta(strings.Trim(tag, "[]")))
	var found []string
	for _, loc := range nameRE.FindAllStringIndex(s, -1) {
		rest := strings.TrimLeft(s[loc[1]:], "] \t")
		if !strings.HasPrefix(rest, ":") && !strings.HasPrefix(rest, "-") {
			continue
		}
		rest = strings.TrimSpace(strings.TrimLeft(rest, ":- \t"))
		rl := strings.ToLower(rest)
		for _, w := range words {
			if strings.HasPrefix(rl, w.word) {
				tail := rest[len(w.word):]
				if !wordEnds(tail) {
					continue // "Conflicting…", "冲突不存在", "Passable": not the verdict word
				}
				if echoAfter.MatchString(tail) {
					break // "符合或者不符合": the format, echoed
				}
				if len(found) == 0 {
					reason = rest
				}
				found = append(found, w.verdict)
				break
			}
		}
	}
	if len(found) == 0 {
		return "", "", fmt.Errorf("no %s verdict stated", tag)
	}
	concl, err := conclusions(s, words)
	if err != nil {
		return "", "", err
	}
	found = append(found, concl...)
	for _, f := range found[1:] {
		if f != found[0] {
			return "", "", judging.TwoValues("two different %s verdicts (%s, %s)", tag, found[0], f)
		}
	}
	return found[0], reason, nil
}

// conclusion is a sentence that draws the verdict ("因此不符合", "so it
// does not pass: Fail").
var conclusion = regexp.MustCompile(`(?i)(?:因此|所以|故而|综上所述|综上|总之|\btherefore\b|\bthus\b|\bhence\b|\bso\b)([^。.!！?？\n]*)`)

var negatedEnd = regexp.MustCompile(`(?i)(?:\bnot|n't|\bno)\s*$`)

// conclusions are the verdicts the reply's concluding sentences draw, after
// its tagged verdict: the last verdict word of each ("符合……因此不符合" is
// contradicted; "so it does not pass: Fail" concludes Fail). A concluding
// verdict word that is negated ("so it does not pass.") is ambiguous.
func conclusions(s string, words []tagWord) ([]string, error) {
	var out []string
	for _, m := range conclusion.FindAllStringSubmatchIndex(s, -1) {
		sent := s[m[2]:m[3]]
		low := strings.ToLower(sent)
		if len(low) != len(sent) {
			low = sent // offsets below index both
		}
		last, at := "", 0
		for i := 0; i < len(low); {
			matched := 0
			for _, w := range words {
				if !strings.HasPrefix(low[i:], w.word) || !wordEnds(sent[i+len(w.word):]) {
					continue
				}
				if r, _ := utf8.DecodeLastRuneInString(low[:i]); i > 0 && (unicode.IsLetter(r) && r < utf8.RuneSelf) {
					continue // "bypass": not the word
				}
				last, at, matched = w.verdict, i, len(w.word)
				break
			}
			if matched == 0 {
				_, matched = utf8.DecodeRuneInString(low[i:])
			}
			i += matched
		}
		if last == "" {
			continue
		}
		if negatedEnd.MatchString(sent[:at]) {
			return nil, fmt.Errorf("a concluding verdict negated (%q)", strings.TrimSpace(sent))
		}
		out = append(out, last)
	}
	return out, nil
}

var (
	choiceBare  = regexp.MustCompile(`^[（(\[]?((?i)[A-D])[)）\]]?[.。:：、]?$`)
	choiceLead  = regexp.MustCompile(`^[（(\[]?((?i)[A-D])(?:[)）\]]|[)）\]]?(?:[.。:：、]|\s+[-–—]\s))`)
	choiceLabel = judging.NewLabelled("answer", `(?:final\s+|correct\s+)?(?:answer|choice|option)|antwort|réponse|respuesta|回答|答え|正确答案|最终答案|答案|选项|选择`, `(?-i:[（(]?\s*([A-D])\b)`)
	choiceIs    = regexp.MustCompile(`(?:\b(?i:answer|choice|option)\s+(?i:is|would be)|\bI (?i:choose|pick|select|would choose|would pick)|答案(?:是|为|应该是|应为)|(?:更正|修正|纠正)[^。\n]{0,40}?(?:应为|应该是)|正确(?:的)?(?:答案|选项)(?:是|为)|我选择?|应选择?|选择|选)(?:的是|是|为)?\s*(?:(?i:option)\s+|选项\s*)?[（(]?\s*([A-D])\b`)
)

// ParseChoice is the option a model states as its answer: a reply that is
// only the letter ("B", "(B)", "B."), a first line that starts with it
// ("B. <option text>"), "Answer: B", "答案：B", "The answer is B", "我选B".
// A letter that merely occurs ("I don't know" has a D; a <think> preamble
// has many) is not an answer; two different letters stated are ambiguous;
// either way ok is false and the answer is unscored. (The authors publish no
// scorer; their template asks for one letter only.)
func ParseChoice(reply string) (string, bool) {
	l, err := ReadChoice(reply)
	return l, err == nil
}

// ReadChoice is ParseChoice with the reason a reply states no choice (a
// reply that states two wraps judging.ErrTwoValues).
func ReadChoice(reply string) (string, error) {
	return choiceLetters.Read(judging.Plain(judging.Answer(reply)))
}

var choiceLetters = judging.Letters{Bare: choiceBare, Lead: choiceLead, Is: choiceIs, Label: choiceLabel}

const (
	tfTrueWords  = `正确|准确|对的|对|是的|是`
	tfFalseWords = `不正确|不准确|不对|不是|错误|错的|错|否`
)

var (
	tfWhole  = regexp.MustCompile(`^(?i:(` + tfFalseWords + `|` + tfTrueWords + `|true|false|correct|incorrect|wrong|yes|no|right|not correct|not true))$`)
	tfToken  = regexp.MustCompile(`[\s。，,.!！:：;；、]+`)
	tfLeadEn = regexp.MustCompile(`^(?i:(true|false|correct|incorrect|wrong|yes|no))[.,:;!—]`)
	tfLeadZh = regexp.MustCompile(`^(` + tfFalseWords + `|` + tfTrueWords + `)的?[。，,.!！:：；;]`)
	tfLabel  = judging.NewLabelled("judgement", `判断|答案|结论|(?:final\s+)?(?:judgement|judgment|answer|verdict)`, `(`+tfFalseWords+`|`+tfTrueWords+`|not\s+correct|incorrect|correct|true|false|wrong|yes|no)`)
	// A verdict word that ends a clause ("… is wrong.", "…不对。"), and
	// the verdict sentences read when nothing is stated as the answer.
	tfClauseEnd = `\s*(?:[.;!,:。，；！：]|$)`
	tfEndEn     = regexp.MustCompile(`(?i)\b(not\s+)?(correct|true|accurate|incorrect|false|wrong|inaccurate)\b` + tfClauseEnd)
	tfEndZh     = regexp.MustCompile(`(不正确|不准确|不对|错误|错了|正确|准确|对的)的?` + tfClauseEnd)
	tfProseEn   = regexp.MustCompile(`(?i)\b(?:answer|statement|response|claim)\s+(?:is|was|seems|appears)\s+(?:to\s+be\s+)?(not\s+)?(correct|true|accurate|right|incorrect|false|wrong|inaccurate)\b` + tfClauseEnd)
	tfProseZh   = regexp.MustCompile(`(?:回答|答案|说法|陈述)\s*(?:是|为)?\s*(?:(不正确|不准确|不对|错误|错|正确|准确|对)|(?:并不|并非|不是)\s*(正确|准确|对))的?` + tfClauseEnd)
)

// tfPolarity is a true/false word's verdict; ok is false for a word that is
// neither.
func tfPolarity(w string) (judgedTrue, ok bool) {
	w = strings.ToLower(strings.Join(strings.Fields(w), " "))
	switch w {
	case "正确", "准确", "对的", "对", "是的", "是", "true", "correct", "yes", "right", "accurate":
		return true, true
	case "不正确", "不准确", "不对", "不是", "错误", "错的", "错", "错了", "否", "false", "incorrect", "wrong", "no", "not correct", "not true", "inaccurate":
		return false, true
	}
	return false, false
}

// negated reads an English verdict word under "not": "not correct" is
// false; "not incorrect", a double negation, is ambiguous (ok false).
func negated(not, word string) (judgedTrue, ok bool) {
	v, _ := tfPolarity(word)
	if not == "" {
		return v, true
	}
	return false, v
}

// ParseTrueFalse reads the true/false judgement a model states: a reply
// that is only the verdict ("正确", "不对", "False.", "True 正确"), a reply
// that starts with it and punctuation ("错误。因为…", "False. The correct date
// is…"), a labelled "判断：错误" / "Answer: True"; failing those, a verdict
// sentence about the answer ("该回答是错误的。", "The answer is not
// correct."). A verdict word must end its clause: "It is correct that…" and
// "Correct dates matter…" state nothing. A stated verdict that the rest of
// the reply contradicts ("对，但年份不对。", "True, but the year is wrong."),
// a double negation ("not incorrect") and two different verdicts are
// ambiguous: ok is false, the answer unscored.
func ParseTrueFalse(reply string) (judgedTrue, ok bool) {
	s := strings.TrimSpace(judging.Plain(judging.Answer(reply)))
	whole := strings.Trim(s, " \t\n。.!！\"“”'「」")
	if tfWhole.MatchString(whole) {
		return tfPolarity(whole)
	}
	var found []bool
	add := func(w string) {
		if v, ok := tfPolarity(w); ok {
			found = append(found, v)
		}
	}
	first, _, _ := strings.Cut(s, "\n")
	first = strings.Trim(strings.TrimSpace(first), "\"“”'「」")
	rest := s
	if toks := tfToken.Split(strings.Trim(first, " 。.!！"), -1); allVerdicts(toks) {
		for _, t := range toks {
			add(t) // "True 正确": the whole first line is the verdict
		}
		rest = strings.TrimPrefix(strings.TrimSpace(s), first)
	} else if m := tfLeadZh.FindStringSubmatch(first); m != nil {
		add(m[1])
		rest = strings.TrimSpace(s)[len(m[0]):]
	} else if m := tfLeadEn.FindStringSubmatch(first); m != nil {
		add(m[1])
		rest = strings.TrimSpace(s)[len(m[0]):]
	}
	vals, _ := tfLabel.All(s)
	for _, v := range vals {
		add(v)
	}
	if len(found) > 0 {
		// The rest of the reply must not say the opposite.
		for _, m := range tfEndEn.FindAllStringSubmatch(rest, -1) {
			v, ok := negated(m[1], m[2])
			if !ok || v != found[0] {
				return false, false
			}
		}
		for _, m := range tfEndZh.FindAllStringSubmatch(rest, -1) {
			if v, _ := tfPolarity(m[1]); v != found[0] {
				return false, false
			}
		}
	} else {
		for _, loc := range tfProseEn.FindAllStringSubmatchIndex(s, -1) {
			if conditional.MatchString(s[max(0, loc[0]-40):loc[0]]) {
				continue // "Output True if the answer is correct": a condition, not a verdict
			}
			m := []string{"", sub(s, loc[2], loc[3]), sub(s, loc[4], loc[5])}
			v, ok := negated(m[1], m[2])
			if !ok {
				return false, false
			}
			found = append(found, v)
		}
		for _, loc := range tfProseZh.FindAllStringSubmatchIndex(s, -1) {
			if conditional.MatchString(s[max(0, loc[0]-40):loc[0]]) {
				continue
			}
			m := []string{"", sub(s, loc[2], loc[3]), sub(s, loc[4], loc[5])}
			if m[2] != "" {
				found = append(found, false) // 并不正确, 不是对的
				continue
			}
			add(m[1])
		}
	}
	if len(found) == 0 {
		return false, false
	}
	for _, f := range found[1:] {
		if f != found[0] {
			return false, false
		}
	}
	return found[0], true
}

// conditional is a condition that a verdict sentence after it is part of.
var conditional = regexp.MustCompile(`(?i)(?:\b(?:if|whether|unless)\b|如果|若|是否)[^.;!?。；！？]*$`)

// sub is s[i:j], or "" for an unmatched group.
func sub(s string, i, j int) string {
	if i < 0 {
		return ""
	}
	return s[i:j]
}

// allVerdicts tells whether every token is a true/false word.
func allVerdicts(toks []string) bool {
	n := 0
	for _, t := range toks {
		if t == "" {
			continue
		}
		if _, ok := tfPolarity(t); !ok {
			return false
		}
		n++
	}
	return n > 0
}

// Conflict is the generative judge's verdict.
type Conflict struct {
	Conflict bool `json:"conflict"`
}

const conflictSchema = `{"type":"object","properties":{"conflict":{"type":"boolean"}},"required":["conflict"]}`

// ParseConflict reads the generative judge's verdict: "[冲突检测]：冲突 /
// 不冲突" or "[Conflict check]: Conflict / No conflict" (also 无冲突, 没有冲突,
// "does not conflict"), or a reply that is only the verdict. The evaluated
// response is fenced in the prompt and removed from the reply (by the
// engine, judging.Read) before
// reading, so a verdict it carries is never read; every verdict stated must
// agree.
func ParseConflict(lang, reply string) (Conflict, error) {
	s := reply
	tag := "[Conflict check]"
	if lang == "zh" {
		tag = "[冲突检测]"
	}
	words := []tagWord{{"不冲突", "no"}, {"无冲突", "no"}, {"没有冲突", "no"}, {"不存在冲突", "no"}, {"没有矛盾", "no"}, {"不矛盾", "no"},
		{"存在冲突", "yes"}, {"有冲突", "yes"}, {"冲突", "yes"}, {"矛盾", "yes"},
		{"no conflict", "no"}, {"not in conflict", "no"}, {"does not conflict", "no"}, {"doesn't conflict", "no"}, {"not conflicting", "no"}, {"consistent", "no"},
		{"conflict", "yes"}, {"contradict", "yes"}}
	whole := strings.ToLower(strings.Trim(strings.TrimSpace(judging.Plain(s)), " 。.!！"))
	for _, w := range words {
		if whole == w.word || whole == w.word+"s" {
			return Conflict{w.verdict == "yes"}, nil
		}
	}
	v, _, err := taggedVerdict(s, tag, words)
	if err != nil {
		return Conflict{}, err
	}
	return Conflict{v == "yes"}, nil
}
