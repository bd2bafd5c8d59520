package judging_test

import (
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
	Style  string `yaml:"style"`
	Lang   string `yaml:"lang"`
	Check  string `yaml:"check"` // cfaith verifier: correct, halu, type
	Task   string `yaml:"task"`  // hypo: chem-gene, dis-gene, gene-gene
	N      int    `yaml:"n"`     // intent scoring: constraints
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
}

// readReply runs the reader a case names and renders what it read in the
// corpus's notation; err is a rejection.
func readReply(c replyCase) (string, error) {
	yn := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	switch c.Reader {
	case "cfaith.choice", "cfaith.truefalse", "hypo.hypothesis", "ideas.final-idea", "hic.dhp-split":
		// Answer readers: they read a model's answer as it came.
	default:
		// Judge readers see what the engine hands them (judging.JudgeWith).
		c.Reply = judging.Clean(c.Reply, c.Quoted)
	}
	if c.Cut {
		c.Reply = judging.DropCutWord(c.Reply)
	}
	switch c.Reader {
	case "hic.verdict":
		v, err := hic.ParseVerdictText(c.Reply)
		return fmt.Sprintf("%d/%d/%d/%s", v.Originality, v.Feasibility, v.Value, yn(v.Hallucination)), err
	case "ideas.critic":
		v, err := ideas.ParseCriticText(c.Reply)
		return fmt.Sprintf("%d/%d/%d", v.Originality, v.Feasibility, v.Clarity), err
	case "ideas.fluency":
		return ideas.ReadFluency(c.Reply)
	case "ideas.final-idea":
		// halu's extraction (--final-idea all): the idea after a marker
		// line; prose that mentions a "final idea" is never cut.
		idea, _ := ideas.ExtractIdeaLine(c.Reply)
		return idea, nil
	case "hic.dhp-split":
		// The authors' DHP split: answers at blank lines.
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
		v, err := hypo.ParseGroundness(c.Reply)
		if err != nil {
			return "", err
		}
		return fmt.Sprint(*v.Groundness), nil
	case "intent.missing":
		v, err := intent.ParseMissingText(c.Reply)
		return yn(v.MentionsMissing) + "/" + yn(v.InventsMissing) + "/" + yn(v.OnTask), err
	case "intent.fact":
		v, err := intent.ParseFactText(c.Reply)
		return yn(v.FactualInaccuracies) + "/" + yn(v.MissingRequiredFacts), err
	case "intent.baseline":
		v, err := intent.ParseBaselineText(c.Reply)
		return fmt.Sprint(v.Score), err
	case "intent.score":
		v, err := intent.ParseScoreText(c.Reply, c.N)
		var out []string
		for _, b := range v {
			out = append(out, yn(b))
		}
		return strings.Join(out, ","), err
	case "intent.mapping":
		m, err := intent.ParseMapping(c.Reply, c.Clarify)
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
		r, err := intent.ParseRatios(c.Reply, cs)
		var out []string
		for _, p := range []string{"mandatory", "important", "optional"} {
			if v, ok := r[p]; ok {
				out = append(out, fmt.Sprintf("%s=%d/%d", p, v[0], v[1]))
			}
		}
		return strings.Join(out, " "), err
	case "cfaith.choice":
		l, ok := cfaith.ParseChoice(c.Reply)
		if !ok {
			return "", fmt.Errorf("no choice")
		}
		return l, nil
	case "cfaith.truefalse":
		v, ok := cfaith.ParseTrueFalse(c.Reply)
		if !ok {
			return "", fmt.Errorf("no judgement")
		}
		return fmt.Sprint(v), nil
	case "cfaith.verify":
		v, err := cfaith.ParseVerdict(c.Lang, c.Check, c.Reply)
		return v.Verdict, err
	case "cfaith.halu-answers":
		v, err := cfaith.ParseHaluAnswers(c.Reply, 3)
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
		out, err := part.ReadCorrection(c.Lang, rs, judging.Clean(c.Reply), "t")
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
		v, err := cfaith.ParseConflict(c.Lang, c.Reply)
		if v.Conflict {
			return "conflict", err
		}
		return "no conflict", err
	case "smoke.verdict":
		v, err := smoke.ParseVerdict(c.Reply)
		return fmt.Sprintf("%d/%s", v.Score, yn(v.Hallucination)), err
	}
	return "", fmt.Errorf("unknown reader %q", c.Reader)
}

// TestReplyCorpus runs every reader over the hand-written replies in
// testdata/replies and fails on any wrong value accepted: a value other
// than the one a careful human reads, or any value where the human reads
// none. A clear verdict rejected (unscored, counted) is reported, not
// failed: it costs a judgement, never a wrong number.
func TestReplyCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "replies", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	type tally struct{ n, right, rejectedClear, wrong int }
	by := map[string]*tally{}
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
			tl.n++
			total++
			got, err := readReply(c)
			switch {
			case err != nil && c.Want == "reject", err == nil && got == c.Want:
				tl.right++
			case err != nil:
				tl.rejectedClear++
				t.Logf("%s #%d %s (%s): clear verdict %q rejected: %v", filepath.Base(f), i+1, c.Reader, c.Style, c.Want, err)
			default:
				tl.wrong++
				t.Errorf("%s #%d %s (%s): WRONG VALUE ACCEPTED: read %q, a careful human reads %q\nreply: %q", filepath.Base(f), i+1, c.Reader, c.Style, got, c.Want, c.Reply)
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
	fmt.Fprintf(&sb, "\n| suite | replies | read right | rejected clear | wrong value accepted |\n|---|---|---|---|---|\n")
	for _, s := range suites {
		tl := by[s]
		fmt.Fprintf(&sb, "| %s | %d | %d | %d | %d |\n", s, tl.n, tl.right, tl.rejectedClear, tl.wrong)
	}
	t.Log(sb.String())
	fmt.Print(sb.String())
}
