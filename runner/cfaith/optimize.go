package cfaith

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"halu/localmodels"
	"halu/runner"
)

// Round is one row of Table 3: the validation pass rates of the prompt kept
// after that round (round 0: the starting prompt).
type Round struct {
	Iteration  int     `json:"iteration"`
	Rates      Rates   `json:"rates"`
	Candidates []Rates `json:"candidates,omitempty"`
	Rules      RuleSet `json:"rules"`
	// Stopped is true on the round whose best candidate did worse than the
	// prompt before it: the loop ends and keeps the earlier prompt.
	Stopped bool `json:"stopped,omitempty"`
	// NoCandidate is true when no proposal of the round parsed.
	NoCandidate bool `json:"no_candidate,omitempty"`
}

// Loop is prompt optimisation (§3.2) with its steps supplied: Validate
// measures a rule set on the validation documents, Feedback gathers the
// verifier's error feedback on the training documents, Propose asks the
// optimisation agent for candidate rule sets.
type Loop struct {
	Rounds   int
	Validate func(ctx context.Context, round, cand int, rs RuleSet) (Rates, error)
	Feedback func(ctx context.Context, round int, rs RuleSet) (string, error)
	Propose  func(ctx context.Context, round int, rs RuleSet, feedback string) ([]RuleSet, error)
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
		fb, err := l.Feedback(ctx, r, cur)
		if err != nil {
			return cur, rounds, err
		}
		cands, err := l.Propose(ctx, r, cur, fb)
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
			cr, err := l.Validate(ctx, r, i+1, c)
			if err != nil {
				return cur, rounds, err
			}
			row.Candidates = append(row.Candidates, cr)
			if best < 0 || cr.Overall > bestRates.Overall {
				best, bestRates = i, cr
			}
		}
		row.Rates, row.Rules = bestRates, cands[best]
		if bestRates.Overall < rates.Overall {
			row.Stopped = true
			rounds = append(rounds, row)
			return cur, rounds, nil
		}
		cur, rates = cands[best], bestRates
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

func ruleSetSchema() string {
	var defs []string
	var req []string
	for _, t := range Types {
		defs = append(defs, fmt.Sprintf(`"%s":{"type":"string","minLength":1,"maxLength":600}`, t))
		req = append(req, `"`+t+`"`)
	}
	four := `{"type":"array","minItems":4,"maxItems":4,"items":{"type":"string","minLength":1,"maxLength":400}}`
	return `{"type":"object","properties":{"qa_rules":` + four + `,"halu_rules":` + four +
		`,"label_definitions":{"type":"object","properties":{` + strings.Join(defs, ",") + `},"required":[` + strings.Join(req, ",") + `]}},` +
		`"required":["qa_rules","halu_rules","label_definitions"]}`
}

// ParseRuleSet reads an optimisation agent's reply: JSON with four
// question rules, four response rules and a definition per type, each on
// one line.
func ParseRuleSet(reply, name string) (RuleSet, error) {
	var rs RuleSet
	if err := runner.DecodeJSON(reply, &rs); err != nil {
		return rs, err
	}
	rs.Name = name
	for i := range rs.QARules {
		rs.QARules[i] = strings.Join(strings.Fields(rs.QARules[i]), " ")
	}
	for i := range rs.HaluRules {
		rs.HaluRules[i] = strings.Join(strings.Fields(rs.HaluRules[i]), " ")
	}
	for k, v := range rs.LabelDefs {
		rs.LabelDefs[k] = strings.Join(strings.Fields(v), " ")
	}
	return rs, rs.Validate()
}

// Feedback is the verifier's error feedback on documents' records: every
// failed or uncertain check with its reason, at most limit lines.
func Feedback(docs []DocResult, limit int) string {
	var lines []string
	add := func(what string, v *Verdict, q QA, text string) {
		if v == nil || v.Verdict == Pass || len(lines) >= limit {
			return
		}
		l := fmt.Sprintf("- %s (%s) — question: %s", what, v.Verdict, q.Question)
		if text != "" {
			l += " — response: " + text
		}
		lines = append(lines, l+" — reason: "+v.Reason)
	}
	for _, d := range docs {
		for _, q := range d.Questions {
			add("correctness check", q.Correct, q.QA, "")
			for _, r := range q.Responses {
				add("hallucination check", r.Halu, q.QA, r.Text)
				add("label check "+r.Label, r.Type, q.QA, r.Text)
			}
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
	Engine     *runner.Engine
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
	if _, err := RunOrResume(ctx, o.Engine, b, dir, cfg); err != nil {
		return nil, err
	}
	_, recs, err := runner.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	return decodeDocs(recs)
}

// RunOrResume runs s into dir, or resumes the run already there: a
// construction that was interrupted picks up where it stopped.
func RunOrResume(ctx context.Context, e *runner.Engine, s runner.Suite, dir string, cfg any) (*runner.Result, error) {
	_, err := os.Stat(filepath.Join(dir, "manifest.json"))
	return e.Run(ctx, s, runner.RunSpec{Dir: dir, Resume: err == nil, Config: cfg})
}

// Loop returns the optimisation loop over this optimizer's runs.
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
		Feedback: func(ctx context.Context, round int, rs RuleSet) (string, error) {
			docs, err := o.build(ctx, filepath.Join(o.Dir, fmt.Sprintf("round%d-training", round)), rs, o.Train)
			return Feedback(docs, 40), err
		},
		Propose: func(ctx context.Context, round int, rs RuleSet, fb string) ([]RuleSet, error) {
			c := o.Engine.NewCalls(fmt.Sprintf("optimize/round%d", round))
			var out []RuleSet
			for k := 0; k < o.Candidates; k++ {
				req := localmodels.ChatRequest{Model: model,
					Messages: []localmodels.Message{{Role: "user", Content: OptimizerPrompt(o.Base.Lang, rs, fb)}},
					Options: localmodels.Options{Temperature: localmodels.Float(0.7), TopP: localmodels.Float(0.7), Seed: localmodels.Int(o.Base.Seed + k),
						NumPredict: localmodels.Int(2048)},
					Format: json.RawMessage(ruleSetSchema()),
				}
				name := fmt.Sprintf("round%d-candidate%d", round, k+1)
				cand, ok, err := runner.JudgeAs(ctx, c, "optimize", req, nil, func(raw string) (RuleSet, error) { return ParseRuleSet(raw, name) })
				if err != nil {
					return nil, err
				}
				if ok {
					out = append(out, cand)
				}
			}
			return out, nil
		},
	}
}
