package cfaith

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The authors' corrector (corrector/qa_corrector.py) is their optimisation
// agent: shown one failed check, it rewrites a whole generation prompt —
// the question prompt (its instruction, requirements and type rule), the
// hallucinated-response prompt, or the label prompt with every type's
// definition — and the reply is the new prompt, free text starting as the
// old one does. halu shows the prompt as its rule set renders it and reads
// back from the reply what a rule set holds: requirements 1–4 of a rule
// group, or the blamed type's definition.

// examplesMarker ends the instruction part of a generation prompt: the
// authors' corrector is shown the prompt without its examples.
var examplesMarker = map[string][]string{"zh": {"给定如下例子："}, "en": {"Here are examples:", "Here is an example:"}}

// instruction is t up to its examples, without trailing space.
func instruction(lang, t string) string {
	for _, m := range examplesMarker[lang] {
		if i := strings.Index(t, m); i >= 0 {
			t = t[:i]
		}
	}
	return strings.TrimSpace(t)
}

// openings are how each rewritten prompt must begin (the correction
// instructions ask for it): the first line of the part's prompt, up to its
// first comma or full stop.
var openings = map[string]map[string]string{
	"zh": {"qa": "假设你是一个中文问题生成者", "halu": "假设你是一个幻觉回复生成者", "label": "假设你是一个幻觉分类器"},
	"en": {"qa": "Suppose you are a question writer", "halu": "Suppose you are a hallucinated-response writer", "label": "Suppose you are a hallucination classifier"},
}

// failureFor is the failure the k-th candidate revising part is shown: the
// part's failures taken in turn.
func failureFor(docs []DocResult, part Part, k int) (failure, bool) {
	var mine []failure
	for _, f := range failures(docs) {
		if f.part == part {
			mine = append(mine, f)
		}
	}
	if len(mine) == 0 {
		return failure{}, false
	}
	return mine[k%len(mine)], true
}

// feedbackTags are the authors' labels of a failed check in the feedback
// they pass to the corrector ("[正确回答]" + the verifier's reply).
var feedbackTags = map[string]map[string]string{
	"zh": {"qa": "[正确回答]", "halu": "[幻觉回答]", "label": "[幻觉类型]"},
	"en": {"qa": "[Correct answer]", "halu": "[Hallucinated answer]", "label": "[Hallucination type]"},
}

var verdictWords = map[string]map[string]string{
	"zh": {Fail: "不符合", Uncertain: "不确定"},
	"en": {Fail: "Fail", Uncertain: "Uncertain"},
}

// kind is the prompt a part belongs to: qa, halu or label.
func (p Part) kind() string {
	switch {
	case p == QAPart:
		return "qa"
	case p == HaluPart:
		return "halu"
	}
	return "label"
}

// CorrectorPrompt is the authors' correction instruction for part, shown
// the part's prompt as rs renders it (the question prompt of the type the
// failed question was written for) and the failed check f.
func CorrectorPrompt(lang string, rs RuleSet, part Part, f failure) string {
	kind := part.kind()
	feedback := feedbackTags[lang][kind] + verdictWords[lang][f.verdict.Verdict] + " " + f.verdict.Reason
	switch kind {
	case "qa":
		original := instruction(lang, replaceNumbered(tmpl(lang, "datagen_qa_"+f.mode), rs.QARules))
		return fillPositional(tmpl(lang, "corrector_qa"), original, f.qa.Question, f.qa.Answer, feedback)
	case "halu":
		original := instruction(lang, replaceNumbered(tmpl(lang, "datagen_halu_answer"), rs.HaluRules))
		return fillPositional(tmpl(lang, "corrector_halu"), original, f.qa.Question, f.text, feedback)
	}
	original := instruction(lang, replaceDefinitions(lang, tmpl(lang, "datagen_halu_label"), rs.LabelDefs))
	return fillPositional(tmpl(lang, "corrector_label"), original, f.qa.Question, f.text, TypeName(lang, part.labelType()), feedback)
}

var (
	numberedLine = regexp.MustCompile(`^\s*(?:[-*]\s*)?(?:\*\*)?(\d{1,2})\s*(?:\*\*)?\s*[.、．:：)）]\s*(?:\*\*)?\s*(.+?)\s*$`)
	thinkBlock   = regexp.MustCompile(`(?s)<think>.*?</think>`)
)

