// Package cfaith is HaluAgent and C-FAITH ("C-FAITH: A Chinese Fine-Grained
// Benchmark for Automated Hallucination Evaluation"): generation agents
// turn knowledge documents into questions, correct answers, hallucinated
// responses and hallucination labels (§3.1); a verification module checks
// each (correctness, hallucination, label) and drops what fails or is
// uncertain; an optimisation loop refines the generation rules on the
// verifier's feedback (§3.2); the verified data are aggregated into
// generative, single-choice and true/false QA (§3.3). The evaluation suite
// then measures models' hallucination rates per format and type (§4).
package cfaith

import (
	"embed"
	"encoding/json"
	"fmt"
	"strings"

	"halu/runner/engine"
	"halu/runner/judging"
)

//go:embed prompts/zh/*.txt prompts/en/*.txt prompts/rules.json
var assets embed.FS

// Types are the hallucination types by code: the paper's six (Table 1) and
// the authors' code's seventh, Outdated.
var Types = []string{"FactFab", "AttrErr", "EntErr", "RelErr", "SpaErr", "RefErr", "Outdated"}

// DefaultTypes are the paper's six.
var DefaultTypes = Types[:6]

// zhNames are the Chinese type names the authors' prompts use.
var zhNames = map[string]string{
	"FactFab": "虚构事实", "AttrErr": "属性错误", "EntErr": "实体错误", "RelErr": "关系错误",
	"SpaErr": "时空幻觉", "RefErr": "虚假引用", "Outdated": "过时信息",
}

// enNames are the paper's English names.
var enNames = map[string]string{
	"FactFab": "Factual Fabrication", "AttrErr": "Attribute Error", "EntErr": "Entity Error", "RelErr": "Relation Error",
	"SpaErr": "Spatiotemporal Error", "RefErr": "Reference Error", "Outdated": "Outdated Information",
}

// TypeName is the name of a type in a language's prompts.
func TypeName(lang, code string) string {
	if lang == "zh" {
		return zhNames[code]
	}
	return code
}

func knownType(code string) bool {
	_, ok := zhNames[code]
	return ok
}

// Langs are the prompt languages: the authors' Chinese, and English.
var Langs = []string{"zh", "en"}

func tmpl(lang, name string) string {
	return engine.Embedded(assets, "prompts/"+lang+"/"+name+".txt")
}

// fillPositional substitutes the authors' positional "{}" placeholders in
// order, as Python's str.format does.
func fillPositional(t string, args ...string) string {
	var b strings.Builder
	for i := 0; ; i++ {
		j := strings.Index(t, "{}")
		if j < 0 || i >= len(args) {
			b.WriteString(t)
			return b.String()
		}
		b.WriteString(t[:j])
		b.WriteString(args[i])
		t = t[j+2:]
	}
}

// RuleSet is the part of the generation prompts that prompt optimisation
// changes (Figure 7): the question-generation rules, the hallucinated-
// response rules and the hallucination label definitions.
type RuleSet struct {
	Name      string            `json:"name"`
	QARules   []string          `json:"qa_rules"`
	HaluRules []string          `json:"halu_rules"`
	LabelDefs map[string]string `json:"label_definitions"`
}

// Validate checks a rule set has the shape the templates need.
func (r RuleSet) Validate() error {
	if len(r.QARules) != 4 || len(r.HaluRules) != 4 {
		return fmt.Errorf("rule set %q: want 4 question rules and 4 response rules, have %d and %d", r.Name, len(r.QARules), len(r.HaluRules))
	}
	for i, s := range append(append([]string(nil), r.QARules...), r.HaluRules...) {
		if strings.TrimSpace(s) == "" || strings.Contains(s, "\n") {
			return fmt.Errorf("rule set %q: rule %d is empty or spans lines", r.Name, i+1)
		}
	}
	for _, t := range Types {
		d := r.LabelDefs[t]
		if strings.TrimSpace(d) == "" || strings.Contains(d, "\n") {
			return fmt.Errorf("rule set %q: definition of %s is missing or spans lines", r.Name, t)
		}
	}
	return nil
}

