package cfaith

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"halu/localmodels"
	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/judging"
	"halu/runner/rundir"
	"halu/runner/setting"
	"halu/runner/summary"
)

// Doc is one knowledge document.
type Doc struct {
	ID        string `json:"id"`
	Knowledge string `json:"knowledge"`
}

// ReadDocs reads knowledge documents from a directory of .txt/.md files
// (one document each, named by file), a JSONL file (id, ent or pmid; and
// knowledge, text or abstract — the C-FAITH domain_data and PubMedQA
// shapes), or a CDID-format CSV (HIC-Bench: its "Knowledge Base" texts).
func ReadDocs(path string) ([]Doc, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("docs: %w", err)
	}
	if st.IsDir() {
		var out []Doc
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			ext := filepath.Ext(e.Name())
			if e.IsDir() || (ext != ".txt" && ext != ".md") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(path, e.Name()))
			if err != nil {
				return nil, err
			}
			if t := strings.TrimSpace(string(b)); t != "" {
				if err := rundir.CheckText("document", t); err != nil {
					return nil, rundir.BadInput(filepath.Join(path, e.Name()), 0, "%v", err)
				}
				out = append(out, Doc{ID: strings.TrimSuffix(e.Name(), ext), Knowledge: t})
			}
		}
		if len(out) == 0 {
			return nil, rundir.BadInput(path, 0, "no .txt or .md document")
		}
		return out, nil
	}
	if strings.HasSuffix(path, ".csv") {
		return readCSVDocs(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Doc
	seen := rundir.IDs{}
	err = rundir.ScanJSONL(f, path, func(line int, l []byte) error {
		var raw map[string]any
		if err := json.Unmarshal(l, &raw); err != nil {
			return err
		}
		str := func(keys ...string) string {
			for _, k := range keys {
				switch v := raw[k].(type) {
				case string:
					if v != "" {
						return v
					}
				case float64:
					return fmt.Sprint(int64(v))
				}
			}
			return ""
		}
		d := Doc{ID: str("id", "ent", "pmid"), Knowledge: strings.TrimSpace(str("knowledge", "text", "abstract"))}
		if d.ID == "" || d.Knowledge == "" {
			return errors.New("want an id (id, ent or pmid) and a text (knowledge, text or abstract)")
		}
		if err := rundir.CheckText("knowledge", d.Knowledge); err != nil {
			return err
		}
		if err := seen.Add(path, line, "document", d.ID); err != nil {
			return err
		}
		out = append(out, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, rundir.BadInput(path, 0, "no documents")
	}
	return out, nil
}

// readCSVDocs reads the documents of a CSV with a "Knowledge Base" column
// (HIC-Bench's CDID layout): each row's knowledge text, named by its "ID"
// column (else its line).
func readCSVDocs(path string) ([]Doc, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(b, []byte("\ufeff"))))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		var pe *csv.ParseError
		line := 0
		if errors.As(err, &pe) {
			line = pe.Line
		}
		return nil, rundir.BadInput(path, line, "%v", err)
	}
	if len(rows) == 0 {
		return nil, rundir.BadInput(path, 0, "no header")
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[strings.TrimSpace(h)] = i
	}
	kc, ok := col["Knowledge Base"]
	if !ok {
		return nil, rundir.BadInput(path, 1, "no \"Knowledge Base\" column")
	}
	var out []Doc
	seen := rundir.IDs{}
	for i, row := range rows[1:] {
		if kc >= len(row) {
			continue
		}
		id := strconv.Itoa(i + 2)
		if ic, ok := col["ID"]; ok && ic < len(row) && strings.TrimSpace(row[ic]) != "" {
			id = strings.TrimSpace(row[ic])
		}
		if k := strings.TrimSpace(row[kc]); k != "" {
			if err := rundir.CheckText("knowledge", k); err != nil {
				return nil, rundir.BadInput(path, i+2, "%v", err)
			}
			if err := seen.Add(path, i+2, "document", id); err != nil {
				return nil, err
			}
			out = append(out, Doc{ID: id, Knowledge: k})
		}
	}
	if len(out) == 0 {
		return nil, rundir.BadInput(path, 0, "no documents")
	}
	return out, nil
}

