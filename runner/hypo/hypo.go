// Package hypo is the TruthHypo suite with the KnowHD hallucination detector
// (Xiong et al., "Toward Reliable Scientific Hypothesis Generation:
// Evaluating Truthfulness and Hallucination in Large Language Models"):
// models hypothesise the relation between two biomedical entities from
// parametric knowledge alone, or with a knowledge graph (KG), PubMed
// literature (BM25) or both; the hypotheses are scored at link and relation
// level (§2.3), and KnowHD splits each hypothesis and its reasoning into
// claims and checks every claim against retrieved literature (eq. 1) and KG
// edges among the claim's entities (eq. 2); groundedness is the share of
// supported claims (eq. 3).
package hypo

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"halu/index"
	"halu/index/kg"
	"halu/localmodels"
	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/rundir"
	"halu/runner/setting"
)

//go:embed data/*.txt data/edges_test.tsv
var assets embed.FS

// blocks returns the prompt blocks of one authors' file (split on -----).
func blocks(name string) []string {
	b, err := assets.ReadFile("data/" + name)
	if err != nil {
		panic(err)
	}
	s := string(b)
	s = s[strings.Index(s, "\n")+1:] // source line
	var out []string
	for _, p := range strings.Split(s, "\n-----\n") {
		if p = strings.Trim(p, "\n"); strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return out
}

// Prompts are the authors' templates (src/agent/*.py, src/verifier/*.py).
type Prompts struct {
	System      string            // "You are a scientist. …generate a scientific hypothesis…"
	User        map[string]string // per setting
	Extract     map[string]string // entity extraction from the background, per KG setting
	VerifySys   map[string]string // per KnowHD source
	Verify      map[string]string
	Decompose   string // "### Statement {claims} Summarize the statement as a list of claims…"
	ClaimEntity string // "### Claim {claim} Extract key entities…"
}

// LoadPrompts reads the embedded templates. Messages are assembled as the
// authors' base agent does: the system block, then one user message.
func LoadPrompts() Prompts {
	p := Prompts{User: map[string]string{}, Extract: map[string]string{}, VerifySys: map[string]string{}, Verify: map[string]string{}}
	cot, kg, rag, ragkg := blocks("agent_cot.txt"), blocks("agent_kg.txt"), blocks("agent_rag.txt"), blocks("agent_rag_kg.txt")
	p.System = cot[0]
	p.User["parametric"], p.User["kg"], p.User["lit"], p.User["kg+lit"] = cot[1], kg[1], rag[1], ragkg[1]
	// Each agent asks with its own wording: "from the user input" (kg.py),
	// "from the background statement" (rag_kg.py).
	p.Extract["kg"], p.Extract["kg+lit"] = kg[2], ragkg[2]
	vk, vl, vkl := blocks("verifier_kg_verifier.txt"), blocks("verifier_rag_verifier.txt"), blocks("verifier_rag_kg_verifier.txt")
	p.VerifySys["kg"], p.VerifySys["lit"], p.VerifySys["kg+lit"] = vk[0], vl[0], vkl[0]
	p.Verify["kg"], p.Verify["lit"], p.Verify["kg+lit"] = vk[1], vl[1], vkl[1]
	p.Decompose = vkl[3]
	p.ClaimEntity = vkl[4]
	return p
}

// fill substitutes {{name}} and {name} placeholders.
func fill(t string, vals map[string]string) string { return engine.FillEither(t, vals) }

// Task names and their relation type in the data.
var Tasks = map[string]string{"chem-gene": "Chemical & Gene", "dis-gene": "Disease & Gene", "gene-gene": "Gene & Gene"}

// Labels returns a task's hypothesis labels, as the questions list them.
func Labels(relType string) []string {
	if relType == "Disease & Gene" {
		return []string{"stimulate", "inhibit", metrics.NoRelation}
	}
	return []string{"positive_correlate", "negative_correlate", metrics.NoRelation}
}

// Config is the suite's settings (declared in Settings).
type Config struct {
	Models    []string
	Knowledge []string
	Index     string
	KG        string
	// BelowPMID: documents and KG support strictly below (the authors'
	// code keeps PMID < 36600000).
	BelowPMID uint64
	Tasks     []string
	Limit     int // items per task, 0 = all
	// Sample is how --limit draws: "stratified" (a seeded sample of each
	// task keeping its labels' shares) or "first" (the first rows of the
	// file, which is sorted by label).
	Sample    string
	Seed      int
	MaxTokens int
	// KnowHD sources to check groundedness against: kg, lit, kg+lit.
	KnowHD   []string
	Verifier string  // the KnowHD verifier; VerifierSelf: each generator
	MinScore float64 // τ of eq. 1
	// Candidates sampled per item for the selection comparison (§4.4).
	Candidates  int
	Temperature float64
	Data        string
	Open        string // open-ended backgrounds (§5)
	// VerifierMaxTokens caps the verifier's replies: entity extraction,
	// claim decomposition and, in text form, its support verdicts (the
	// authors' call_llm: 2,048 for every call).
	VerifierMaxTokens int
	// VerdictFormat is how KnowHD asks for a support verdict: "text" (the
	// authors: their prompt as it is, a free reply; the authors' rule, "1"
	// anywhere in it, is read beside the careful reading) or "json"
	// (structured output capped at 32 tokens).
	VerdictFormat string
	// HypothesisFormat is how a hypothesis is asked for: "free" (the
	// paper: the authors' prompt, a free reply whose proposed_hypothesis is
	// read for its label) or "labels" (the same prompt, the reply held by
	// structured output to {"proposed_hypothesis": LABEL} with LABEL one of
	// the task's labels — lm-eval's constrained choice: every reply states
	// one, no reasoning is written; for models that do not follow the
	// prompt's format, a departure from the paper named in the run).
	HypothesisFormat string
	// Protocol is setting.ProtocolPaper (the default: the authors' code's
	// values) or setting.ProtocolHalu (textbook BM25, KG chains ranked by
	// their supporting articles).
	Protocol string
	// BM25 is "pyserini" (k1 0.9, b 0.4: the authors' retriever) or
	// "textbook" (k1 1.2, b 0.75); τ (MinScore) is on this scale.
	BM25 string
	// KGChains is how the 32 KG lines are chosen among the chains found:
	// "sampled" (a seeded random sample, as the authors' code) or
	// "ranked" (by supporting articles).
	KGChains string
	// KGContext is what the hypothesis agents' KG lines are: "chains"
	// (the authors' code: chains that follow edges x → y, one per line)
	// or "edges" (the edges of chains walked either way, one per line).
	KGContext string
	// ClaimNodes is how KnowHD finds a claim's graph nodes from the
	// entities extracted from it: "bm25" (the authors' code: the top
	// node_k = 100 nodes per entity by BM25) or "exact" (the entity's id
	// or one of its names, exactly).
	ClaimNodes string
	// KnowledgeFit is how the hypothesis prompts meet the context window:
	// "all" (the paper: the run's window is sized to show every document
	// and KG line; a model that cannot hold them is refused before the
	// first call) or "drop" (what does not fit the window asked is left
	// out, counted).
	KnowledgeFit string
	// ClaimFallback is how KnowHD gets claims when the decomposer's reply
	// holds no claim list: "lines" (the authors' code splits the
	// statement into its lines) or "sentences" (halu: its sentences of
	// three words or more).
	ClaimFallback string
	// Unreadable is how a hypothesis whose label cannot be read counts in
	// F1 and accuracy: "wrong" (the paper's measures are over every item:
	// it matches no relation label and predicts no link) or "unscored"
	// (halu's: left out, counted).
	Unreadable string
}

// uses reports whether a knowledge setting or a KnowHD source of the run
// retrieves from the KG ("kg") or the literature ("lit").
func (c *Config) uses(source string) bool {
	for _, st := range append(append([]string(nil), c.Knowledge...), c.KnowHD...) {
		if strings.Contains(st, source) {
			return true
		}
	}
	return false
}

// knowhdUses reports whether a KnowHD source of the run retrieves from
// source ("kg" or "lit"); agentsUse whether a knowledge setting of the
// hypothesis agents does.
func (c *Config) knowhdUses(source string) bool {
	return slices.ContainsFunc(c.KnowHD, func(k string) bool { return strings.Contains(k, source) })
}

func (c *Config) agentsUse(source string) bool {
	return slices.ContainsFunc(c.Knowledge, func(k string) bool { return strings.Contains(k, source) })
}

// Settings declares the suite's settings, with the authors' parameters:
// the PMID cutoff 36600000, the generation cap 2,048 (their call_llm's
// max_new_tokens), five sampled candidates beside the greedy hypothesis
// (§4.4), pyserini's BM25, KG chains sampled. Retrieval settings bear on a
// run only when a setting retrieves.
func (c *Config) Settings() setting.List {
	kg := func() bool { return c.uses("kg") }
	lit := func() bool { return c.uses("lit") }
	knowhdLit := func() bool { return c.knowhdUses("lit") }
	knowhdKG := func() bool { return c.knowhdUses("kg") }
	agentKG := func() bool { return c.agentsUse("kg") }
	return setting.List{
		setting.Strings("models", &c.Models, "hypothesis generators").As(setting.Subject).Models().Required(),
		setting.Choices("setting", &c.Knowledge, "knowledge settings: parametric, kg, lit, kg+lit", "parametric", "kg", "lit", "kg+lit").As(setting.Subject),
		setting.String("index", &c.Index, "literature index directory (halu index build)").As(setting.Data).Path().When(lit),
		setting.String("kg", &c.KG, "knowledge-graph directory (halu kg import)").As(setting.Data).Path().When(kg),
		setting.Uint64("max-pmid", &c.BelowPMID, "knowledge cutoff: only articles with PMID < N (strictly, as the authors' code)").Paper("36600000"),
		setting.Choices("tasks", &c.Tasks, "tasks: chem-gene, dis-gene, gene-gene", "chem-gene", "dis-gene", "gene-gene").As(setting.Data),
		setting.Int("limit", &c.Limit, "items per task (0: all): a seeded sample keeping each label's share, listed in the manifest").As(setting.Data).Min(0),
		setting.Choice("sample", &c.Sample, "how --limit draws: stratified (seeded, each label keeps its share) or first (the file's first rows, sorted by label)", "stratified", "first").As(setting.Data),
		setting.Int("seed", &c.Seed, "seed (candidate i uses seed+i; KG edge sampling; the --limit sample)").As(setting.Draw),
		setting.Int("max-tokens", &c.MaxTokens, "generation cap (num_predict)").Paper("2048").Min(1),
		setting.Choices("knowhd", &c.KnowHD, "KnowHD sources: kg, lit, kg+lit", "kg", "lit", "kg+lit").As(setting.Subject),
		setting.String("verifier", &c.Verifier, "model that splits claims and judges support for KnowHD, the same for every generator as the authors' (self: each generator checks its own claims, named in the run)").As(setting.Instrument).Models().Unset("none").When(func() bool { return len(c.KnowHD) > 0 }).Check(func() error {
			if len(c.KnowHD) > 0 && c.Verifier == "" {
				return fmt.Errorf("--knowhd needs a verifier: the authors check every generator's claims with one fixed model; name it (--verifier MODEL), or pass --verifier %s to let each generator check its own claims", VerifierSelf)
			}
			return nil
		}),
		setting.Float("min-score", &c.MinScore, "τ: keep only documents with BM25 ≥ τ for claim checks (eq. 1)").Min(0).
			Assumed("eq. 1's τ is not printed").When(knowhdLit),
		setting.Int("candidates", &c.Candidates, "sampled hypotheses per item beside the greedy one, for the selection comparison (Fig. 4; the paper: 5; 0: greedy only)").Paper("5").Min(0),
		setting.Float("candidate-temperature", &c.Temperature, "temperature of sampled candidates").Min(0).
			Assumed("the authors' code samples candidates at a temperature above 0 it does not record").When(func() bool { return c.Candidates > 0 || c.Open != "" }),
		setting.String("data", &c.Data, "TruthHypo-format TSV (default: the bundled 2,024 test items)").As(setting.Data).Path().Unset("the bundled edges_test.tsv (the authors' 2,024 test items)"),
		setting.String("open", &c.Open, "open-ended mode: JSONL of {id, background}; 5 hypotheses each, ranked by groundedness").As(setting.Data).Path().Unset("none"),
		setting.Int("verifier-max-tokens", &c.VerifierMaxTokens, "cap for the verifier's replies (entity extraction, claim decomposition, text verdicts)").Min(1).
			Paper("2048").Halu("512").When(func() bool { return len(c.KnowHD) > 0 }),
		setting.Choice("verdict-format", &c.VerdictFormat, "KnowHD support verdicts: text (the authors' prompt, a free reply; their rule — \"1\" anywhere — read beside the careful reading) or json (structured output, 32 tokens)", "text", "json").
			Paper("text").Halu("json").When(func() bool { return len(c.KnowHD) > 0 }),
		setting.Protocol(&c.Protocol, "textbook BM25, KG chains ranked by support"),
		setting.Choice("bm25", &c.BM25, "BM25 parameters: pyserini (k1 0.9, b 0.4: the authors' retriever) or textbook (k1 1.2, b 0.75); τ is on this scale", "pyserini", "textbook").
			Paper("pyserini").Halu("textbook").When(func() bool { return lit() || knowhdKG() && c.ClaimNodes == "bm25" }),
		setting.Choice("kg-chains", &c.KGChains, "which 32 KG lines are shown: sampled (a seeded random sample of the chains, the authors' code) or ranked (by supporting articles)", "sampled", "ranked").
			Paper("sampled").Halu("ranked").When(kg),
		setting.Choice("kg-context", &c.KGContext, "the hypothesis agents' KG lines: chains (the authors' code: chains of at most 2 edges that follow edges x → y, one chain per line, at most 32) or edges (the edges of chains walked either way, each once, at most 32)", "chains", "edges").
			Paper("chains").Halu("edges").When(agentKG),
		setting.Choice("claim-nodes", &c.ClaimNodes, "how KnowHD finds a claim's graph nodes: bm25 (the authors' code: per extracted entity, the top 100 nodes by BM25 over each node's type, concept id and names, with --bm25's parameters) or exact (the entity's id or one of its names, exactly)", "bm25", "exact").
			Paper("bm25").Halu("exact").When(knowhdKG),
		setting.Choice("knowledge-fit", &c.KnowledgeFit, "all (the paper: the run's context window is sized to show the 32 documents and KG lines whole; a model whose context cannot hold them is refused before the first call) or drop (leave out what does not fit --num-ctx, counted)", "all", "drop").
			Paper("all").When(func() bool { return kg() || lit() }),
		setting.Choice("claim-fallback", &c.ClaimFallback, "KnowHD's claims when the decomposer's reply holds no claim list: lines (the authors' code: the statement's lines) or sentences (its sentences of three words or more)", "lines", "sentences").
			Paper("lines").Halu("sentences").When(func() bool { return len(c.KnowHD) > 0 }),
		setting.Choice("unreadable", &c.Unreadable, "how a hypothesis whose label cannot be read counts in F1 and accuracy: wrong (the paper: every item counts; it matches no label and predicts no link) or unscored (left out, counted)", "wrong", "unscored").
			Paper("wrong").Halu("unscored"),
		setting.Choice("hypothesis-format", &c.HypothesisFormat, "free (the paper: the authors' prompt and a free reply, read for its label) or labels (structured output holds the reply to {\"proposed_hypothesis\": LABEL}, LABEL one of the task's labels: every reply states one and none reasons; for models that do not follow the prompt's format; not with --knowhd or --open)", "free", "labels").
			Paper("free").Check(func() error {
			if c.HypothesisFormat == "labels" && (len(c.KnowHD) > 0 || c.Open != "") {
				return errors.New("labels holds a hypothesis to a bare label: KnowHD has no claims to check in it and an open-ended background has no labels (use free)")
			}
			return nil
		}),
	}
}

// MarshalJSON encodes the config by its settings.
func (c Config) MarshalJSON() ([]byte, error) { return c.Settings().MarshalJSON() }

// UnmarshalJSON reads a config MarshalJSON wrote.
func (c *Config) UnmarshalJSON(b []byte) error { return c.Settings().UnmarshalJSON(b) }

// DefaultConfig is the paper's protocol.
func DefaultConfig() Config {
	return Config{Protocol: setting.ProtocolPaper, Knowledge: []string{"parametric"}, BelowPMID: 36600000, Tasks: []string{"chem-gene", "dis-gene", "gene-gene"},
		Seed: 0, MaxTokens: 2048, Candidates: 5, Temperature: 0.7, VerifierMaxTokens: 2048, VerdictFormat: "text", Sample: "stratified", BM25: "pyserini", KGChains: "sampled", KGContext: "chains", ClaimNodes: "bm25", Unreadable: "wrong", KnowledgeFit: "all", ClaimFallback: "lines",
		HypothesisFormat: "free"}
}

// paper is the publication the suite implements (engine.Suite.Paper).
const paper = "Xiong et al., \"Toward Reliable Scientific Hypothesis Generation: Evaluating Truthfulness and Hallucination in Large Language Models\" (TruthHypo, KnowHD); the authors' code: github.com/Teddy-XiongGZ/TruthHypo"

// suiteName is the suite's name: its declaration's and its Task's.
const suiteName = "hypo"

// Declaration declares the suite to the registry.
var Declaration = engine.Declare(suiteName, "TruthHypo: biomedical hypotheses with KG and PubMed knowledge; KnowHD groundedness",
	DefaultConfig, New, migrate)

// migrate brings a config of run format 1 up to date: the knowledge
// settings were "settings", and empty values were what a run did before
// those settings existed (the first rows, textbook BM25, chains ranked).
func migrate(format int, cfg map[string]json.RawMessage) error {
	if format < 2 {
		engine.Rename(cfg, "settings", "setting")
		engine.DefaultTo(cfg, "protocol", `"paper"`)
		engine.DefaultTo(cfg, "sample", `"first"`)
		engine.DefaultTo(cfg, "bm25", `"textbook"`)
		engine.DefaultTo(cfg, "kg_chains", `"ranked"`)
	}
	if format < 3 {
		// Format 2 left unreadable hypotheses out of F1 and accuracy, and
		// left out the knowledge that did not fit --num-ctx.
		engine.DefaultTo(cfg, "unreadable", `"unscored"`)
		engine.DefaultTo(cfg, "knowledge_fit", `"drop"`)
		// and asked for JSON support verdicts.
		engine.DefaultTo(cfg, "verdict_format", `"json"`)
	}
	if format < 4 {
		// Format 3 fell back to sentences when no claim list was read.
		engine.DefaultTo(cfg, "claim_fallback", `"sentences"`)
	}
	if format < 5 {
		// Format 4 showed the edges of chains walked either way, and
		// looked a claim's entities up exactly.
		engine.DefaultTo(cfg, "kg_context", `"edges"`)
		engine.DefaultTo(cfg, "claim_nodes", `"exact"`)
	}
	return nil
}

// bm25 is the run's BM25 parameters.
func (s *Suite) bm25() index.BM25Params {
	if s.cfg.BM25 == "pyserini" {
		return index.PyseriniBM25
	}
	return index.TextbookBM25
}

// Retrieval sizes from the authors' code.
const (
	litK       = 32  // documents shown to the hypothesis agent
	maxKGEdges = 32  // KG lines shown (max_n_edges): chains or edges
	nodeK      = 100 // KG nodes per claim entity by BM25 (node_k)
	maxHops    = 2   // chain length
	claimK     = 8   // documents per claim
	edgeK      = 100 // KG edges per claim (seeded sample above)
	maxClaims  = 10  // the code checks the last 10 claims
	// verifyMaxTokens caps a support verdict held to its schema
	// ({"groundness": 1}: under 10 tokens of a BPE vocabulary, 17 of a
	// byte-level one, whose every character is a token — 16 cut it before
	// its closing brace). The schema ends the reply; the cap only stops a
	// runaway.
	verifyMaxTokens = 32
)

// Suite is TruthHypo + KnowHD.
type Suite struct {
	cfg     Config
	items   []TestItem
	open    []OpenInput
	prompts Prompts

	once   sync.Once
	lit    index.Searcher
	kg     *kg.KG
	optErr error
}

// OpenInput is one free-text background for open-ended generation.
type OpenInput struct {
	ID         string `json:"id"`
	Background string `json:"background"`
}

// New checks cfg and loads the items.
func New(cfg Config) (*Suite, error) {
	if err := cfg.Settings().Validate(); err != nil {
		return nil, fmt.Errorf("hypo: %w", err)
	}
	if len(cfg.Knowledge) == 0 && cfg.Open == "" {
		return nil, errors.New("hypo: --setting names no knowledge setting")
	}
	if cfg.uses("kg") && cfg.KG == "" {
		return nil, errors.New("hypo: a kg setting needs --kg DIR (build one with `halu kg import`)")
	}
	if cfg.uses("lit") && cfg.Index == "" {
		return nil, errors.New("hypo: a lit setting needs --index DIR (build one with `halu index build`)")
	}
	s := &Suite{cfg: cfg, prompts: LoadPrompts()}
	if cfg.Open != "" {
		b, err := os.ReadFile(cfg.Open)
		if err != nil {
			return nil, fmt.Errorf("hypo --open: %w", err)
		}
		if s.open, err = readOpen(cfg.Open, b); err != nil {
			return nil, err
		}
		return s, nil
	}
	all, err := LoadTestItems(cfg.Data)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, t := range cfg.Tasks {
		rt, ok := Tasks[t]
		if !ok {
			return nil, fmt.Errorf("hypo: task %q (want chem-gene, dis-gene, gene-gene)", t)
		}
		want[rt] = true
	}
	byTask := map[string][]TestItem{}
	for _, it := range all {
		if want[it.RelType] {
			byTask[it.RelType] = append(byTask[it.RelType], it)
		}
	}
	for _, t := range cfg.Tasks {
		items := byTask[Tasks[t]]
		switch {
		case cfg.Limit <= 0 || cfg.Limit >= len(items):
		case s.cfg.Sample == "first":
			items = items[:cfg.Limit]
		default:
			items = engine.StratifiedSample(items, cfg.Limit, cfg.Seed, func(it TestItem) string { return it.Relation })
		}
		s.items = append(s.items, items...)
		delete(byTask, Tasks[t]) // a task named twice is run once
	}
	if len(s.items) == 0 {
		return nil, rundir.BadInput(cmp.Or(cfg.Data, "edges_test.tsv (bundled)"), 0, "no test items of the tasks asked for (%s)", strings.Join(cfg.Tasks, ", "))
	}
	return s, nil
}

// readOpen reads open-ended inputs (--open): one {"id", "background"} per
// line, the background text, every ID once (a line's number when it has
// none).
func readOpen(name string, b []byte) ([]OpenInput, error) {
	var out []OpenInput
	seen := rundir.IDs{}
	for i, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var in OpenInput
		if err := json.Unmarshal([]byte(l), &in); err != nil {
			return nil, rundir.BadInput(name, i+1, "want {\"id\", \"background\"}: %v", err)
		}
		if err := rundir.CheckText("background", in.Background); err != nil {
			return nil, rundir.BadInput(name, i+1, "%v", err)
		}
		if in.ID == "" {
			in.ID = fmt.Sprint(i + 1)
		}
		if err := seen.Add(name, i+1, "id", in.ID); err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	if len(out) == 0 {
		return nil, rundir.BadInput(name, 0, "no inputs (one {\"id\", \"background\"} per line)")
	}
	return out, nil
}

// Sample lists the drawn test items (task/x_id/y_id) of a run on a sample.
func (s *Suite) Sample() []string {
	if s.cfg.Limit <= 0 || s.cfg.Open != "" {
		return nil
	}
	out := make([]string, len(s.items))
	for i, it := range s.items {
		out[i] = taskName(it.RelType) + "/" + it.XID + "/" + it.YID
	}
	return out
}

func (s *Suite) stores() error {
	s.once.Do(func() {
		if s.cfg.Index != "" {
			l, err := index.OpenLiterature(s.cfg.Index, false)
			if err != nil {
				s.optErr = err
				return
			}
			s.lit = l
			if why := l.Unfinished(); why != "" {
				s.optErr = fmt.Errorf("%w: %s", index.ErrUnfinished, why)
				return
			}
			// Every segment against its checksum, before the first call:
			// a damaged index is refused, never read as other text.
			if err := l.Verify(context.Background()); err != nil {
				s.optErr = err
				return
			}
		}
		if s.cfg.KG != "" {
			g, err := kg.Open(s.cfg.KG, false)
			if err != nil {
				s.optErr = err
				return
			}
			s.kg = g
		}
	})
	return s.optErr
}

// Close closes the index and the knowledge graph.
// Close closes the stores the suite opened; a second Close does nothing.
func (s *Suite) Close() error {
	if s.lit != nil {
		s.lit.Close()
		s.lit = nil
	}
	if s.kg != nil {
		s.kg.Close()
		s.kg = nil
	}
	return nil
}

// Task is TruthHypo with KnowHD as the engine runs it: every part it has.
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
		Window:       s.Window,
		MetricNames:  s.MetricNames,
		OtherReading: s.OtherReading,
		Flag:         s.Flag,
		Outcomes:     s.Outcomes,
		Close:        s.Close,
	}
}