// BuiltinRules returns a language's "original" rules (the authors' code's
// prompts as published) or "optimized" rules (the paper's Figure 7).
func BuiltinRules(lang, name string) (RuleSet, error) {
	b, err := assets.ReadFile("prompts/rules.json")
	if err != nil {
		return RuleSet{}, err
	}
	var all map[string]map[string]RuleSet
	if err := json.Unmarshal(b, &all); err != nil {
		return RuleSet{}, err
	}
	r, ok := all[lang][name]
	if !ok {
		return RuleSet{}, fmt.Errorf("no %q rule set for language %q (want original or optimized)", name, lang)
	}
	r.Name = name
	return r, nil
}

// replaceNumbered replaces the rule lines "1. …" to "n. …" of a template's
// requirements (the first lines with those prefixes) with rules.
func replaceNumbered(t string, rules []string) string {
	lines := strings.Split(t, "\n")
	next := 0
	for i, l := range lines {
		if next < len(rules) && strings.HasPrefix(l, fmt.Sprintf("%d. ", next+1)) {
			lines[i] = fmt.Sprintf("%d. %s", next+1, rules[next])
			next++
		}
	}
	return strings.Join(lines, "\n")
}

// replaceDefinitions replaces each type's definition line of the label
// prompt ("虚构事实：…" or "FactFab (Factual Fabrication): …").
func replaceDefinitions(lang, t string, defs map[string]string) string {
	lines := strings.Split(t, "\n")
	for i, l := range lines {
		for code, d := range defs {
			if lang == "zh" && strings.HasPrefix(l, zhNames[code]+"：") {
				lines[i] = zhNames[code] + "：" + d
			}
			if lang == "en" && strings.HasPrefix(l, code+" ("+enNames[code]+"): ") {
				lines[i] = code + " (" + enNames[code] + "): " + d
			}
		}
	}
	return strings.Join(lines, "\n")
}

// QAPrompt is the question-generation agent's prompt for a type (the
// authors' qa_generate_prompt), with the rule set's four question rules.
func QAPrompt(lang, typ string, rs RuleSet, knowledge string) string {
	return fillPositional(replaceNumbered(tmpl(lang, "datagen_qa_"+typ), rs.QARules), knowledge)
}

// HaluAnswerPrompt is the hallucinated-response agent's prompt.
func HaluAnswerPrompt(lang string, rs RuleSet, question, answer, evidence string) string {
	return fillPositional(replaceNumbered(tmpl(lang, "datagen_halu_answer"), rs.HaluRules), question, answer, evidence)
}

// HaluAnswersPrompt asks for n hallucinated responses in one call, as the
// authors' multi_halu_answer_prompt (generator/qa_generator.py) asks for
// three; for another n the count and the numbered format lines say n.
func HaluAnswersPrompt(lang string, rs RuleSet, n int, question, answer, evidence string) string {
	t := replaceNumbered(tmpl(lang, "datagen_halu_answer_multi"), rs.HaluRules)
	if n != 3 {
		label := map[string]string{"zh": "[幻觉回复%d]：...", "en": "[Hallucinated response %d]: ..."}[lang]
		var lines []string
		for i := 1; i <= n; i++ {
			lines = append(lines, fmt.Sprintf(label, i))
		}
		three := fmt.Sprintf(label, 1) + "\n" + fmt.Sprintf(label, 2) + "\n" + fmt.Sprintf(label, 3)
		t = strings.Replace(t, three, strings.Join(lines, "\n"), 1)
		t = strings.Replace(t, "生成3个不同", fmt.Sprintf("生成%d个不同", n), 1)
		t = strings.Replace(t, "Generate 3 different", fmt.Sprintf("Generate %d different", n), 1)
	}
	return fillPositional(t, question, answer, evidence)
}