// BuildConfig is the construction's settings (declared in Settings).
type BuildConfig struct {
	Docs     string
	Lang     string
	Agent    string
	Verifier string
	Types    []string
	Rules    RuleSet
	// MaxQuestions keeps at most this many of the (three) questions the
	// agent writes per document and type (0: all).
	MaxQuestions int
	// Responses is the number of hallucinated responses per question
	// (the paper: three).
	Responses int
	// ResponseCalls is how they are asked for: "one" (the authors' code,
	// generate_multi_halu: one call for all of them, in numbered lines)
	// or "each" (one call per response, with the single-response prompt).
	ResponseCalls string
	Seed          int
	// Format is "json" (structured output for agents and verifier) or
	// "text" (the authors' formats, parsed leniently).
	Format string
	// MaxTokens caps the agents' replies (the authors' generator: 2,048);
	// VerifierMaxTokens the verification module's (their evaluator: 1,024).
	MaxTokens         int
	VerifierMaxTokens int
	// ChunkTokens splits a knowledge document longer than this many
	// (cl100k) tokens into parts of at most that many, each a document of
	// its own; 0 shows every document whole, as the authors' code does,
	// in a context window sized to hold it.
	ChunkTokens int
	// Corrector is rule optimisation's agent: "authors" (their corrector's
	// instructions: one failed check shown, a whole prompt rewritten) or
	// "json" (halu's: one part revised as JSON from all its failures).
	Corrector string
	// Optimized records that the build's rules come from --optimize (the
	// corrector bears on the build only then).
	Optimized bool
	// VerifierDecoding is how the verification module decodes: "sampled"
	// (the authors' code: the agents' settings, temperature 0.7, top_p
	// 0.7, top_k 50, frequency penalty 0.5) or "greedy" (temperature 0: a
	// judgement that does not change between runs).
	VerifierDecoding string
	// Protocol is "paper" (the authors' construction) or "halu".
	Protocol string
	// EmbedModel embeds single-choice options for near-duplicate removal;
	// empty compares normalised text only.
	EmbedModel string
	// OnlyDocs restricts the run to these document IDs (the optimisation
	// loop's training and validation samples).
	OnlyDocs []string
}

// Settings declares the construction's settings.
func (c *BuildConfig) Settings() setting.List {
	return setting.List{
		setting.String("docs", &c.Docs, "knowledge documents: directory, JSONL or CSV").As(setting.Data).Path().Required(),
		setting.Choice("lang", &c.Lang, "prompt language: zh (the authors' prompts) or en", "zh", "en"),
		setting.String("agent", &c.Agent, "generation agents' model").As(setting.Instrument).Models().Required(),
		setting.String("verifier", &c.Verifier, "verification module's model (default: the agent)").As(setting.Instrument).Models(),
		setting.Choices("types", &c.Types, "hallucination types to generate: "+strings.Join(Types, ", "), Types...).As(setting.Subject),
		setting.Record("rules", &c.Rules, "the generation rules used (set by --rules or --optimize)"),
		setting.Int("max-questions", &c.MaxQuestions, "questions kept per document and type (the prompts ask for 3; 0 keeps all)").Min(0),
		setting.Int("responses", &c.Responses, "hallucinated responses per question").Paper("3").Min(1),
		setting.Choice("response-calls", &c.ResponseCalls, "one (the authors' code: all of a question's hallucinated responses asked in one call, numbered lines) or each (one call per response)", "one", "each").
			Paper("one").Halu("each"),
		setting.Int("seed", &c.Seed, "seed for sampling, the train/validation split and option shuffling").As(setting.Draw),
		setting.Choice("format", &c.Format, "text (the authors' agents: free text in the prompts' formats, read leniently) or json (structured output)", "text", "json").
			Paper("text").Halu("json"),
		setting.Int("max-tokens", &c.MaxTokens, "the agents' reply cap (the authors' generator: 2,048)").Paper("2048").Min(1),
		setting.Int("verifier-max-tokens", &c.VerifierMaxTokens, "the verification module's reply cap (the authors' evaluator: 1,024)").Paper("1024").Min(1),
		setting.Int("chunk-tokens", &c.ChunkTokens, "0: each knowledge document whole in its prompt, as the authors' code (the run's context window is sized to hold the longest; a model whose context cannot is refused before the first call); N: a document longer than N tokens is split at paragraph and sentence ends into parts of at most N, each a document of its own (ID#1, ID#2, …)").Paper("0").Min(0),
		setting.Choice("verifier-decoding", &c.VerifierDecoding, "sampled (the authors' code: the agents' temperature 0.7, top_p 0.7, top_k 50, frequency penalty 0.5) or greedy (temperature 0)", "sampled", "greedy").
			Paper("sampled").Halu("greedy"),
		setting.Choice("corrector", &c.Corrector, "rule optimisation's agent (--optimize): authors (their corrector, corrector/qa_corrector.py: shown one failed check, it rewrites a whole generation prompt; halu reads its requirements 1–4 or the blamed definition back) or json (halu's: one rule group or definition revised as JSON from every failure that blames it)", "authors", "json").
			Paper("authors").Halu("json").When(func() bool { return c.Optimized }),
		setting.Record("optimized", &c.Optimized, "whether the rules come from --optimize"),
		setting.Protocol(&c.Protocol, "a greedy verifier, structured output, halu's optimiser"),
		setting.String("embed-model", &c.EmbedModel, "embedding model for near-duplicate single-choice options (default: exact text only)").As(setting.Instrument).Models(),
		setting.Record("only-docs", &c.OnlyDocs, "the documents an optimisation round's run is restricted to"),
	}
}