// MetricNames are the last parts of the summary's keys (engine.Suite.MetricNames):
// MODEL/SETTING/TASK.NAME and MODEL/SETTING.NAME, one groundedness per
// KnowHD source.
func (s *Suite) MetricNames() []string {
	out := []string{"f1", "accuracy", "avg_f1", "avg_accuracy"}
	for _, src := range s.cfg.KnowHD {
		out = append(out, "groundedness_"+src)
	}
	return out
}

func (s *Suite) Models() []string {
	m := append([]string(nil), s.cfg.Models...)
	if s.cfg.Verifier != "" && s.cfg.Verifier != VerifierSelf {
		m = append(m, s.cfg.Verifier)
	}
	return m
}

// Prompts records the templates in the manifest.
func (s *Suite) Prompts() map[string]rundir.PromptInfo {
	out := map[string]rundir.PromptInfo{}
	add := func(n, t string) {
		out[n] = rundir.PromptInfo{Source: "github.com/Teddy-XiongGZ/TruthHypo", Text: t}
	}
	add("system", s.prompts.System)
	for k, v := range s.prompts.User {
		add("user_"+k, v)
	}
	for k, v := range s.prompts.Verify {
		add("verify_"+k, v)
		add("verify_system_"+k, s.prompts.VerifySys[k])
	}
	for k, v := range s.prompts.Extract {
		add("extract_entities_"+k, v)
	}
	add("decompose_claims", s.prompts.Decompose)
	add("claim_entities", s.prompts.ClaimEntity)
	return out
}

