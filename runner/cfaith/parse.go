package cfaith

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
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
	for _, p := range []string{"[幻觉回复]：", "[幻觉回复]:", "[Hallucinated response]:"} {
		s = strings.TrimSpace(strings.TrimPrefix(s, p))
	}
	if s == "" {
		return "", errors.New("empty hallucinated response")
	}
	return s, nil
}

// ParseLabel reads the labelling agent's reply: the type name it starts
// with (the authors' code reads the first four characters), or else the
// one type named anywhere in it.
func ParseLabel(lang, reply string) (string, error) {
	s := strings.TrimSpace(strings.NewReplacer("*", "", "[幻觉标签]：", "", "[Hallucination label]:", "").Replace(reply))
	s = strings.TrimSpace(s)
	var named []string
	for _, t := range Types {
		names := []string{t, enNames[t]}
		if lang == "zh" {
			names = []string{zhNames[t]}
		}
		for _, n := range names {
			if strings.HasPrefix(strings.ToLower(s), strings.ToLower(n)) {
				return t, nil
			}
			if strings.Contains(strings.ToLower(s), strings.ToLower(n)) {
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
// and a colon, then 符合 / 不符合 (Pass / Fail), or 不确定 (Uncertain). The
// authors' code rejects only replies starting with the tag and 不符合 and
// keeps everything else; halu treats a reply without the tag or a verdict
// word as a failure to parse (retried, then the item is dropped as
// unverifiable) — never as a pass.
func ParseVerdict(lang, check, reply string) (Verdict, error) {
	tag := checkTags[lang][check]
	s := strings.TrimSpace(strings.NewReplacer("*", "", "`", "").Replace(reply))
	i := strings.Index(s, tag)
	if i < 0 {
		return Verdict{}, fmt.Errorf("no %s", tag)
	}
	s = strings.TrimSpace(s[i+len(tag):])
	s = strings.TrimSpace(strings.TrimLeft(s, "：:"))
	low := strings.ToLower(s)
	var v string
	switch {
	case strings.HasPrefix(s, "不符合"), strings.HasPrefix(low, "fail"):
		v = Fail
	case strings.HasPrefix(s, "不确定"), strings.HasPrefix(low, "uncertain"):
		v = Uncertain
	case strings.HasPrefix(s, "符合"), strings.HasPrefix(low, "pass"):
		v = Pass
	default:
		return Verdict{}, fmt.Errorf("%s is not followed by a verdict", tag)
	}
	return Verdict{Verdict: v, Reason: s}, nil
}

var letterRE = regexp.MustCompile(`[A-D]`)

// ParseChoice is the option a model chose: the first of A–D in its reply
// (the authors publish no scorer; this is the rule their template implies).
func ParseChoice(reply string) (string, bool) {
	m := letterRE.FindString(strings.ToUpper(strings.TrimSpace(reply)))
	return m, m != ""
}

var (
	tfTrue  = regexp.MustCompile(`(?i)正确|对|是|\btrue\b|\bcorrect\b|\byes\b`)
	tfFalse = regexp.MustCompile(`(?i)错误|错|否|不正确|\bfalse\b|\bincorrect\b|\bwrong\b|\bno\b`)
)

// ParseTrueFalse reads a true/false judgement: whichever of the true or
// false words comes first (不正确 and incorrect count as false).
func ParseTrueFalse(reply string) (judgedTrue, ok bool) {
	s := strings.TrimSpace(reply)
	ti, fi := tfTrue.FindStringIndex(s), tfFalse.FindStringIndex(s)
	switch {
	case ti == nil && fi == nil:
		return false, false
	case fi == nil:
		return true, true
	case ti == nil:
		return false, true
	}
	// "不正确" starts with the false word before the true one it contains.
	return ti[0] < fi[0], true
}

// Conflict is the generative judge's verdict.
type Conflict struct {
	Conflict bool `json:"conflict"`
}

const conflictSchema = `{"type":"object","properties":{"conflict":{"type":"boolean"}},"required":["conflict"]}`

// ParseConflict reads "[冲突检测]：冲突 / 不冲突" or "[Conflict check]:
// Conflict / No conflict".
func ParseConflict(lang, reply string) (Conflict, error) {
	s := strings.NewReplacer("*", "").Replace(reply)
	tag := "[Conflict check]"
	if lang == "zh" {
		tag = "[冲突检测]"
	}
	i := strings.Index(s, tag)
	if i < 0 {
		return Conflict{}, fmt.Errorf("no %s", tag)
	}
	s = strings.ToLower(strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(s[i+len(tag):]), "：:")))
	switch {
	case strings.HasPrefix(s, "不冲突"), strings.HasPrefix(s, "no conflict"):
		return Conflict{false}, nil
	case strings.HasPrefix(s, "冲突"), strings.HasPrefix(s, "conflict"):
		return Conflict{true}, nil
	}
	return Conflict{}, fmt.Errorf("%s is not followed by a verdict", tag)
}