// MarshalJSON encodes the config by its settings.
func (c BuildConfig) MarshalJSON() ([]byte, error) { return c.Settings().MarshalJSON() }

// UnmarshalJSON reads a config MarshalJSON wrote.
func (c *BuildConfig) UnmarshalJSON(b []byte) error { return c.Settings().UnmarshalJSON(b) }

// DefaultBuildConfig has the authors' code's settings.
func DefaultBuildConfig() BuildConfig {
	return BuildConfig{Lang: "zh", Types: DefaultTypes, MaxQuestions: 0, Responses: 3, ResponseCalls: "one", Seed: 1, Format: "text", MaxTokens: 2048, VerifierMaxTokens: 1024, Corrector: "authors",
		VerifierDecoding: "sampled", Protocol: setting.ProtocolPaper}
}

// buildName is the construction's name: its declaration's and its Task's.
const buildName = "cfaith-build"

// BuildDeclaration declares the construction, run by `halu build cfaith`,
// to the registry.
var BuildDeclaration = engine.Declare(buildName, "HaluAgent: build a C-FAITH-style QA hallucination dataset from knowledge documents",
	DefaultBuildConfig, NewBuilder, migrateBuild).NotRun()

// migrateBuild brings a construction's config of an older run format up
// to date: format 2's verifier decoded greedily.
func migrateBuild(format int, cfg map[string]json.RawMessage) error {
	if format < 3 {
		engine.DefaultTo(cfg, "verifier_decoding", `"greedy"`)
	}
	if format < 5 {
		// Format 4 optimised with halu's JSON optimiser.
		engine.DefaultTo(cfg, "corrector", `"json"`)
		// and capped the verifier's replies as the agents'.
		if v, ok := cfg["max_tokens"]; ok {
			engine.DefaultTo(cfg, "verifier_max_tokens", string(v))
		}
	}
	if format < 4 {
		// Format 3 asked for each hallucinated response in a call of its own.
		engine.DefaultTo(cfg, "response_calls", `"each"`)
	}
	return nil
}

// BuildOptions are the settings of `halu build cfaith` beyond the
// construction's own: the rules to start from, the optimisation of the
// rules (§3.2) and the dataset's aggregation.
type BuildOptions struct {
	Out        string
	Rules      string
	Dedup      float64
	Optimize   bool
	Rounds     int
	Train      int
	Val        int
	Candidates int
	Optimizer  string
}

// DefaultBuildOptions are the command's defaults.
func DefaultBuildOptions() BuildOptions {
	return BuildOptions{Rules: "original", Dedup: 0.9, Rounds: 5, Train: 60, Val: 20, Candidates: 3}
}

// Settings declares the command's own settings.
func (o *BuildOptions) Settings() setting.List {
	return setting.List{
		setting.String("out", &o.Out, "dataset directory to write").Conducts().Required(),
		setting.String("rules", &o.Rules, "generation rules: original, optimized (the paper's Figure 7), or a rules JSON file from --optimize"),
		setting.Float("dedup-threshold", &o.Dedup, "cosine similarity at or above which two options are near-duplicates").Min(0),
		setting.Bool("optimize", &o.Optimize, "optimise the generation rules first (§3.2)"),
		setting.Int("rounds", &o.Rounds, "most optimisation rounds").Min(0),
		setting.Int("train", &o.Train, "training documents for optimisation").Min(1),
		setting.Int("val", &o.Val, "validation documents for optimisation").Min(1),
		setting.Int("candidates", &o.Candidates, "candidate prompts per round").Min(1),
		setting.String("optimizer", &o.Optimizer, "optimisation agent's model (default: the agent)").As(setting.Instrument).Models(),
	}
}