func (s *Suite) Datasets() []string {
	var d []string
	for _, p := range []string{s.cfg.Data, s.cfg.Open} {
		if p != "" {
			d = append(d, p)
		}
	}
	if s.cfg.KG != "" {
		// The graph by its digest (the checksum its import sealed): a
		// resume with another graph at the same path is refused. (A graph
		// without one is refused when it is opened, with the reason.)
		if p := kg.ChecksumPath(s.cfg.KG); fileExists(p) {
			d = append(d, p)
		}
	}
	if s.cfg.Index != "" && (s.cfg.uses("lit") || s.cfg.knowhdUses("lit")) {
		// The literature index by its seal (its live segments and their
		// checksums, written when its build ended): a resume, rerun or
		// merge with another index at the same path is refused. (An index
		// without one is refused when it is opened, with the reason.)
		if p := index.SealPath(s.cfg.Index); fileExists(p) {
			d = append(d, p)
		}
	}
	return d
}

type payload struct {
	model, setting string
	// item is the test item (the suite's own, shared by every model's and
	// setting's payload of it), open the open-ended input: one is set.
	item *TestItem
	open *OpenInput
}

// background is what the hypothesis is asked about: the open-ended
// input's background, or the test item's question.
func (p payload) background() string {
	if p.open != nil {
		return p.open.Background
	}
	return p.item.Question
}