// ReadCorrection reads a reply to CorrectorPrompt for part back into rs,
// named name. Every prompt in the reply — from a line that begins as the
// instructions ask to the next such line, without its examples — is read:
// a rule group's requirements 1–4 (the question prompt's evidence and type
// requirements, 5 and 6, stay halu's: no rule set holds them), each once,
// or the blamed type's definition line. A prompt that reads as the part
// already is, is the original quoted (before or after the rewrite), not
// the answer; the rewritten prompts that remain must all read alike, and
// the last prompt in the reply must read (a reply cut inside its rewrite
// is not read from an earlier copy). With no rewrite left the agent kept
// the part as it was. A reply that is no prompt, misses a requirement or
// repeats one, drops the blamed definition, or gives two different
// rewrites, is an error.
func (p Part) ReadCorrection(lang string, rs RuleSet, reply, name string) (RuleSet, error) {
	text := thinkBlock.ReplaceAllString(reply, "")
	open := openings[lang][p.kind()]
	lines := strings.Split(text, "\n")
	var starts []int
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, " \t>") // a prompt quoted in markdown
		if strings.HasPrefix(strings.Trim(lines[i], " \t*#>\"“”"), open) {
			starts = append(starts, i)
		}
	}
	if len(starts) == 0 {
		return rs, fmt.Errorf("no prompt beginning %q in the reply", open)
	}
	current := p.Current(rs)
	var rewrite *RuleSet
	for k, start := range starts {
		end := len(lines)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		got, err := p.readPrompt(lang, rs, instruction(lang, strings.Join(lines[start:end], "\n")), name)
		switch {
		case err != nil && k == len(starts)-1:
			return rs, err
		case err != nil || p.Current(got) == current:
			continue // an unreadable earlier copy, or the original quoted
		case rewrite != nil && p.Current(*rewrite) != p.Current(got):
			return rs, errors.New("two different rewritten prompts in the reply")
		}
		rewrite = &got
	}
	if rewrite == nil {
		out := rs
		out.Name = name
		return out, nil
	}
	return *rewrite, nil
}

// readPrompt reads one rewritten prompt's body into rs (see
// ReadCorrection).
func (p Part) readPrompt(lang string, rs RuleSet, body, name string) (RuleSet, error) {
	out := RuleSet{Name: name, QARules: rs.QARules, HaluRules: rs.HaluRules, LabelDefs: map[string]string{}}
	for k, d := range rs.LabelDefs {
		out.LabelDefs[k] = d
	}
	one := func(s string) string { return strings.Join(strings.Fields(strings.Trim(s, "* ")), " ") }
	if t := p.labelType(); t != "" {
		def, err := definitionLine(lang, t, strings.Split(body, "\n"))
		if err != nil {
			return rs, err
		}
		out.LabelDefs[t] = one(def)
		return out, out.Validate()
	}
	got := map[int]string{}
	for _, l := range strings.Split(body, "\n") {
		m := numberedLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		if n < 1 || n > 4 {
			continue
		}
		if _, dup := got[n]; dup {
			return rs, fmt.Errorf("requirement %d given twice", n)
		}
		got[n] = one(m[2])
	}
	rules := make([]string, 4)
	for i := range rules {
		if got[i+1] == "" {
			return rs, fmt.Errorf("requirement %d missing from the rewritten prompt", i+1)
		}
		rules[i] = got[i+1]
	}
	if p == QAPart {
		out.QARules = rules
	} else {
		out.HaluRules = rules
	}
	return out, out.Validate()
}

// definitionLine is type t's definition in the rewritten label prompt's
// lines ("时空幻觉：…", "SpaErr (Spatiotemporal Error): …", or the English
// name alone); one line, stated once.
func definitionLine(lang, t string, lines []string) (string, error) {
	var prefixes []string
	if lang == "zh" {
		prefixes = []string{zhNames[t] + "：", zhNames[t] + ":"}
	} else {
		prefixes = []string{t + " (" + enNames[t] + "):", enNames[t] + ":", t + ":"}
	}
	var found []string
	for _, l := range lines {
		l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "-*0123456789.、 "))
		l = strings.ReplaceAll(l, "**", "")
		for _, pre := range prefixes {
			if rest, ok := strings.CutPrefix(l, pre); ok && strings.TrimSpace(rest) != "" {
				found = append(found, strings.TrimSpace(rest))
				break
			}
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("no definition of %s in the rewritten prompt", TypeName(lang, t))
	case 1:
		return found[0], nil
	}
	return "", errors.New("the definition of " + TypeName(lang, t) + " is given more than once")
}