// Builder is the construction as an engine suite: one item per document.
type Builder struct {
	cfg  BuildConfig
	docs []Doc
}

// NewBuilder checks cfg and reads the documents.
func NewBuilder(cfg BuildConfig) (*Builder, error) {
	if err := cfg.Settings().Validate(); err != nil {
		return nil, fmt.Errorf("cfaith build: %w", err)
	}
	if cfg.Verifier == "" {
		cfg.Verifier = cfg.Agent
	}
	if err := cfg.Rules.Validate(); err != nil {
		return nil, fmt.Errorf("cfaith build: %w", err)
	}
	docs, err := ReadDocs(cfg.Docs)
	if err != nil {
		return nil, err
	}
	if len(cfg.OnlyDocs) > 0 {
		keep := map[string]bool{}
		for _, id := range cfg.OnlyDocs {
			keep[id] = true
		}
		var sub []Doc
		for _, d := range docs {
			if keep[d.ID] {
				sub = append(sub, d)
			}
		}
		docs = sub
	}
	if cfg.ChunkTokens > 0 {
		if docs, err = Chunk(docs, cfg.ChunkTokens); err != nil {
			return nil, err
		}
	}
	return &Builder{cfg: cfg, docs: docs}, nil
}

// Task is HaluAgent's dataset construction as the engine runs it: every part it has.
func (b *Builder) Task() engine.Suite {
	return engine.Suite{
		Name:       buildName,
		Paper:      paper,
		Models:     b.Models,
		Items:      b.Items,
		Process:    b.Process,
		Summarize:  b.Summarize,
		Prompts:    b.Prompts,
		Datasets:   b.Datasets,
		Departures: b.MethodDepartures,
		Window:     b.Window,
	}
}

func (b *Builder) Models() []string {
	m := []string{b.cfg.Agent, b.cfg.Verifier}
	if b.cfg.EmbedModel != "" {
		m = append(m, b.cfg.EmbedModel)
	}
	return m
}

func (b *Builder) Prompts() map[string]rundir.PromptInfo {
	out := map[string]rundir.PromptInfo{}
	for n, t := range Templates(b.cfg.Lang) {
		src := "github.com/pkulcwmzx/C-FAITH (verbatim)"
		if b.cfg.Lang == "en" {
			src = "halu's English rendering of the C-FAITH prompts (rules from the paper's translations)"
		}
		switch {
		case strings.Contains(n, "eval_true_false"), strings.Contains(n, "judge_generative"), strings.Contains(n, "optimizer"):
			src = "halu"
		}
		out[n] = rundir.PromptInfo{Source: src, Text: t}
	}
	rs, _ := json.Marshal(b.cfg.Rules)
	out["rules"] = rundir.PromptInfo{Source: "rule set " + b.cfg.Rules.Name, Text: string(rs)}
	return out
}

func (b *Builder) Datasets() []string { return []string{b.cfg.Docs} }

func (b *Builder) Items(context.Context) ([]engine.Item, error) {
	var items []engine.Item
	for _, d := range b.docs {
		items = append(items, engine.Item{ID: d.ID, Payload: d})
	}
	return items, nil
}

// DocResult is the record of one document: every question the agents made,
// with the verifier's verdicts as provenance.
type DocResult struct {
	Doc       string     `json:"doc"`
	Questions []Question `json:"questions"`
	// Declined lists the types for which the agent said it cannot write a
	// question; Unparsed those whose reply never parsed.
	Declined []string `json:"declined,omitempty"`
	Unparsed []string `json:"unparsed,omitempty"`
}

// Question is one generated question with its hallucinated responses and
// every check.
type Question struct {
	Mode      string     `json:"mode"` // the type the question was generated to induce
	QA        QA         `json:"qa"`
	Correct   *Verdict   `json:"correctness,omitempty"` // nil: unparseable
	Responses []Response `json:"responses"`
	// Label is the question's hallucination type: the majority label of
	// its verified responses (tie: the generation mode if tied, else the
	// first in type order); "" when no response passed.
	Label string `json:"label,omitempty"`
	// MaxOptionSimilarity is the largest pairwise similarity among the
	// single-choice options (correct answer and verified responses).
	MaxOptionSimilarity *float64 `json:"max_option_similarity,omitempty"`
	Drop                string   `json:"drop,omitempty"` // why the question yields no data
}

// Response is one hallucinated response.
type Response struct {
	Text  string   `json:"text"`
	Label string   `json:"label,omitempty"` // "" when the label never parsed
	Halu  *Verdict `json:"hallucination,omitempty"`
	Type  *Verdict `json:"label_check,omitempty"`
	Drop  string   `json:"drop,omitempty"`
}