func taskName(relType string) string {
	for k, v := range Tasks {
		if v == relType {
			return k
		}
	}
	return relType
}

// Items: one per (model, setting, test item), or per (model, setting, open
// input) in open-ended mode.
func (s *Suite) Items(context.Context) ([]engine.Item, error) {
	// The index and the graph open before the first model call: an
	// unfinished index build is an error now, not after generations.
	if err := s.stores(); err != nil {
		return nil, err
	}
	var items []engine.Item
	for _, m := range s.cfg.Models {
		for _, st := range s.cfg.Knowledge {
			if s.cfg.Open != "" {
				for i := range s.open {
					in := s.open[i]
					items = append(items, engine.Item{ID: fmt.Sprintf("%s/%s/open/%s", m, st, in.ID), Payload: payload{model: m, setting: st, open: &in}, Group: m})
				}
				continue
			}
			for i := range s.items {
				it := &s.items[i]
				items = append(items, engine.Item{ID: fmt.Sprintf("%s/%s/%s/%s/%s", m, st, taskName(it.RelType), it.XID, it.YID), Payload: payload{model: m, setting: st, item: it}, Group: m})
			}
		}
	}
	return items, nil
}

// Result is the record data of one item.
type Result struct {
	Model      string       `json:"model"`
	Setting    string       `json:"setting"`
	Task       string       `json:"task,omitempty"`
	XID        string       `json:"x_id,omitempty"`
	YID        string       `json:"y_id,omitempty"`
	Gold       string       `json:"gold,omitempty"`
	OpenID     string       `json:"open_id,omitempty"`
	Knowledge  Knowledge    `json:"knowledge"`
	Greedy     *Hypothesis  `json:"greedy,omitempty"`
	Candidates []Hypothesis `json:"candidates,omitempty"`
	Majority   string       `json:"majority,omitempty"`
	MajTie     bool         `json:"majority_tie,omitempty"`
}

