package judging_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"halu/runner/cfaith"
	"halu/runner/hic"
	"halu/runner/hic/hicjudge"
	"halu/runner/hypo"
	"halu/runner/ideas"
	"halu/runner/intent"
	"halu/runner/judging"
	"halu/runner/smoke"
)

// replyCase is one hand-written reply in testdata/replies: the reader it is
// for, the style it imitates, and what a careful human reads in it ("reject"
// when no single verdict can be read).
type replyCase struct {
	Reader string `yaml:"reader"`
	// Kind groups replies by what makes them hard (settled.yaml lists them).
	Kind  string `yaml:"kind"`
	Style string `yaml:"style"`
	Lang  string `yaml:"lang"`
	Check string `yaml:"check"` // cfaith verifier: correct, halu, type
	Task  string `yaml:"task"`  // hypo: chem-gene, dis-gene, gene-gene
	N     int    `yaml:"n"`     // intent scoring: constraints
	// Classes: intent ratios, the constraints per priority ("mandatory=2 important=1").
	Classes string `yaml:"classes"`
	Quoted  string `yaml:"quoted"` // the evaluated text the judge saw
	// Clarify: intent mapping, content was withheld (a request for it is
	// an answer).
	Clarify bool   `yaml:"clarify"`
	Reply   string `yaml:"reply"`
	Want    string `yaml:"want"`
	// Cut: the reply stopped at its token cap (the engine drops the word
	// the cap may have cut, judging.DropCutWord).
	Cut bool `yaml:"cut"`
	// JSON: the reply came in JSON mode (the judge was sent a schema).
	JSON bool `yaml:"json"`
}

// judged reads a judge reply the way a run reads it: judging.Read (the
// function the engine's judge contract calls) with the suite's own Reader
// (the one its Process passes to JudgeWith or JudgeAs), under readers.
func judged[T any](c replyCase, readers string, r judging.Reader[T]) (T, error) {
	out, err := judging.Read(c.Reply, c.Cut, c.JSON, readers, r)
	return out.V, err
}