// Passed reports whether the response passed both its checks.
func (r Response) Passed() bool {
	return r.Halu != nil && r.Halu.Verdict == Pass && r.Type != nil && r.Type.Verdict == Pass
}

func (b *Builder) opts(seed int) localmodels.Options { return authorsOptions(seed, b.cfg.MaxTokens) }

// authorsOptions are the sampling settings of every request the authors'
// construction code sends (generator, evaluator and corrector payloads):
// temperature 0.7, top_p 0.7, top_k 50, frequency penalty 0.5, with the
// seed and reply cap given.
func authorsOptions(seed, maxTokens int) localmodels.Options {
	return localmodels.Options{Temperature: localmodels.Float(0.7), TopP: localmodels.Float(0.7), TopK: localmodels.Int(50),
		FrequencyPenalty: localmodels.Float(0.5), Seed: localmodels.Int(seed), NumPredict: localmodels.Int(maxTokens)}
}

func (b *Builder) req(model, content string, seed int, schema string) localmodels.ChatRequest {
	r := localmodels.ChatRequest{Model: model, Messages: []localmodels.Message{{Role: "user", Content: content}}, Options: b.opts(seed)}
	r.Format = judging.Schema(b.cfg.Format, schema)
	return r
}

// qaSchema is the question agent's structured output. Types whose prompt
// lets the agent decline (RefErr, Outdated: "无法生成") may return no item;
// the others must return at least one, as their prompts demand.
func qaSchema(typ string) string {
	min := 1
	if typ == "RefErr" || typ == "Outdated" {
		min = 0
	}
	return fmt.Sprintf(qaSchemaFmt, min)
}

const (
	qaSchemaFmt = `{"type":"object","properties":{"items":{"type":"array","minItems":%d,"maxItems":3,"items":{"type":"object","properties":{` +
		`"question":{"type":"string","minLength":1,"maxLength":300},"answer":{"type":"string","minLength":1,"maxLength":400},` +
		`"evidence":{"type":"string","minLength":1,"maxLength":600}},"required":["question","answer","evidence"]}}},"required":["items"]}`
	haluSchema = `{"type":"object","properties":{"response":{"type":"string","minLength":1,"maxLength":400}},"required":["response"]}`
	// haluListSchemaFmt is the one-call form: exactly n responses.
	haluListSchemaFmt = `{"type":"object","properties":{"responses":{"type":"array","minItems":%d,"maxItems":%d,"items":{"type":"string","minLength":1,"maxLength":400}}},"required":["responses"]}`
)

func labelSchema(lang string) string {
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = `"` + TypeName(lang, t) + `"`
	}
	return `{"type":"object","properties":{"label":{"type":"string","enum":[` + strings.Join(names, ",") + `]}},"required":["label"]}`
}

func (b *Builder) Process(ctx context.Context, c *engine.Calls, it engine.Item) (any, error) {
	d := it.Payload.(Doc)
	res := DocResult{Doc: d.ID}
	lang := b.cfg.Lang
	for _, typ := range b.cfg.Types {
		req := b.req(b.cfg.Agent, QAPrompt(lang, typ, b.cfg.Rules, d.Knowledge), b.cfg.Seed, qaSchema(typ))
		qas, ok, err := judging.JudgeAs(ctx, c, "generate", req, nil, judging.ByFormat(b.cfg.Format, func(raw string) ([]QA, error) {
			var v struct {
				Items []QA `json:"items"`
			}
			if err := judging.DecodeJSON(raw, &v); err != nil {
				return nil, err
			}
			var out []QA
			for _, q := range v.Items {
				if strings.TrimSpace(q.Question) != "" && strings.TrimSpace(q.Answer) != "" && strings.TrimSpace(q.Evidence) != "" {
					out = append(out, q)
				}
			}
			return out, nil
		}, func(raw string) ([]QA, error) { return ParseQA(lang, raw) }))
		if err != nil {
			return nil, err
		}
		if !ok {
			res.Unparsed = append(res.Unparsed, typ)
			continue
		}
		if len(qas) == 0 {
			res.Declined = append(res.Declined, typ)
			continue
		}
		if b.cfg.MaxQuestions > 0 && len(qas) > b.cfg.MaxQuestions {
			qas = qas[:b.cfg.MaxQuestions]
		}
		for _, qa := range qas {
			q, err := b.question(ctx, c, typ, qa)
			if err != nil {
				return nil, err
			}
			res.Questions = append(res.Questions, q)
		}
	}
	return res, nil
}