// Knowledge is what the hypothesis agent was shown.
type Knowledge struct {
	PMIDs    []uint64 `json:"pmids,omitempty"`
	Entities []string `json:"entities,omitempty"`
	Nodes    []string `json:"nodes,omitempty"`
	Edges    []string `json:"edges,omitempty"`
	// KGSource is where the KG lines came from: "chains" between the
	// nodes, or "nodes" (no chain linked any two: the nodes' own edges,
	// the authors' fallback).
	KGSource string `json:"kg_source,omitempty"`
	// Fit is what of the retrieved knowledge the prompt held.
	Fit Fit `json:"fit"`
}

// Fit records how retrieved knowledge was fitted to a model's context
// window: documents and KG lines kept and dropped (from the end of their
// ranking), and whether the prompt was too long even without them (then
// the server cut it).
type Fit struct {
	DocsKept     int  `json:"docs_kept"`
	DocsDropped  int  `json:"docs_dropped,omitempty"`
	EdgesKept    int  `json:"edges_kept"`
	EdgesDropped int  `json:"edges_dropped,omitempty"`
	Overflow     bool `json:"overflow,omitempty"`
}

// fitKnowledge keeps the leading KG lines and documents that fit a prompt
// to model (system messages and a user template filled from vals, with
// the edges under edgeKey and the documents under docKey) beside
// numPredict reply tokens, KG lines first (they are short); it fills vals
// with what is kept and returns it with the counts. With nothing
// retrieved it asks nothing of the model.
func (s *Suite) fitKnowledge(ctx context.Context, c *engine.Calls, model string, system []string, tmpl string, vals map[string]string,
	edgeKey string, edges []string, docKey string, hits []index.Hit, numPredict int) ([]string, []index.Hit, Fit, error) {
	var fit Fit
	vals[edgeKey], vals[docKey] = "", ""
	if len(edges) == 0 && len(hits) == 0 {
		return nil, nil, fit, nil
	}
	fixed := func() string {
		return strings.Join(append(append([]string(nil), system...), fill(tmpl, vals)), "\n")
	}
	ke, okE, err := c.Fit(ctx, model, fixed(), edges, numPredict)
	if err != nil {
		return nil, nil, fit, err
	}
	fit.EdgesKept, fit.EdgesDropped = ke, len(edges)-ke
	edges = edges[:ke]
	vals[edgeKey] = strings.Join(edges, "\n")
	docs := make([]string, len(hits))
	for i := range hits {
		docs[i] = renderDocs(hits[i : i+1])
	}
	kd, okD, err := c.Fit(ctx, model, fixed(), docs, numPredict)
	if err != nil {
		return nil, nil, fit, err
	}
	fit.DocsKept, fit.DocsDropped, fit.Overflow = kd, len(hits)-kd, !okE || !okD
	hits = hits[:kd]
	vals[docKey] = renderDocs(hits)
	return edges, hits, fit, nil
}