// readReply runs the reader a case names, as a run reads it under readers
// (judging.ReadersHalu or ReadersPaper), and renders what it read in the
// corpus's notation; err is a rejection.
func readReply(c replyCase, readers string) (string, error) {
	yn := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	switch c.Reader {
	case "hic.verdict":
		v, err := judged(c, readers, hicjudge.VerdictReader(c.Quoted))
		return fmt.Sprintf("%d/%d/%d/%s", v.Originality, v.Feasibility, v.Value, yn(v.Hallucination)), err
	case "hic.entailment":
		return judged(c, readers, hic.EntailmentReader(c.Quoted))
	case "ideas.critic":
		v, err := judged(c, readers, ideas.CriticReader(c.Quoted))
		return fmt.Sprintf("%d/%d/%d", v.Originality, v.Feasibility, v.Clarity), err
	case "ideas.fluency":
		v, err := judged(c, readers, ideas.FluencyReader(c.Quoted, ""))
		return v.Grade, err
	case "ideas.final-idea":
		// An answer reader: halu's extraction (--final-idea all), the
		// idea after a marker line; prose that mentions a "final idea"
		// is never cut.
		idea, _ := ideas.ExtractIdeaLine(c.Reply)
		return idea, nil
	case "hic.dhp-split":
		// An answer reader: the authors' DHP split, answers at blank lines.
		parts, _ := hic.SplitAnswers(c.Reply)
		return strings.Join(parts, " | "), nil
	case "hypo.hypothesis":
		labels := hypo.Labels(hypo.Tasks[c.Task])
		_, l, ok := hypo.ParseHypothesis(c.Reply, labels)
		if !ok {
			return "", fmt.Errorf("unparseable")
		}
		return l, nil
	case "hypo.groundness":
		v, err := judged(c, readers, hypo.GroundnessReader(c.Quoted))
		if err != nil {
			return "", err
		}
		if v.Groundness == nil {
			return "", fmt.Errorf("no groundness")
		}
		return fmt.Sprint(*v.Groundness), nil
	case "intent.missing":
		v, err := judged(c, readers, intent.MissingReader(c.Quoted))
		return yn(v.MentionsMissing) + "/" + yn(v.InventsMissing) + "/" + yn(v.OnTask), err
	case "intent.fact":
		v, err := judged(c, readers, intent.FactReader(c.Quoted))
		return yn(v.FactualInaccuracies) + "/" + yn(v.MissingRequiredFacts), err
	case "intent.baseline":
		v, err := judged(c, readers, intent.BaselineReader(c.Quoted))
		return fmt.Sprint(v.Score), err
	case "intent.score":
		v, err := judged(c, readers, intent.ScoreReader(c.N, c.Quoted))
		var out []string
		for _, b := range v {
			out = append(out, yn(b))
		}
		return strings.Join(out, ","), err
	case "intent.mapping":
		m, err := judged(c, readers, intent.MappingReader(c.Clarify))
		if m.Clarification {
			return "clarification", err
		}
		var out []string
		for _, k := range m.Constraints {
			out = append(out, k.Priority+": "+k.Text)
		}
		return strings.Join(out, "; "), err
	case "intent.ratios":
		var cs []intent.Constraint
		for _, f := range strings.Fields(c.Classes) {
			p, n, _ := strings.Cut(f, "=")
			k, _ := strconv.Atoi(n)
			for range k {
				cs = append(cs, intent.Constraint{Priority: p})
			}
		}
		r, err := judged(c, readers, intent.RatiosReader(cs, c.Quoted))
		var out []string
		for _, p := range []string{"mandatory", "important", "optional"} {
			if v, ok := r[p]; ok {
				out = append(out, fmt.Sprintf("%s=%d/%d", p, v[0], v[1]))
			}
		}
		return strings.Join(out, " "), err
	case "cfaith.choice":
		// An answer reader, called by the suite on the model's answer.
		return cfaith.ReadChoice(c.Reply)
	case "cfaith.answer-letter", "cfaith.answer-truefalse":
		// --answer-format labels: the answer held to {"answer": LABEL}.
		labels := cfaith.ChoiceLetters
		if c.Reader == "cfaith.answer-truefalse" {
			labels = cfaith.TrueFalseLabels
		}
		l, ok := cfaith.ParseAnswerLabel(c.Reply, labels)
		if !ok {
			return "", fmt.Errorf("no label")
		}
		return l, nil
	case "cfaith.truefalse":
		v, ok := cfaith.ParseTrueFalse(c.Reply)
		if !ok {
			return "", fmt.Errorf("no judgement")
		}
		return fmt.Sprint(v), nil
	case "cfaith.verify":
		v, err := judged(c, readers, judging.TextReader(cfaith.VerifyReader(c.Lang, c.Check)))
		return v.Verdict, err
	case "cfaith.label":
		format := judging.FormatText
		if c.JSON {
			format = judging.FormatJSON
		}
		// The labelling agent is asked through JudgeAs without a schema
		// (its format is read by LabelReader): Read sees text mode.
		lc := c
		lc.JSON = false
		return judged(lc, readers, judging.TextReader(cfaith.LabelReader(c.Lang, format)))
	case "cfaith.halu-answers":
		v, err := judged(c, readers, judging.TextReader(cfaith.HaluAnswersReader(judging.FormatText, 3)))
		return strings.Join(v, " | "), err
	case "cfaith.corrector":
		// Check names the part corrected: qa, halu, or a label's type.
		part := cfaith.LabelPart(c.Check)
		switch c.Check {
		case "qa":
			part = cfaith.QAPart
		case "halu":
			part = cfaith.HaluPart
		}
		rs, err := cfaith.BuiltinRules(c.Lang, "original")
		if err != nil {
			return "", err
		}
		out, err := judged(c, readers, judging.TextReader(cfaith.CorrectionReader(c.Lang, rs, part, "t")))
		switch {
		case err != nil:
			return "", err
		case part == cfaith.QAPart:
			return strings.Join(out.QARules, " | "), nil
		case part == cfaith.HaluPart:
			return strings.Join(out.HaluRules, " | "), nil
		}
		return out.LabelDefs[c.Check], nil
	case "cfaith.conflict":
		v, err := judged(c, readers, cfaith.ConflictReader(c.Lang, c.Quoted))
		if v.Conflict {
			return "conflict", err
		}
		return "no conflict", err
	case "smoke.verdict":
		v, err := judged(c, readers, smoke.VerdictReader(c.Quoted))
		return fmt.Sprintf("%d/%s", v.Score, yn(v.Hallucination)), err
	}
	return "", fmt.Errorf("unknown reader %q", c.Reader)
}