func (b *Builder) verify(ctx context.Context, c *engine.Calls, check, content string) (*Verdict, error) {
	// The authors' verifier samples as their agents do; --verifier-decoding
	// greedy makes it a judgement that does not change between runs.
	opts := b.opts(b.cfg.Seed)
	if b.cfg.VerifierDecoding == "greedy" {
		opts = localmodels.Options{Temperature: localmodels.Float(0), Seed: localmodels.Int(b.cfg.Seed)}
	}
	opts.NumPredict = localmodels.Int(b.cfg.VerifierMaxTokens)
	req := localmodels.ChatRequest{Model: b.cfg.Verifier, Messages: []localmodels.Message{{Role: "user", Content: content}}, Options: opts}
	v, ok, err := judging.JudgeAs(ctx, c, "verify", req, judging.Schema(b.cfg.Format, verdictSchema), VerifyReader(b.cfg.Lang, check))
	if err != nil || !ok {
		return nil, err
	}
	return &v, nil
}

// haluAnswers asks the agent for the question's hallucinated responses:
// in one call (the authors' code) or one call each. A response that could
// not be read is "" (dropped, counted); in one call, an unread reply loses
// them all, as the authors' code drops the question.
func (b *Builder) haluAnswers(ctx context.Context, c *engine.Calls, qa QA) ([]string, error) {
	lang, n := b.cfg.Lang, b.cfg.Responses
	texts := make([]string, n)
	if b.cfg.ResponseCalls == "one" {
		schema := fmt.Sprintf(haluListSchemaFmt, n, n)
		req := b.req(b.cfg.Agent, HaluAnswersPrompt(lang, b.cfg.Rules, n, qa.Question, qa.Answer, qa.Evidence), b.cfg.Seed, schema)
		list, ok, err := judging.JudgeAs(ctx, c, "generate", req, nil, HaluAnswersReader(b.cfg.Format, n))
		if err != nil || !ok {
			return texts, err
		}
		return list, nil
	}
	for i := range texts {
		req := b.req(b.cfg.Agent, HaluAnswerPrompt(lang, b.cfg.Rules, qa.Question, qa.Answer, qa.Evidence), b.cfg.Seed+i, haluSchema)
		text, ok, err := judging.JudgeAs(ctx, c, "generate", req, nil, judging.ByFormat(b.cfg.Format, func(raw string) (string, error) {
			var v struct {
				Response string `json:"response"`
			}
			if err := judging.DecodeJSON(raw, &v); err != nil {
				return "", err
			}
			return ParseHaluAnswer(v.Response)
		}, ParseHaluAnswer))
		if err != nil {
			return texts, err
		}
		if ok {
			texts[i] = text
		}
	}
	return texts, nil
}

// response labels the i-th hallucinated response of a question and has
// the verification module check it.
func (b *Builder) response(ctx context.Context, c *engine.Calls, qa QA, i int, text string) (Response, error) {
	lang := b.cfg.Lang
	r := Response{Text: text}
	lreq := b.req(b.cfg.Agent, LabelPrompt(lang, b.cfg.Rules, qa.Question, text, qa.Answer), b.cfg.Seed+i, labelSchema(lang))
	label, ok, err := judging.JudgeAs(ctx, c, "label", lreq, nil, LabelReader(lang, b.cfg.Format))
	if err != nil {
		return r, err
	}
	if ok {
		r.Label = label
	}
	if r.Halu, err = b.verify(ctx, c, "halu", VerifyHaluPrompt(lang, qa.Evidence, qa.Question, text)); err != nil {
		return r, err
	}
	if r.Label != "" {
		if r.Type, err = b.verify(ctx, c, "type", VerifyTypePrompt(lang, r.Label, qa.Question, qa.Answer, text)); err != nil {
			return r, err
		}
	}
	r.Drop = responseDrop(r)
	return r, nil
}