// Hypothesis is one generated hypothesis and its KnowHD checks.
type Hypothesis struct {
	Sample    int                   `json:"sample"`
	Raw       string                `json:"raw"`
	Statement string                `json:"statement"`
	Label     string                `json:"label,omitempty"`
	Parsed    bool                  `json:"parsed"`
	Grounding map[string]*Grounding `json:"grounding,omitempty"`
	// Confidence is how sure the model was of the hypothesis, from its
	// tokens' log-probabilities (--logprobs N; nil when not asked).
	Confidence *metrics.TokenConfidence `json:"confidence,omitempty"`
}

// Grounding is KnowHD's verdict for one knowledge source.
type Grounding struct {
	Claims         []ClaimCheck `json:"claims"`
	Groundedness   float64      `json:"groundedness"`
	Scored         bool         `json:"scored"`
	ClaimsFallback bool         `json:"claims_fallback,omitempty"`
}

// ClaimCheck is one claim, what was retrieved for it and the verdict.
type ClaimCheck struct {
	Claim     string   `json:"claim"`
	PMIDs     []uint64 `json:"pmids,omitempty"`
	Edges     int      `json:"edges"`
	Scored    bool     `json:"scored"`
	Supported bool     `json:"supported"`
	// Other is the verdict the reader that did not decide read in the
	// same reply (the authors' rule under the default readers), kept only
	// when they differ; OtherUnread when it read none.
	Other       *bool `json:"other_supported,omitempty"`
	OtherUnread bool  `json:"other_unread,omitempty"`
	// Fit is what of the claim's evidence the verifier's prompt held.
	Fit Fit `json:"fit"`
}

