// Package hic is the HIC-Bench suite (Yang et al., "Heaven-Sent or
// Hell-Bent? Benchmarking the Intelligence and Defectiveness of LLM
// Hallucinations"): models answer the 100 open-ended CDID innovation
// questions under a prompt strategy (SCP, CoT, RAG, RCP, DHP, RCP+DHP), a
// panel of local judges scores each answer's Originality, Feasibility and
// Value (1–5) and says whether it hallucinates, and the answers are sorted
// into Intelligent (IH) and Defective (DH) Hallucinations and summarised by
// the Intelligent-Fidelity Score (IFS, eq. 3).
package hic

import (
	"bytes"
	"context"
	"embed"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"halu/localmodels"
	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/hic/hicjudge"
	"halu/runner/judging"
	"halu/runner/rundir"
	"halu/runner/setting"
)

//go:embed data/CDID.csv prompts/*.txt
var assets embed.FS

// Question is one CDID item.
type Question struct {
	ID        int    `json:"id"`
	Field     string `json:"field"`
	Question  string `json:"question"`
	Principle string `json:"principle"`
	Knowledge string `json:"knowledge"`
}

// LoadQuestions reads a CDID-format CSV (ID, Field, Question, Principle,
// Challenge, Knowledge Base, Source); path "" reads the bundled dataset.
// A question that is not text, an ID twice or a file without questions is
// an rundir.InputError naming the line.
func LoadQuestions(path string) ([]Question, error) {
	var b []byte
	var err error
	name := path
	if path == "" {
		name = "CDID.csv (bundled)"
		b, err = assets.ReadFile("data/CDID.csv")
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("hic dataset: %w", err)
	}
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(b, []byte("\ufeff"))))
	r.FieldsPerRecord = -1 // a short row is named below, by its line
	header, err := r.Read()
	if err != nil {
		return nil, rundir.BadInput(name, 1, "header: %v", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	for _, need := range []string{"ID", "Field", "Question", "Principle", "Knowledge Base"} {
		if _, ok := col[need]; !ok {
			return nil, rundir.BadInput(name, 1, "no %q column", need)
		}
	}
	var out []Question
	seen := rundir.IDs{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		line := csvLine(r, err)
		if err != nil {
			return nil, rundir.BadInput(name, line, "%v", err)
		}
		if len(rec) < len(header) {
			return nil, rundir.BadInput(name, line, "%d fields, the header has %d", len(rec), len(header))
		}
		id, err := strconv.Atoi(strings.TrimSpace(rec[col["ID"]]))
		if err != nil || id < 0 {
			return nil, rundir.BadInput(name, line, "ID %q is not a number", rec[col["ID"]])
		}
		if err := seen.Add(name, line, "question ID", strconv.Itoa(id)); err != nil {
			return nil, err
		}
		q := Question{ID: id, Field: rec[col["Field"]], Question: rec[col["Question"]],
			Principle: rec[col["Principle"]], Knowledge: rec[col["Knowledge Base"]]}
		if err := rundir.CheckText("question", q.Question); err != nil {
			return nil, rundir.BadInput(name, line, "%v", err)
		}
		out = append(out, q)
	}
	if len(out) == 0 {
		return nil, rundir.BadInput(name, 0, "no questions")
	}
	return out, nil
}

// HIC-Bench's judge (package hicjudge), by the names hic's records and
// summaries use.
type (
	Verdict   = hicjudge.Verdict
	Judgement = hicjudge.Judgement
)

// JudgeStage is the stage of the judges' calls.
const JudgeStage = hicjudge.Stage

// Strategies are the prompt strategies, as the paper names them.
var Strategies = []string{"scp", "cot", "rag", "rcp", "dhp", "rcp+dhp"}

func prompt(name string) string { return engine.Embedded(assets, "prompts/"+name+".txt") }

// Templates returns the prompt templates by name, as shipped.
func Templates() map[string]string {
	out := map[string]string{}
	for _, n := range []string{"scp_prompt", "cot_prompt", "rag_prompt", "rcp_prompt", "dhp_prompt",
		"dhp_positive_example", "dhp_negative_example"} {
		out[n] = prompt(n)
	}
	for n, t := range hicjudge.Templates() {
		out[n] = t
	}
	return out
}

// Examples are DHP's dynamic examples (paper Algorithm 1).
type Examples struct {
	Positive string `json:"positive,omitempty"` // the answer text
	Negative string `json:"negative,omitempty"`
}

// RenderPrompt renders the generation prompt of a strategy for a question.
// RAG inserts the CDKB knowledge text (the paper) or, with ragSource
// "principle", the short principle (the authors' code). DHP is the authors'
// DHP prompt with the current examples; RCP+DHP is the RCP prompt with the
// same example blocks placed before its "Question:" line (the authors' code
// has no RCP+DHP prompt; this is halu's composition of the two).
func RenderPrompt(strategy string, q Question, ex Examples, ragSource string) (string, error) {
	examples := ""
	if ex.Positive != "" {
		examples += engine.Fill(prompt("dhp_positive_example"), map[string]string{"answer": ex.Positive})
	}
	neg := ""
	if ex.Negative != "" {
		neg = engine.Fill(prompt("dhp_negative_example"), map[string]string{"answer": ex.Negative})
	}
	vals := map[string]string{"field": q.Field, "question": q.Question}
	switch strategy {
	case "scp", "cot", "rcp":
		return engine.Fill(prompt(strategy+"_prompt"), vals), nil
	case "rag":
		vals["principle"] = q.Knowledge
		if ragSource == "principle" {
			vals["principle"] = q.Principle
		}
		return engine.Fill(prompt("rag_prompt"), vals), nil
	case "dhp":
		vals["positive"], vals["negative"] = examples, neg
		return engine.Fill(prompt("dhp_prompt"), vals), nil
	case "rcp+dhp":
		p := engine.Fill(prompt("rcp_prompt"), vals)
		i := strings.LastIndex(p, "\nQuestion: ")
		if i < 0 {
			return "", errors.New("rcp prompt has no Question line")
		}
		return p[:i+1] + examples + neg + p[i+1:], nil
	}
	return "", fmt.Errorf("unknown strategy %q (want one of %s)", strategy, strings.Join(Strategies, ", "))
}

// Config is the suite's settings (declared in Settings).
type Config struct {
	Models []string
	Judges []string
	// Protocol is setting.ProtocolPaper (the default) or
	// setting.ProtocolHalu (structured judges, DHP answers sampled apart).
	Protocol     string
	Strategies   []string
	Answers      int
	Temperatures []float64
	// Questions filters by ID or domain (Field); empty keeps all 100.
	Questions []string
	// Limit keeps a seeded sample of that many of the questions kept,
	// each domain keeping its share (0: all).
	Limit     int
	Seed      int
	MaxTokens int
	// JudgeFormat is "text" (the paper's one-line format, the default) or
	// "json" (structured output).
	JudgeFormat    string
	JudgeMaxTokens int
	// TieHallucinated decides a panel tie on the hallucination verdict.
	TieHallucinated bool
	// RAGSource is "knowledge" (the CDKB text, as the paper) or "principle"
	// (the short principle, as the authors' code).
	RAGSource string
	// DHPAnswers is how a DHP question gets its answers: "split" (the
	// authors' code: one reply, cut at blank lines, each part an answer)
	// or "samples" (Answers replies, each judged whole, as the other
	// strategies).
	DHPAnswers string
	// DHPPositive is which answer DHP's positive example is: "running"
	// (Algorithm 1: the best total so far, over all the run's questions)
	// or "question" (the authors' dhp.py: the best of the latest question
	// that had one meeting Or ≥ 4, Fe ≥ 3, Va ≥ 4).
	DHPPositive string
	EmbedModel  string
	// PTrue asks each model under test whether its own answer is true
	// (P(True), an extra call an answer: figures beside the paper's).
	PTrue bool
	// Entailment, when set, is the model asked whether a question's
	// answers entail each other, to sort them into semantic sets
	// (semantic entropy: figures beside the paper's).
	Entailment string
	// Human is an optional CSV of human labels (answer id, IH/DH/neutral).
	Human string
	// Data is a CDID-format CSV; empty uses the bundled dataset.
	Data string
}

// Settings declares the suite's settings, with the paper's values: 10
// answers per question at temperature 1.0, generation cap 700 (the
// authors' code; the 70-token limit is in the prompt), the one-line text
// judge capped at 200 tokens, RAG on the CDKB knowledge text, DHP replies
// split at blank lines.
func (c *Config) Settings() setting.List {
	has := func(want func(string) bool) func() bool {
		return func() bool { return slices.ContainsFunc(c.Strategies, want) }
	}
	return setting.List{
		setting.Strings("models", &c.Models, "models under test").As(setting.Subject).Models().Required(),
		setting.Strings("judges", &c.Judges, "judge panel (the paper averages two)").As(setting.Instrument).Models().Required().Deprecated("judge"),
		setting.Protocol(&c.Protocol, "JSON judges, DHP answers sampled apart"),
		setting.Choices("strategy", &c.Strategies, "prompt strategies: "+strings.Join(Strategies, ", "), Strategies...).As(setting.Subject).Required(),
		setting.Int("answers", &c.Answers, "answers per question").Paper("10").Min(1),
		setting.Floats("temperature", &c.Temperatures, "generation temperature(s), e.g. 1.0,0.4 (the paper: 1.0; Table 1 also 0.4)").Check(func() error {
			for _, t := range c.Temperatures {
				if t < 0 {
					return errors.New("a temperature cannot be negative")
				}
			}
			return nil
		}),
		setting.Strings("questions", &c.Questions, "question IDs or domains to keep (default all 100)").As(setting.Data).Unset("all"),
		setting.Int("limit", &c.Limit, "questions to run (0: all kept): a seeded sample in which each domain keeps its share, listed in the manifest").As(setting.Data).Min(0),
		setting.Int("seed", &c.Seed, "sampling seed (answer i uses seed+i)").As(setting.Draw),
		setting.Int("max-tokens", &c.MaxTokens, "generation cap (num_predict); the prompt's 70-token limit stays in the prompt").Paper("700").Min(1),
		judging.FormatSetting(&c.JudgeFormat, "text (the paper's one-line format) or json (structured output)").Paper("text").Halu("json"),
		setting.Int("judge-max-tokens", &c.JudgeMaxTokens, "judge reply cap").Paper("200").Min(1),
		setting.Bool("tie-hallucinated", &c.TieHallucinated, "a panel tie on hallucination counts as hallucinated").
			Assumed("the paper averages two judges' scores without saying how a tie on the hallucination verdict counts").When(func() bool { return len(c.Judges) > 1 }),
		setting.Choice("rag-source", &c.RAGSource, "RAG context: knowledge (CDKB text, the paper) or principle (the authors' code)", "knowledge", "principle").
			Paper("knowledge").When(has(func(s string) bool { return s == "rag" })),
		setting.Choice("dhp-answers", &c.DHPAnswers, "split (one DHP reply per question cut at blank lines, the authors' code) or samples (--answers replies, each judged whole)", "split", "samples").
			Paper("split").Halu("samples").When(has(isDHP)),
		setting.Choice("dhp-positive", &c.DHPPositive, "DHP's positive example: running (the best answer so far over all questions, Algorithm 1 of the paper) or question (the best of the latest question that had a qualifying one, the authors' dhp.py)", "running", "question").
			Paper("running").When(has(isDHP)),
		setting.String("embed-model", &c.EmbedModel, "embedding model for Flu (the paper: SimCSE sup-simcse-bert-base-uncased)").As(setting.Instrument).Models().Required(),
		setting.Bool("p-true", &c.PTrue, "ask the model under test, once an answer, whether its answer is true, shown its other answers to the question (P(True), Kadavath et al. 2022, in Farquhar et al.'s zero-shot prompt): the probability of \"A) True\" among its 20 likeliest first tokens, checked against the panel's verdicts beside the paper's figures").As(setting.Beside),
		setting.String("entailment", &c.Entailment, "model asked, with Farquhar et al.'s prompt (Nature 2024), whether two of a question's answers entail each other — both ways makes one meaning — to sort each question's answers into semantic sets: semantic entropy and agreement, checked against the panel's verdicts beside the paper's figures; each answer is compared with each set's first answer only. Empty: not asked").As(setting.Beside).Models(),
		setting.String("human", &c.Human, "CSV of human labels: answer id (model/strategy/T<t>/q<id>/a<i>), IH|DH|neutral").As(setting.Beside).Path(),
		setting.String("data", &c.Data, "CDID-format CSV (default: the bundled 100 questions)").As(setting.Data).Path().Unset("the bundled CDID.csv (the authors' 100 questions)"),
	}
}

// MarshalJSON encodes the config by its settings.
func (c Config) MarshalJSON() ([]byte, error) { return c.Settings().MarshalJSON() }

// UnmarshalJSON reads a config MarshalJSON wrote.
func (c *Config) UnmarshalJSON(b []byte) error { return c.Settings().UnmarshalJSON(b) }

// DefaultConfig is the paper's protocol, with an embedding model for Flu
// (the paper's SimCSE is not an Ollama model).
func DefaultConfig() Config {
	return Config{Protocol: setting.ProtocolPaper, Strategies: []string{"scp"}, Answers: 10, Temperatures: []float64{1.0}, Seed: 1, MaxTokens: 700,
		JudgeFormat: "text", JudgeMaxTokens: 200, TieHallucinated: true, RAGSource: "knowledge", DHPAnswers: "split", DHPPositive: "running", EmbedModel: "all-minilm"}
}

// paper is the publication the suite implements (engine.Suite.Paper).
const paper = "Yang et al., \"Heaven-Sent or Hell-Bent? Benchmarking the Intelligence and Defectiveness of LLM Hallucinations\"; the authors' code: github.com/chujiguangniao/HIC-bench"

// suiteName is the suite's name: its declaration's and its Task's.
const suiteName = "hic"

// Declaration declares the suite to the registry.
var Declaration = engine.Declare(suiteName, "HIC-Bench: intelligent vs defective hallucination on the 100 CDID questions (IH, DH, IFS)",
	DefaultConfig, New, migrate)

// migrate brings a config of run format 1 up to date: two keys were
// plural, and a run made before DHP's answers were a setting sampled them
// apart.
func migrate(format int, cfg map[string]json.RawMessage) error {
	if format < 2 {
		engine.Rename(cfg, "strategies", "strategy")
		engine.Rename(cfg, "temperatures", "temperature")
		engine.DefaultTo(cfg, "protocol", `"paper"`)
		engine.DefaultTo(cfg, "dhp_answers", `"samples"`)
	}
	return nil
}

// Suite is HIC-Bench.
type Suite struct {
	cfg       Config
	questions []Question
	human     map[string]string
}

// New checks cfg and loads the questions.
func New(cfg Config) (*Suite, error) {
	// Found now, not after hours of generating and judging (the
	// embedding model too: Flu and Table 9 compare answers by embedding).
	if err := cfg.Settings().Validate(); err != nil {
		return nil, fmt.Errorf("hic: %w", err)
	}
	if len(cfg.Temperatures) == 0 {
		cfg.Temperatures = []float64{1.0}
	}
	all, err := LoadQuestions(cfg.Data)
	if err != nil {
		return nil, err
	}
	qs := all
	if len(cfg.Questions) > 0 {
		want := map[string]bool{}
		for _, q := range cfg.Questions {
			want[strings.ToLower(strings.TrimSpace(q))] = true
		}
		qs = nil
		for _, q := range all {
			if want[strconv.Itoa(q.ID)] || want[strings.ToLower(q.Field)] {
				qs = append(qs, q)
			}
		}
		if len(qs) == 0 {
			return nil, fmt.Errorf("hic: --questions %v match no question ID or domain", cfg.Questions)
		}
	}
	if cfg.Limit > 0 && cfg.Limit < len(qs) {
		qs = engine.StratifiedSample(qs, cfg.Limit, cfg.Seed, func(q Question) string { return q.Field })
	}
	s := &Suite{cfg: cfg, questions: qs}
	if cfg.Human != "" {
		if s.human, err = loadHuman(cfg.Human, s.answerPrefixes()); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// answerPrefixes are the answer IDs of the run without their answer index
// ("MODEL/STRATEGY/T1/q007"): what a human label's ID must begin with.
func (s *Suite) answerPrefixes() map[string]bool {
	out := map[string]bool{}
	for _, m := range s.cfg.Models {
		for _, st := range s.cfg.Strategies {
			for _, t := range s.cfg.Temperatures {
				for _, q := range s.questions {
					id := AnswerID(m, st, t, q.ID, 0)
					out[id[:strings.LastIndex(id, "/a")]] = true
				}
			}
		}
	}
	return out
}

// Sample lists the drawn question IDs of a run on a sample (--limit).
func (s *Suite) Sample() []string {
	if s.cfg.Limit <= 0 {
		return nil
	}
	out := make([]string, len(s.questions))
	for i, q := range s.questions {
		out[i] = strconv.Itoa(q.ID)
	}
	return out
}

// loadHuman reads human labels (answer id, label: IH, DH or neutral; an
// optional header). Each ID must name an answer this run makes — its
// model, strategy, temperature and question among prefixes, then "/a" and
// an answer index — and be labelled once: a label that could match no
// answer would be left out of Table 8 without a word. (Whether the answer
// with that index exists is known after the run: the summary counts the
// labels that matched none.)
func loadHuman(path string, prefixes map[string]bool) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("hic human labels: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	out := map[string]string{}
	seen := rundir.IDs{}
	for i := 0; ; i++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		line := csvLine(r, err)
		if err != nil {
			return nil, rundir.BadInput(path, line, "%v", err)
		}
		if len(rec) < 2 {
			return nil, rundir.BadInput(path, line, "want answer id and label")
		}
		lab := strings.ToUpper(strings.TrimSpace(rec[1]))
		if i == 0 && lab != "IH" && lab != "DH" && lab != "NEUTRAL" {
			continue // header
		}
		if lab != "IH" && lab != "DH" && lab != "NEUTRAL" {
			return nil, rundir.BadInput(path, line, "label %q is not IH, DH or neutral", rec[1])
		}
		id := strings.TrimSpace(rec[0])
		if !answerOf(id, prefixes) {
			return nil, rundir.BadInput(path, line, "%q is no answer of this run (want MODEL/STRATEGY/T<temperature>/q<NNN>/a<index> with the run's models, strategies, temperatures and questions, as %s)", id, exampleID(prefixes))
		}
		if err := seen.Add(path, line, "answer id", id); err != nil {
			return nil, err
		}
		out[id] = lab
	}
	if len(out) == 0 {
		return nil, rundir.BadInput(path, 0, "no labels")
	}
	return out, nil
}

// csvLine is the line of the record r just read, or of the error reading
// it.
func csvLine(r *csv.Reader, err error) int {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Line
	}
	if err != nil {
		return 0
	}
	line, _ := r.FieldPos(0)
	return line
}

// answerOf reports whether id is PREFIX/aN with PREFIX among prefixes.
func answerOf(id string, prefixes map[string]bool) bool {
	k := strings.LastIndex(id, "/a")
	if k < 0 {
		return false
	}
	n, err := strconv.Atoi(id[k+2:])
	return err == nil && n >= 0 && prefixes[id[:k]]
}

// exampleID is the first of prefixes with an answer index, for an error.
func exampleID(prefixes map[string]bool) string {
	var ps []string
	for p := range prefixes {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	if len(ps) == 0 {
		return "none: the run has no answers"
	}
	return ps[0] + "/a0"
}

// Task is HIC-Bench as the engine runs it: every part it has.
func (s *Suite) Task() engine.Suite {
	return engine.Suite{
		Name:         suiteName,
		Paper:        paper,
		Models:       s.Models,
		Items:        s.Items,
		Process:      s.Process,
		Summarize:    s.Summarize,
		Prompts:      s.Prompts,
		Datasets:     s.Datasets,
		Departures:   s.MethodDepartures,
		Sample:       s.Sample,
		MetricNames:  s.MetricNames,
		OtherReading: s.OtherReading,
		Flag:         s.Flag,
		Outcomes:     s.Outcomes,
	}
}

// MetricNames are the last parts of the summary's keys (engine.Suite.MetricNames):
// MODEL/STRATEGY/TEMPERATURE.NAME.
func (s *Suite) MetricNames() []string {
	return []string{"or", "fe", "va", "ih", "dh", "ifs", "iifs", "rifs", "flu", "fle", "kwprec", "over70"}
}

func (s *Suite) Models() []string {
	m := append(append([]string(nil), s.cfg.Models...), s.cfg.Judges...)
	if s.cfg.Entailment != "" {
		m = append(m, s.cfg.Entailment)
	}
	return append(m, s.cfg.EmbedModel)
}

// Prompts records every template in the manifest.
func (s *Suite) Prompts() map[string]rundir.PromptInfo {
	out := map[string]rundir.PromptInfo{}
	for n, t := range Templates() {
		out[n] = rundir.PromptInfo{Source: "github.com/chujiguangniao/HIC-bench (MIT)", Text: t}
	}
	return out
}

func (s *Suite) Datasets() []string {
	var d []string
	for _, p := range []string{s.cfg.Data, s.cfg.Human} {
		if p != "" {
			d = append(d, p)
		}
	}
	return d
}

type payload struct {
	model, strategy string
	temp            float64
	questions       []Question
}

func isDHP(strategy string) bool { return strings.HasSuffix(strategy, "dhp") }

// Items: one per (model, strategy, temperature, question); DHP strategies
// are sequential by nature — each question's prompt carries examples from
// the answers before it — so a DHP chain over all questions is one item.
func (s *Suite) Items(context.Context) ([]engine.Item, error) {
	var items []engine.Item
	for _, m := range s.cfg.Models {
		for _, st := range s.cfg.Strategies {
			for _, t := range s.cfg.Temperatures {
				base := fmt.Sprintf("%s/%s/T%g", m, st, t)
				if isDHP(st) {
					items = append(items, engine.Item{ID: base + "/chain", Payload: payload{m, st, t, s.questions}, Group: m})
					continue
				}
				for _, q := range s.questions {
					// One question and strategy at every temperature is one
					// prompt: its items start together (Share).
					items = append(items, engine.Item{ID: fmt.Sprintf("%s/q%03d", base, q.ID), Payload: payload{m, st, t, []Question{q}}, Group: m,
						Share: fmt.Sprintf("%s/q%03d", st, q.ID)})
				}
			}
		}
	}
	return items, nil
}

// ItemResult is the record data of one item.
type ItemResult struct {
	Model       string           `json:"model"`
	Strategy    string           `json:"strategy"`
	Temperature float64          `json:"temperature"`
	Questions   []QuestionResult `json:"questions"`
}

// QuestionResult holds a question's answers.
type QuestionResult struct {
	ID       int      `json:"id"`
	Field    string   `json:"field"`
	Question string   `json:"question"`
	Examples Examples `json:"dhp_examples,omitempty"`
	Answers  []Answer `json:"answers"`
	// Split is set when the answers are the parts of one reply cut at
	// blank lines (DHP, as the authors' code); EmptyParts counts the
	// parts that held nothing.
	Split      bool `json:"split,omitempty"`
	EmptyParts int  `json:"empty_parts,omitempty"`
	// Sets is each answer's semantic set (--entailment), when every
	// entailment reply the sorting needed was read; SetsUnread counts the
	// replies that were not (the sets are then left out, not guessed).
	Sets       []int `json:"semantic_sets,omitempty"`
	SetsUnread int   `json:"semantic_sets_unread,omitempty"`
}

// SplitAnswers cuts a DHP reply into answers as the authors' code does:
// the reply stripped, then split at every blank line ("\n\n"). Parts that
// hold nothing but white space are left out and counted (the authors'
// code would send them to the judge).
func SplitAnswers(reply string) (answers []string, empty int) {
	for _, p := range strings.Split(strings.TrimSpace(reply), "\n\n") {
		if strings.TrimSpace(p) == "" {
			empty++
			continue
		}
		answers = append(answers, p)
	}
	return answers, empty
}

// Answer is one generated answer with its judgements.
type Answer struct {
	Index        int         `json:"index"`
	Text         string      `json:"text"`
	TokensCL100K int         `json:"tokens_cl100k"`
	EvalCount    int         `json:"eval_count"`
	DoneReason   string      `json:"done_reason,omitempty"`
	Judgements   []Judgement `json:"judgements"`
	Embedding    []float32   `json:"embedding,omitempty"`
	// Confidence is how sure the model was of the answer, from its
	// generation's token log-probabilities (--logprobs N); nil when not
	// asked, or when the answer is one part of a reply cut at blank lines.
	Confidence *metrics.TokenConfidence `json:"confidence,omitempty"`
	// PTrue is the model's P(True) for the answer (--p-true); nil when not
	// asked or not known (PTrueUnread, PTrueUnknown the cause:
	// engine.PTrueOf; empty in a record made before causes were kept).
	PTrue        *float64 `json:"p_true,omitempty"`
	PTrueUnread  bool     `json:"p_true_unread,omitempty"`
	PTrueUnknown string   `json:"p_true_unknown,omitempty"`
}

// Panel is an answer's aggregate over the judges that answered: mean
// scores, majority hallucination verdict (tie by the configured rule).
type Panel struct {
	Originality, Feasibility, Value float64
	Hallucination, Tie, Scored      bool
	Judges                          int
}

// Aggregate combines an answer's judgements. A judge whose reply did not
// parse abstains; with no scored judge the answer is unscored.
func Aggregate(js []Judgement, tieHallucinated bool) Panel {
	var p Panel
	yes := 0
	for _, j := range js {
		if !j.Scored || j.Verdict == nil {
			continue
		}
		p.Judges++
		p.Originality += float64(j.Verdict.Originality)
		p.Feasibility += float64(j.Verdict.Feasibility)
		p.Value += float64(j.Verdict.Value)
		if j.Verdict.Hallucination {
			yes++
		}
	}
	if p.Judges == 0 {
		return p
	}
	n := float64(p.Judges)
	p.Originality /= n
	p.Feasibility /= n
	p.Value /= n
	p.Scored = true
	no := p.Judges - yes
	switch {
	case yes > no:
		p.Hallucination = true
	case yes == no:
		p.Tie = true
		p.Hallucination = tieHallucinated
	}
	return p
}

func (s *Suite) Process(ctx context.Context, c *engine.Calls, it engine.Item) (any, error) {
	p := it.Payload.(payload)
	res := ItemResult{Model: p.model, Strategy: p.strategy, Temperature: p.temp}
	var ex Examples
	bestTotal := 0.0
	for _, q := range p.questions {
		qr, err := s.question(ctx, c, p, q, ex)
		if err != nil {
			return nil, fmt.Errorf("question %d: %w", q.ID, err)
		}
		if isDHP(p.strategy) {
			// Algorithm 1: the positive example is the best answer so far by
			// Or+Fe+Va among those with Or ≥ 4, Fe ≥ 3, Va ≥ 4; the negative
			// the latest answer judged hallucinated. The authors' dhp.py
			// starts the best afresh at each question (--dhp-positive
			// question).
			if s.cfg.DHPPositive == "question" {
				bestTotal = 0
			}
			for _, a := range qr.Answers {
				pan := Aggregate(a.Judgements, s.cfg.TieHallucinated)
				if !pan.Scored {
					continue
				}
				if total := pan.Originality + pan.Feasibility + pan.Value; pan.Originality >= 4 && pan.Feasibility >= 3 && pan.Value >= 4 && total > bestTotal {
					bestTotal = total
					ex.Positive = a.Text
				}
				if pan.Hallucination {
					ex.Negative = a.Text
				}
			}
		}
		res.Questions = append(res.Questions, qr)
	}
	return res, nil
}

func (s *Suite) question(ctx context.Context, c *engine.Calls, p payload, q Question, ex Examples) (QuestionResult, error) {
	qr := QuestionResult{ID: q.ID, Field: q.Field, Question: q.Question}
	if isDHP(p.strategy) {
		qr.Examples = ex
	}
	text, err := RenderPrompt(p.strategy, q, ex, s.cfg.RAGSource)
	if err != nil {
		return qr, err
	}
	texts := make([]string, 0, s.cfg.Answers)
	split := isDHP(p.strategy) && s.cfg.DHPAnswers == "split"
	replies := s.cfg.Answers
	if split {
		replies = 1 // the authors' DHP: one reply per question, cut into answers
	}
	for i := 0; i < replies; i++ {
		req := localmodels.ChatRequest{
			Model:    p.model,
			Messages: []localmodels.Message{{Role: "user", Content: text}},
			Options: localmodels.Options{Temperature: localmodels.Float(p.temp), Seed: localmodels.Int(s.cfg.Seed + i),
				NumPredict: localmodels.Int(s.cfg.MaxTokens)},
		}
		gen, err := c.Chat(ctx, "generate", req, i)
		if err != nil {
			return qr, err
		}
		parts := []string{strings.TrimSpace(gen.Content)}
		if split {
			parts, qr.EmptyParts = SplitAnswers(gen.Content)
			qr.Split = true
			if c.Planning() {
				// A dry run plans the answers the prompt asks for.
				parts = make([]string, s.cfg.Answers)
			}
		}
		for _, answer := range parts {
			ntok, err := c.Engine().Tokens().Count(answer)
			if err != nil {
				return qr, err
			}
			a := Answer{Index: len(qr.Answers), Text: answer, TokensCL100K: ntok, EvalCount: gen.EvalCount, DoneReason: gen.DoneReason}
			if !split {
				a.Confidence = engine.ReplyConfidence(req, gen)
			}
			for _, j := range s.cfg.Judges {
				jd, err := s.judge(ctx, c, j, p.model, isDHP(p.strategy), q.Question, answer)
				if err != nil {
					return qr, err
				}
				a.Judgements = append(a.Judgements, jd)
			}
			qr.Answers = append(qr.Answers, a)
			texts = append(texts, answer)
		}
	}
	if len(texts) == 0 {
		return qr, nil // a DHP reply with no answer in it: nothing to judge or embed
	}
	if s.cfg.PTrue {
		for i := range qr.Answers {
			others := append(append([]string(nil), texts[:i]...), texts[i+1:]...)
			pt, unknown, err := c.PTrue(ctx, p.model, q.Question, others, texts[i])
			if err != nil {
				return qr, err
			}
			if unknown == "" {
				qr.Answers[i].PTrue = &pt
			} else {
				qr.Answers[i].PTrueUnread, qr.Answers[i].PTrueUnknown = true, unknown
			}
		}
	}
	if s.cfg.Entailment != "" && len(texts) >= 2 {
		if qr.Sets, qr.SetsUnread, err = SemanticSets(ctx, c, hicjudge.Spec{Seed: s.cfg.Seed, MaxTokens: s.cfg.JudgeMaxTokens}, s.cfg.Entailment, q.Question, texts); err != nil {
			return qr, err
		}
	}
	vecs, err := c.Embed(ctx, "embed", s.cfg.EmbedModel, texts)
	if err != nil {
		return qr, err
	}
	for i := range qr.Answers {
		qr.Answers[i].Embedding = vecs[i]
	}
	return qr, nil
}

// judge asks one judge for its verdict on an answer (Judge, with the
// run's settings).
func (s *Suite) judge(ctx context.Context, c *engine.Calls, judge, model string, dhp bool, question, answer string) (Judgement, error) {
	return hicjudge.Judge(ctx, c, hicjudge.Spec{Seed: s.cfg.Seed, MaxTokens: s.cfg.JudgeMaxTokens, Format: s.cfg.JudgeFormat, DHP: dhp, Subject: model}, judge, question, answer)
}