func (b *Builder) question(ctx context.Context, c *engine.Calls, mode string, qa QA) (Question, error) {
	lang := b.cfg.Lang
	q := Question{Mode: mode, QA: qa}
	var err error
	if q.Correct, err = b.verify(ctx, c, "correct", VerifyCorrectPrompt(lang, qa.Evidence, qa.Question, qa.Answer)); err != nil {
		return q, err
	}
	texts, err := b.haluAnswers(ctx, c, qa)
	if err != nil {
		return q, err
	}
	for i, text := range texts {
		if text == "" {
			q.Responses = append(q.Responses, Response{Drop: "response unparseable"})
			continue
		}
		r, err := b.response(ctx, c, qa, i, text)
		if err != nil {
			return q, err
		}
		q.Responses = append(q.Responses, r)
	}
	q.Drop = questionDrop(q)
	q.Label = questionLabel(q)
	if b.cfg.EmbedModel != "" && q.Drop == "" {
		opts := choiceOptions(q)
		if len(opts) == 4 {
			vecs, err := c.Embed(ctx, "embed", b.cfg.EmbedModel, opts)
			if err != nil {
				return q, err
			}
			m := maxPairwise(vecs)
			q.MaxOptionSimilarity = &m
		}
	}
	return q, nil
}

func verdictDrop(check string, v *Verdict) string {
	switch {
	case v == nil:
		return check + ": unparseable"
	case v.Verdict == Fail:
		return check + ": fail"
	case v.Verdict == Uncertain:
		return check + ": uncertain"
	}
	return ""
}

// responseDrop is why a response is rejected: its label never parsed, or
// its hallucination or label check did not pass.
func responseDrop(r Response) string {
	if r.Label == "" {
		return "label: unparseable"
	}
	if d := verdictDrop("hallucination check", r.Halu); d != "" {
		return d
	}
	return verdictDrop("label check", r.Type)
}

// questionDrop is why a question yields no data: its correctness check did
// not pass, or none of its responses did.
func questionDrop(q Question) string {
	if d := verdictDrop("correctness check", q.Correct); d != "" {
		return d
	}
	for _, r := range q.Responses {
		if r.Passed() {
			return ""
		}
	}
	return "no response passed"
}

func questionLabel(q Question) string {
	count := map[string]int{}
	for _, r := range q.Responses {
		if r.Passed() {
			count[r.Label]++
		}
	}
	best := ""
	for _, t := range Types {
		if count[t] > count[best] || (count[t] == count[best] && count[t] > 0 && t == q.Mode) {
			best = t
		}
	}
	return best
}

func choiceOptions(q Question) []string {
	opts := []string{q.QA.Answer}
	for _, r := range q.Responses {
		if r.Passed() {
			opts = append(opts, r.Text)
		}
	}
	return opts
}

func maxPairwise(vecs [][]float32) float64 {
	m := -1.0
	for i := range vecs {
		for j := i + 1; j < len(vecs); j++ {
			if s, err := metrics.Cosine(vecs[i], vecs[j]); err == nil && s > m {
				m = s
			}
		}
	}
	return m
}

// Summarize gives the rejection counts by reason and the pass rates of
// Table 3.
func (b *Builder) Summarize(rs *rundir.Records) (*summary.Summary, error) {
	recs, err := rs.Sorted()
	if err != nil {
		return nil, err
	}
	docs, err := decodeDocs(recs)
	if err != nil {
		return nil, err
	}
	sum := &summary.Summary{Suite: "cfaith-build", Metrics: map[string]float64{}}
	pr := PassRates(docs)
	sum.Metrics["pass/correctness"], sum.Metrics["pass/hallucination"], sum.Metrics["pass/label"], sum.Metrics["pass/overall"] = pr.Corr, pr.Halu, pr.Label, pr.Overall
	sum.Tables = append(sum.Tables, summary.Table{Title: "HaluAgent verification pass rates (C-FAITH Table 3 layout)",
		Columns: []string{"questions", "responses", "Corr.", "Halu.", "Label", "Overall"},
		Rows:    [][]string{{fmt.Sprint(pr.Questions), fmt.Sprint(pr.Responses), pct(pr.Corr), pct(pr.Halu), pct(pr.Label), pct(pr.Overall)}}})
	reasons := map[string]int{}
	for _, d := range docs {
		for _, t := range d.Declined {
			reasons["question generation: declined ("+t+")"]++
		}
		for _, t := range d.Unparsed {
			reasons["question generation: unparseable ("+t+")"]++
		}
		for _, q := range d.Questions {
			if q.Drop != "" {
				reasons["question dropped — "+q.Drop]++
			}
			for _, r := range q.Responses {
				if r.Drop != "" {
					reasons["response rejected — "+r.Drop]++
				}
			}
		}
	}
	var keys []string
	for k := range reasons {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t := summary.Table{Title: "Rejected by the verification module, by reason", Columns: []string{"reason", "count"}}
	for _, k := range keys {
		t.Rows = append(t.Rows, []string{k, fmt.Sprint(reasons[k])})
	}
	sum.Tables = append(sum.Tables, t)
	return sum, nil
}

func pct(x float64) string { return fmt.Sprintf("%.2f%%", 100*x) }

func decodeDocs(recs []rundir.Record) ([]DocResult, error) {
	out, err := rundir.DecodeRecords[DocResult](recs)
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Doc < out[j].Doc })
	return out, nil
}