// LabelPrompt is the labelling agent's prompt.
func LabelPrompt(lang string, rs RuleSet, question, halu, answer string) string {
	return fillPositional(replaceDefinitions(lang, tmpl(lang, "datagen_halu_label"), rs.LabelDefs), question, halu, answer)
}

// VerifyCorrectPrompt is the correctness check; the knowledge is the
// extracted evidence, as the authors' code passes it.
func VerifyCorrectPrompt(lang, evidence, question, answer string) string {
	return fillPositional(tmpl(lang, "verify_correct_answer"), evidence, question, answer)
}

// VerifyHaluPrompt is the hallucination check.
func VerifyHaluPrompt(lang, evidence, question, halu string) string {
	return fillPositional(tmpl(lang, "verify_halu_answer"), evidence, question, halu)
}

// VerifyTypePrompt is the label check of type typ.
func VerifyTypePrompt(lang, typ, question, answer, halu string) string {
	return fillPositional(tmpl(lang, "verify_type_"+typ), question, answer, halu, TypeName(lang, typ))
}

// SingleChoicePrompt is the authors' single-choice template.
func SingleChoicePrompt(lang, question string, options [4]string) string {
	return engine.Fill(tmpl(lang, "eval_single_choice"), map[string]string{"q": question, "a": options[0], "b": options[1], "c": options[2], "d": options[3]})
}

// TrueFalsePrompt is halu's true/false template (the authors published
// none), written in the style of their single-choice one.
func TrueFalsePrompt(lang, question, statement string) string {
	return engine.Fill(tmpl(lang, "eval_true_false"), map[string]string{"q": question, "a": statement})
}

// JudgePrompt asks whether a generative answer conflicts with the correct
// one (§4.2; the paper's GPT-4o prompt is not published: halu's).
func JudgePrompt(lang, question, answer, response string) string {
	return engine.Fill(tmpl(lang, "judge_generative"), map[string]string{"q": question, "a": answer, "r": "\n" + judging.Fence(response)})
}

// numbered lists rules one per line as "1. rule".
func numbered(xs []string) string {
	var b strings.Builder
	for i, x := range xs {
		fmt.Fprintf(&b, "%d. %s\n", i+1, x)
	}
	return strings.TrimRight(b.String(), "\n")
}

// partNames are the headings of the rule parts in each language.
var partNames = map[string]map[Part]string{
	"zh": {QAPart: "问题生成规则", HaluPart: "幻觉回复规则", "label": "幻觉标签定义"},
	"en": {QAPart: "Question generation rules", HaluPart: "Hallucinated response rules", "label": "Hallucination label definition"},
}

// OptimizerPrompt asks the optimisation agent to revise one part of the
// rules from the error feedback that blames it (halu's prompt: the paper's
// is not published). The whole rule set is shown for context.
func OptimizerPrompt(lang string, rs RuleSet, part Part, feedback string) string {
	var defs strings.Builder
	for _, t := range Types {
		fmt.Fprintf(&defs, "%s: %s\n", TypeName(lang, t), rs.LabelDefs[t])
	}
	names := partNames[lang]
	name, output := names[part], `{"rules": ["...", "...", "...", "..."]}`
	if t := part.labelType(); t != "" {
		name, output = names["label"]+" "+TypeName(lang, t), `{"definition": "..."}`
	}
	return engine.Fill(tmpl(lang, "optimizer"), map[string]string{
		"qa_rules": numbered(rs.QARules), "halu_rules": numbered(rs.HaluRules),
		"label_definitions": strings.TrimRight(defs.String(), "\n"),
		"part":              name, "current": part.Current(rs), "feedback": feedback, "output": output})
}

// Templates lists every template of a language by name, for the manifest.
func Templates(lang string) map[string]string {
	out := map[string]string{}
	entries, _ := assets.ReadDir("prompts/" + lang)
	for _, e := range entries {
		n := strings.TrimSuffix(e.Name(), ".txt")
		out[lang+"/"+n] = tmpl(lang, n)
	}
	return out
}
