package cfaith

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"

	"halu/runner/engine"
	"halu/runner/judging"
	"halu/runner/rundir"
)

// Round is one row of Table 3: the validation pass rates of the prompt kept
// after that round (round 0: the starting prompt).
type Round struct {
	Iteration  int     `json:"iteration"`
	Rates      Rates   `json:"rates"`
	Candidates []Rates `json:"candidates,omitempty"`
	// Revised names the part each candidate revised.
	Revised []Part  `json:"revised,omitempty"`
	Rules   RuleSet `json:"rules"`
	// Stopped is true on the round whose best candidate did worse than the
	// prompt before it: the loop ends and keeps the earlier prompt.
	Stopped bool `json:"stopped,omitempty"`
	// NoCandidate is true when no proposal of the round parsed.
	NoCandidate bool `json:"no_candidate,omitempty"`
}

// Candidate is one proposal of the optimisation agent: the current rule
// set with one part revised.
type Candidate struct {
	Part  Part
	Rules RuleSet
}

// Loop is prompt optimisation (§3.2) with its steps supplied: Validate
// measures a rule set on the validation documents, Train generates and
// verifies on the training documents with the current rule set, Propose
// asks the optimisation agent for candidates from the verifier's feedback
// on those.
type Loop struct {
	Rounds   int
	Validate func(ctx context.Context, round, cand int, rs RuleSet) (Rates, error)
	Train    func(ctx context.Context, round int, rs RuleSet) ([]DocResult, error)
	Propose  func(ctx context.Context, round int, rs RuleSet, training []DocResult) ([]Candidate, error)
}

// Run optimises from start. Each round generates on the training documents
// with the current prompt, feeds the verifier's errors to the optimisation
// agent, and measures every candidate on the validation documents; the
// best candidate (by overall pass rate, ties to the earlier candidate)
// becomes the current prompt. The loop stops after Rounds rounds, as soon
// as a round's best candidate is worse than the current prompt (that round
// is still reported), or when no proposal of a round parses; it returns the
// best prompt seen.
func (l Loop) Run(ctx context.Context, start RuleSet) (RuleSet, []Round, error) {
	cur := start
	rates, err := l.Validate(ctx, 0, 0, cur)
	if err != nil {
		return cur, nil, err
	}
	rounds := []Round{{Iteration: 0, Rates: rates, Rules: cur}}
	for r := 1; r <= l.Rounds; r++ {
		training, err := l.Train(ctx, r, cur)
		if err != nil {
			return cur, rounds, err
		}
		cands, err := l.Propose(ctx, r, cur, training)
		if err != nil {
			return cur, rounds, err
		}
		row := Round{Iteration: r}
		if len(cands) == 0 {
			// No proposal parsed (each was retried, then recorded as a
			// failure): nothing to compare, so the loop ends here.
			row.Rates, row.Rules, row.Stopped, row.NoCandidate = rates, cur, true, true
			return cur, append(rounds, row), nil
		}
		best := -1
		var bestRates Rates
		for i, c := range cands {
			cr, err := l.Validate(ctx, r, i+1, c.Rules)
			if err != nil {
				return cur, rounds, err
			}
			row.Candidates = append(row.Candidates, cr)
			row.Revised = append(row.Revised, c.Part)
			if best < 0 || cr.Overall > bestRates.Overall {
				best, bestRates = i, cr
			}
		}
		row.Rates, row.Rules = bestRates, cands[best].Rules
		if bestRates.Overall < rates.Overall {
			row.Stopped = true
			rounds = append(rounds, row)
			return cur, rounds, nil
		}
		cur, rates = cands[best].Rules, bestRates
		rounds = append(rounds, row)
	}
	return cur, rounds, nil
}

// Split samples the training and validation documents with the seed: the
// paper uses 60 and 20. With fewer documents, a quarter (at least one) go
// to validation and the rest to training.
func Split(docs []Doc, train, val int, seed uint64) (trainIDs, valIDs []string) {
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	sort.Strings(ids)
	rand.New(rand.NewPCG(seed, 0x6f7074)).Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	if train+val > len(ids) {
		val = max(1, len(ids)/4)
		train = len(ids) - val
	}
	return ids[val : val+train], ids[:val]
}

// Part names the component of a rule set one optimisation proposal
// revises: "qa_rules", "halu_rules", or "label_definitions.TYPE". Each
// check of the verification module blames one part: a failed correctness
// check the question rules, a failed hallucination check the response
// rules, a failed label check the definition of that label.
type Part string