func (s *Suite) Process(ctx context.Context, c *engine.Calls, it engine.Item) (any, error) {
	if err := s.stores(); err != nil {
		return nil, err
	}
	p := it.Payload.(payload)
	res := Result{Model: p.model, Setting: p.setting}
	background := p.background()
	var labels []string
	if p.open != nil {
		res.OpenID = p.open.ID
	} else {
		res.Task, res.XID, res.YID, res.Gold = taskName(p.item.RelType), p.item.XID, p.item.YID, p.item.Relation
		labels = Labels(p.item.RelType)
	}
	vals := map[string]string{"background": background}
	var hits []index.Hit
	if strings.Contains(p.setting, "lit") {
		var err error
		hits, err = s.lit.Search(ctx, background, index.SearchOptions{K: litK, BelowPMID: s.cfg.BelowPMID, BM25: s.bm25()})
		if err != nil {
			return nil, err
		}
	}
	var edges []string
	if strings.Contains(p.setting, "kg") {
		var err error
		if edges, err = s.kgStep(ctx, c, p, background, &res.Knowledge); err != nil {
			return nil, err
		}
	}
	// The knowledge that fits the model's window: KG chains first (they
	// are short), then documents in rank order; what is left out is
	// recorded, never cut by the server from the prompt's beginning.
	edges, hits, fit, err := s.fitKnowledge(ctx, c, p.model, []string{s.prompts.System}, s.prompts.User[p.setting], vals,
		"knowledge", edges, "document", hits, s.cfg.MaxTokens)
	if err != nil {
		return nil, err
	}
	res.Knowledge.Edges, res.Knowledge.Fit = edges, fit
	for _, h := range hits {
		res.Knowledge.PMIDs = append(res.Knowledge.PMIDs, h.PMID)
	}
	user := fill(s.prompts.User[p.setting], vals)
	var format json.RawMessage
	if s.cfg.HypothesisFormat == "labels" {
		format = LabelSchema(labels)
	}
	gen := func(sample int, temp float64) (Hypothesis, error) {
		req := localmodels.ChatRequest{
			Model:    p.model,
			Messages: []localmodels.Message{{Role: "system", Content: s.prompts.System}, {Role: "user", Content: user}},
			Options: localmodels.Options{Temperature: localmodels.Float(temp), Seed: localmodels.Int(s.cfg.Seed + sample),
				NumPredict: localmodels.Int(s.cfg.MaxTokens)},
			Format: format,
		}
		out, err := c.Chat(ctx, "generate", req, sample)
		if err != nil {
			return Hypothesis{}, err
		}
		h := Hypothesis{Sample: sample, Raw: out.Content, Confidence: engine.ReplyConfidence(req, out)}
		if labels != nil {
			h.Statement, h.Label, h.Parsed = ParseHypothesis(out.Content, labels)
		} else {
			h.Statement, _, _ = ParseHypothesis(out.Content, []string{"\x00"})
			h.Parsed = h.Statement != ""
			if !h.Parsed {
				h.Statement = strings.TrimSpace(out.Content)
			}
		}
		if len(s.cfg.KnowHD) > 0 {
			h.Grounding = map[string]*Grounding{}
			for _, src := range s.cfg.KnowHD {
				g, err := s.knowHD(ctx, c, p.model, out.Content, src)
				if err != nil {
					return h, err
				}
				h.Grounding[src] = g
			}
		}
		return h, nil
	}
	if p.open == nil {
		g, err := gen(0, 0) // greedy
		if err != nil {
			return nil, err
		}
		res.Greedy = &g
	}
	n := s.cfg.Candidates
	if p.open != nil && n == 0 {
		n = 5
	}
	var votes []string
	for i := 1; i <= n; i++ {
		h, err := gen(i, s.cfg.Temperature)
		if err != nil {
			return nil, err
		}
		res.Candidates = append(res.Candidates, h)
		if h.Parsed && h.Label != "" {
			votes = append(votes, h.Label)
		}
	}
	if len(votes) > 0 {
		res.Majority, res.MajTie, _ = metrics.Majority(votes, labels)
	}
	if s.kg != nil {
		if err := s.kg.Err(); err != nil {
			return nil, err // a name or an edge this item used may be missing
		}
	}
	return res, nil
}