// TestReplyCorpus reads the hand-written replies in testdata/replies the
// way a run reads them — judge replies through judging.Read with each
// suite's own Reader, answers through the suite's answer readers — and
// fails on any wrong value accepted under halu's readers (the default): a
// value other than the one a careful human reads, or any value where the
// human reads none. A clear verdict rejected (unscored, counted) is
// reported, not failed: it costs a judgement, never a wrong number. The
// same replies read by the authors' rule are counted beside.
func TestReplyCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "replies", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	type tally struct{ n, right, rejectedClear, wrong, paperRight, paperUnread, paperWrong int }
	by := map[string]*tally{}
	byKind := map[string]*tally{}
	total := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cases []replyCase
		if err := yaml.Unmarshal(b, &cases); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i, c := range cases {
			if c.Reader == "" || c.Want == "" || c.Style == "" {
				t.Fatalf("%s: case %d lacks reader, style or want", f, i+1)
			}
			suite, _, _ := strings.Cut(c.Reader, ".")
			tl := by[suite]
			if tl == nil {
				tl = &tally{}
				by[suite] = tl
			}
			kind := c.Kind
			if kind == "" {
				kind = "other"
			}
			kl := byKind[kind]
			if kl == nil {
				kl = &tally{}
				byKind[kind] = kl
			}
			count := func(f func(*tally)) { f(tl); f(kl) }
			count(func(t *tally) { t.n++ })
			total++
			got, err := readReply(c, judging.ReadersHalu)
			switch {
			case right(c.Want, got, err):
				count(func(t *tally) { t.right++ })
			case err != nil && c.Want != "two values" && c.Want != "reject":
				count(func(t *tally) { t.rejectedClear++ })
				t.Logf("%s #%d %s (%s): clear verdict %q rejected: %v", filepath.Base(f), i+1, c.Reader, c.Style, c.Want, err)
			default:
				count(func(t *tally) { t.wrong++ })
				t.Errorf("%s #%d %s (%s): WRONG VALUE ACCEPTED: read %q (%v), a careful human reads %q\nreply: %q", filepath.Base(f), i+1, c.Reader, c.Style, got, err, c.Want, c.Reply)
			}
			got, err = readReply(c, judging.ReadersPaper)
			switch {
			case right(c.Want, got, err):
				count(func(t *tally) { t.paperRight++ })
			case err != nil && c.Want != "two values" && c.Want != "reject":
				count(func(t *tally) { t.paperUnread++ })
			default:
				count(func(t *tally) { t.paperWrong++ })
			}
		}
	}
	if total < 300 {
		t.Errorf("corpus has %d replies, want at least 300", total)
	}
	suites := make([]string, 0, len(by))
	for s := range by {
		suites = append(suites, s)
	}
	sort.Strings(suites)
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n| suite | replies | halu: right | halu: clear verdict unscored | halu: wrong value | authors' rule: right | unscored | wrong |\n|---|---|---|---|---|---|---|---|\n")
	for _, s := range suites {
		tl := by[s]
		fmt.Fprintf(&sb, "| %s | %d | %d | %d | %d | %d | %d | %d |\n", s, tl.n, tl.right, tl.rejectedClear, tl.wrong, tl.paperRight, tl.paperUnread, tl.paperWrong)
	}
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Fprintf(&sb, "\n| kind | replies | halu: right | halu: clear verdict unscored | halu: wrong value | authors' rule: right | unscored | wrong |\n|---|---|---|---|---|---|---|---|\n")
	clear, unscored := 0, 0
	for _, k := range kinds {
		tl := byKind[k]
		fmt.Fprintf(&sb, "| %s | %d | %d | %d | %d | %d | %d | %d |\n", k, tl.n, tl.right, tl.rejectedClear, tl.wrong, tl.paperRight, tl.paperUnread, tl.paperWrong)
		if longTail[k] {
			clear += tl.n
			unscored += tl.rejectedClear
		}
	}
	t.Log(sb.String())
	fmt.Print(sb.String())
	// The long tail of clear replies is read: at most 10% of them unscored.
	if clear == 0 || float64(unscored) > 0.10*float64(clear) {
		t.Errorf("%d of the %d replies of the long tail (tables, number words, languages, typo corrections, rubrics) unscored, want at most 10%%", unscored, clear)
	}
}

// longTail are the kinds of clear replies that were read rarely: tables,
// number words, languages, corrections that name no field, rubrics.
var longTail = map[string]bool{"table": true, "number-words": true, "languages": true, "typo": true, "rubric": true}

// right reports whether a reading matches what a careful human reads:
// want's value read; "reject" read as nothing; "two values" read as
// nothing because the reply states two (judging.ErrTwoValues).
func right(want, got string, err error) bool {
	switch want {
	case "reject":
		return err != nil
	case "two values":
		return errors.Is(err, judging.ErrTwoValues)
	}
	return err == nil && got == want
}