// Rates are Table 3's pass rates: Corr over questions, Halu and Label over
// responses, Overall over (question, response) pairs passing all three
// checks. An unparseable check counts as not passed.
type Rates struct {
	Questions, Responses       int
	Corr, Halu, Label, Overall float64
}

// PassRates computes Rates over documents' records.
func PassRates(docs []DocResult) Rates {
	var r Rates
	corr, halu, label, all := 0, 0, 0, 0
	for _, d := range docs {
		for _, q := range d.Questions {
			r.Questions++
			qok := q.Correct != nil && q.Correct.Verdict == Pass
			if qok {
				corr++
			}
			for _, resp := range q.Responses {
				r.Responses++
				h := resp.Halu != nil && resp.Halu.Verdict == Pass
				l := resp.Type != nil && resp.Type.Verdict == Pass
				if h {
					halu++
				}
				if l {
					label++
				}
				if qok && h && l {
					all++
				}
			}
		}
	}
	if r.Questions > 0 {
		r.Corr = float64(corr) / float64(r.Questions)
	}
	if r.Responses > 0 {
		r.Halu, r.Label, r.Overall = float64(halu)/float64(r.Responses), float64(label)/float64(r.Responses), float64(all)/float64(r.Responses)
	}
	return r
}

// MethodDepartures are where the construction is not the authors' whatever
// its settings (engine.Suite.Departures).
func (b *Builder) MethodDepartures() []string {
	if !b.cfg.Optimized || b.cfg.Corrector != "authors" {
		return nil
	}
	return []string{
		"rule optimisation: the authors' corrector rewrites a whole generation prompt; halu keeps from it what a rule set holds — requirements 1–4 of the question or response prompt (the question prompt's evidence and type requirements stay as written) or the blamed type's definition — and the candidates, rounds and early stop are halu's reading of §3.2",
	}
}

// The readers of the agents' and verifier's replies, each used by a run
// and by the reply corpus (runner/judging's TestReplyCorpus).

// VerifyReader reads a verification check (check: correct, halu, type).
func VerifyReader(lang, check string) func(raw string) (Verdict, error) {
	return func(raw string) (Verdict, error) { return ParseVerdict(lang, check, raw) }
}

// LabelReader reads the labelling agent's hallucination type, in the
// agents' format (json or text).
func LabelReader(lang, format string) func(raw string) (string, error) {
	return judging.ByFormat(format, func(raw string) (string, error) {
		var v struct {
			Label string `json:"label"`
		}
		if err := judging.DecodeJSON(raw, &v); err != nil {
			return "", err
		}
		return ParseLabel(lang, v.Label)
	}, func(raw string) (string, error) { return ParseLabel(lang, raw) })
}

// HaluAnswersReader reads n hallucinated responses asked for in one call.
func HaluAnswersReader(format string, n int) func(raw string) ([]string, error) {
	return judging.ByFormat(format, func(raw string) ([]string, error) {
		var v struct {
			Responses []string `json:"responses"`
		}
		if err := judging.DecodeJSON(raw, &v); err != nil {
			return nil, err
		}
		if len(v.Responses) != n {
			return nil, fmt.Errorf("%d responses, %d asked for", len(v.Responses), n)
		}
		for i, r := range v.Responses {
			t, err := ParseHaluAnswer(r)
			if err != nil {
				return nil, err
			}
			v.Responses[i] = t
		}
		return v.Responses, nil
	}, func(raw string) ([]string, error) { return ParseHaluAnswers(raw, n) })
}

// ConflictReader reads the generative judge's conflict verdict on response.
func ConflictReader(lang, response string) judging.Reader[Conflict] {
	return judging.Reader[Conflict]{
		Text:   func(raw string) (Conflict, error) { return ParseConflict(lang, raw) },
		Quoted: []string{response},
		Check:  true,
		Schema: json.RawMessage(conflictSchema),
	}
}

// CorrectionReader reads the authors' corrector's reply for part back
// into rules (Part.ReadCorrection), in a run and in the reply corpus.
func CorrectionReader(lang string, rules RuleSet, part Part, name string) func(raw string) (RuleSet, error) {
	return func(raw string) (RuleSet, error) { return part.ReadCorrection(lang, rules, raw, name) }
}