// kgStep is an item's knowledge-graph step: the entities the model
// extracts from the background, the graph's nodes for them (and for the
// question's two entities), and the KG lines found among them (chains, or
// the nodes' own edges), all recorded in k.
func (s *Suite) kgStep(ctx context.Context, c *engine.Calls, p payload, background string, k *Knowledge) ([]string, error) {
	ents, err := s.entities(ctx, c, p.model, fill(s.prompts.Extract[p.setting], map[string]string{"background": background}))
	if err != nil {
		return nil, err
	}
	k.Entities = ents
	nodes := s.nodes(ents)
	if p.open == nil {
		// The question names both entities by id; they are always nodes
		// to search from when the graph has them.
		for _, id := range []string{p.item.XID, p.item.YID} {
			if _, ok := s.kg.Node(id); ok && !contains(nodes, id) {
				nodes = append(nodes, id)
			}
		}
	}
	k.Nodes = nodes
	edges, source, err := s.kgKnowledge(nodes, background)
	k.KGSource = source
	if err == nil {
		err = s.kg.Err() // its lookups answer nothing once it is damaged
	}
	return edges, err
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func renderDocs(hits []index.Hit) string {
	var b strings.Builder
	for i, h := range hits {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[Title: %s] %s", h.Title, h.Abstract)
	}
	return b.String()
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