// The rule groups a proposal can revise besides one label definition.
const (
	QAPart   Part = "qa_rules"
	HaluPart Part = "halu_rules"
)

// LabelPart is the part holding a type's label definition.
func LabelPart(typ string) Part { return Part("label_definitions." + typ) }

// labelType is the type whose definition p is, or "".
func (p Part) labelType() string {
	t, ok := strings.CutPrefix(string(p), "label_definitions.")
	if !ok {
		return ""
	}
	return t
}

// Current is p's text in rs, as the optimisation prompt shows it.
func (p Part) Current(rs RuleSet) string {
	switch p {
	case QAPart:
		return numbered(rs.QARules)
	case HaluPart:
		return numbered(rs.HaluRules)
	}
	return rs.LabelDefs[p.labelType()]
}

// schema is the structured output a proposal for p must follow: the four
// rules of a group, or one definition. Lengths are capped so that a small
// model's proposal ends within its token budget (the longest rule of the
// paper's Figure 7 in English is 354 characters, its longest definition
// 573).
func (p Part) schema() string {
	if p.labelType() != "" {
		return `{"type":"object","properties":{"definition":{"type":"string","minLength":1,"maxLength":600}},"required":["definition"]}`
	}
	return `{"type":"object","properties":{"rules":{"type":"array","minItems":4,"maxItems":4,"items":{"type":"string","minLength":1,"maxLength":400}}},"required":["rules"]}`
}

// Apply reads an optimisation agent's reply revising p and returns rs with
// that part replaced, named name: JSON {"rules": [four rules]} for a rule
// group, {"definition": "..."} for a label. Whitespace runs become single
// spaces, as every rule is one line of the prompt.
func (p Part) Apply(rs RuleSet, reply, name string) (RuleSet, error) {
	one := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	out := RuleSet{Name: name, QARules: rs.QARules, HaluRules: rs.HaluRules, LabelDefs: map[string]string{}}
	for k, d := range rs.LabelDefs {
		out.LabelDefs[k] = d
	}
	if t := p.labelType(); t != "" {
		if !knownType(t) {
			return rs, fmt.Errorf("unknown rule part %q", p)
		}
		var v struct {
			Definition string `json:"definition"`
		}
		if err := judging.DecodeJSON(reply, &v); err != nil {
			return rs, err
		}
		out.LabelDefs[t] = one(v.Definition)
		return out, out.Validate()
	}
	var v struct {
		Rules []string `json:"rules"`
	}
	if err := judging.DecodeJSON(reply, &v); err != nil {
		return rs, err
	}
	var rules []string
	for _, r := range v.Rules {
		rules = append(rules, one(r))
	}
	switch p {
	case QAPart:
		out.QARules = rules
	case HaluPart:
		out.HaluRules = rules
	default:
		return rs, fmt.Errorf("unknown rule part %q", p)
	}
	return out, out.Validate()
}

// ParseRuleSet reads a whole rule set from JSON (a --rules file): four
// question rules, four response rules and a definition per type, each on
// one line.
func ParseRuleSet(reply, name string) (RuleSet, error) {
	var rs RuleSet
	if err := judging.DecodeJSON(reply, &rs); err != nil {
		return rs, err
	}
	rs.Name = name
	return rs, rs.Validate()
}

// failure is one failed or uncertain check with what it blames: its
// question, the response checked ("" for the correctness check) and the
// verdict.
type failure struct {
	part    Part
	line    string
	qa      QA
	mode    string // the type the question was written for
	text    string
	verdict Verdict
}

func failures(docs []DocResult) []failure {
	var out []failure
	add := func(p Part, what string, v *Verdict, q Question, text string) {
		if v == nil || v.Verdict == Pass {
			return
		}
		l := fmt.Sprintf("- %s (%s) — question: %s", what, v.Verdict, q.QA.Question)
		if text != "" {
			l += " — response: " + text
		}
		out = append(out, failure{part: p, line: l + " — reason: " + v.Reason, qa: q.QA, mode: q.Mode, text: text, verdict: *v})
	}
	for _, d := range docs {
		for _, q := range d.Questions {
			add(QAPart, "correctness check", q.Correct, q, "")
			for _, r := range q.Responses {
				add(HaluPart, "hallucination check", r.Halu, q, r.Text)
				add(LabelPart(r.Label), "label check "+r.Label, r.Type, q, r.Text)
			}
		}
	}
	return out
}

// Targets are the parts n proposals revise: the parts blamed by the most
// failed checks first (ties: question rules, response rules, then labels
// in Types order), cycling when there are fewer blamed parts than
// proposals. With no failure at all, the parts in that fixed order over
// the build's types.
func Targets(docs []DocResult, types []string, n int) []Part {
	order := []Part{QAPart, HaluPart}
	for _, t := range Types {
		order = append(order, LabelPart(t))
	}
	rank := map[Part]int{}
	for i, p := range order {
		rank[p] = i
	}
	count := map[Part]int{}
	for _, f := range failures(docs) {
		count[f.part]++
	}
	var blamed []Part
	for p := range count {
		if _, ok := rank[p]; ok {
			blamed = append(blamed, p)
		}
	}
	sort.Slice(blamed, func(i, j int) bool {
		if count[blamed[i]] != count[blamed[j]] {
			return count[blamed[i]] > count[blamed[j]]
		}
		return rank[blamed[i]] < rank[blamed[j]]
	})
	if len(blamed) == 0 {
		blamed = []Part{QAPart, HaluPart}
		for _, t := range types {
			blamed = append(blamed, LabelPart(t))
		}
	}
	out := make([]Part, n)
	for k := range out {
		out[k] = blamed[k%len(blamed)]
	}
	return out
}

// Feedback is the verifier's error feedback that blames part: every failed
// or uncertain check with its reason, at most limit lines.
func Feedback(docs []DocResult, part Part, limit int) string {
	var lines []string
	for _, f := range failures(docs) {
		if f.part == part && len(lines) < limit {
			lines = append(lines, f.line)
		}
	}
	if len(lines) == 0 {
		return "(no failed check)"
	}
	return strings.Join(lines, "\n")
}

// Optimizer wires the loop to the engine: builds run as engine runs under
// dir (so they are cached, resumable and recorded), and the optimisation
// agent is asked through the engine's calls.
type Optimizer struct {
	Engine     *engine.Engine
	Base       BuildConfig
	Dir        string
	Train, Val []string
	Candidates int
	Optimizer  string // the optimisation agent's model (default: the agent)
}

func (o Optimizer) build(ctx context.Context, dir string, rs RuleSet, docs []string) ([]DocResult, error) {
	cfg := o.Base
	cfg.Rules, cfg.OnlyDocs, cfg.EmbedModel = rs, docs, ""
	b, err := NewBuilder(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := RunOrResume(ctx, o.Engine, b.Task(), dir, &cfg); err != nil {
		return nil, err
	}
	_, recs, err := engine.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	return decodeDocs(recs)
}

// RunOrResume runs s into dir, or resumes the run already there: a
// construction that was interrupted picks up where it stopped.
func RunOrResume(ctx context.Context, e *engine.Engine, s engine.Suite, dir string, cfg any) (*engine.Result, error) {
	return e.Run(ctx, s, engine.RunSpec{Dir: dir, Resume: rundir.Exists(dir), Config: cfg})
}

// Loop returns the optimisation loop over this optimizer's runs. Each
// candidate revises one part (see Targets): a proposal the agent can write
// within a small model's token budget, and one whose effect on the
// validation rate is attributable.
func (o Optimizer) Loop(rounds int) Loop {
	model := o.Optimizer
	if model == "" {
		model = o.Base.Agent
	}
	return Loop{
		Rounds: rounds,
		Validate: func(ctx context.Context, round, cand int, rs RuleSet) (Rates, error) {
			docs, err := o.build(ctx, filepath.Join(o.Dir, fmt.Sprintf("round%d-candidate%d-validation", round, cand)), rs, o.Val)
			return PassRates(docs), err
		},
		Train: func(ctx context.Context, round int, rs RuleSet) ([]DocResult, error) {
			return o.build(ctx, filepath.Join(o.Dir, fmt.Sprintf("round%d-training", round)), rs, o.Train)
		},
		Propose: func(ctx context.Context, round int, rs RuleSet, training []DocResult) ([]Candidate, error) {
			return o.propose(ctx, filepath.Join(o.Dir, fmt.Sprintf("round%d-proposals", round)), model, round, rs, training)
		},
	}
}
