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
	"bufio"
	"bytes"
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"halu/index"
	"halu/index/kg"
	"halu/localmodels"
	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/judging"
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
func fill(t string, vals map[string]string) string {
	var pairs []string
	for k, v := range vals {
		pairs = append(pairs, "{{"+k+"}}", v, "{"+k+"}", v)
	}
	return strings.NewReplacer(pairs...).Replace(t)
}

// Task names and their relation type in the data.
var Tasks = map[string]string{"chem-gene": "Chemical & Gene", "dis-gene": "Disease & Gene", "gene-gene": "Gene & Gene"}

// Labels returns a task's hypothesis labels, as the questions list them.
func Labels(relType string) []string {
	if relType == "Disease & Gene" {
		return []string{"stimulate", "inhibit", metrics.NoRelation}
	}
	return []string{"positive_correlate", "negative_correlate", metrics.NoRelation}
}

// TestItem is one TruthHypo question.
type TestItem struct {
	XID, YID, XType, YType, RelType, Relation, Question string
}

// LoadTestItems reads edges_test.tsv (x_id, y_id, x_type, y_type, rel_type,
// relation, question); path "" reads the bundled 2,024 items. Every value
// the scores depend on is checked (an rundir.InputError naming the line):
// the task is one of Tasks, its entity types are the task's, the gold
// relation is one of the task's labels, the IDs are "Type|ID" of those
// types, the question is text, and no pair of entities is asked twice in
// one task; a file without items is refused.
func LoadTestItems(path string) ([]TestItem, error) {
	var r io.Reader
	name := path
	if path == "" {
		b, _ := assets.ReadFile("data/edges_test.tsv")
		r, name = bytes.NewReader(b), "edges_test.tsv (bundled)"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("hypo data: %w", err)
		}
		defer f.Close()
		r = f
	}
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	var out []TestItem
	seen := rundir.IDs{}
	for line := 1; s.Scan(); line++ {
		if line == 1 || strings.TrimSpace(s.Text()) == "" {
			continue
		}
		c := strings.Split(s.Text(), "\t")
		if len(c) < 7 {
			return nil, rundir.BadInput(name, line, "%d columns, want 7 (x_id, y_id, x_type, y_type, rel_type, relation, question)", len(c))
		}
		it := TestItem{c[0], c[1], c[2], c[3], c[4], c[5], c[6]}
		if err := checkTestItem(it); err != nil {
			return nil, rundir.BadInput(name, line, "%v", err)
		}
		if err := seen.Add(name, line, "entity pair", taskName(it.RelType)+"/"+it.XID+"/"+it.YID); err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	if err := s.Err(); err != nil {
		return nil, rundir.BadInput(name, 0, "%v", err)
	}
	if len(out) == 0 {
		return nil, rundir.BadInput(name, 0, "no test items (a header line, then one item per line)")
	}
	return out, nil
}

// taskTypes are the entity types of each task's pair, as the questions
// name them (x first).
var taskTypes = map[string][2]string{"Chemical & Gene": {"Chemical", "Gene"}, "Disease & Gene": {"Disease", "Gene"}, "Gene & Gene": {"Gene", "Gene"}}

// checkTestItem refuses an item whose task, types, gold label, IDs or
// question the suite cannot score as the paper does.
func checkTestItem(it TestItem) error {
	types, ok := taskTypes[it.RelType]
	if !ok {
		return fmt.Errorf("rel_type %q is not a TruthHypo task (Chemical & Gene, Disease & Gene, Gene & Gene)", it.RelType)
	}
	if it.XType != types[0] || it.YType != types[1] {
		return fmt.Errorf("entity types %s and %s: task %q pairs %s and %s", it.XType, it.YType, it.RelType, types[0], types[1])
	}
	if !slices.Contains(Labels(it.RelType), it.Relation) {
		return fmt.Errorf("relation %q is not a label of task %q (%s)", it.Relation, it.RelType, strings.Join(Labels(it.RelType), ", "))
	}
	for _, p := range [][2]string{{it.XID, it.XType}, {it.YID, it.YType}} {
		typ, id, ok := strings.Cut(p[0], "|")
		if !ok || typ != p[1] || strings.TrimSpace(id) == "" {
			return fmt.Errorf("entity ID %q: want %s|ID", p[0], p[1])
		}
	}
	return rundir.CheckText("question", it.Question)
}

var (
	hypoKey    = regexp.MustCompile(`(?s)["']proposed_hypothesis["']\s*:\s*(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')`)
	hypoLine   = regexp.MustCompile(`(?im)^[\s\-*>#]*(?:proposed|final)[ _]hypothesis\s*:\s*(.+)$`)
	negationRE = regexp.MustCompile(`(?i)\b(?:not|no|never|neither|nor|without|cannot)\b|n't\b`)
)

// labelSynonyms maps verbs and their inflections, read as word stems in a
// normalised statement (lower case, spaces and hyphens as underscores), to
// the labels they state. A statement naming a label itself is read by the
// label; otherwise by these stems. Two labels, or a negation beside a
// directional label, are ambiguous: unparseable, never a guess.
var labelSynonyms = map[string][]string{
	"positive_correlate": {"positively_correlat", "positive_correlation", "upregulat", "up_regulat", "increas", "enhanc", "activat", "induc", "promot", "stimulat"},
	"negative_correlate": {"negatively_correlat", "negative_correlation", "downregulat", "down_regulat", "decreas", "reduc", "suppress", "inhibit", "attenuat", "block"},
	"stimulate":          {"stimulat", "upregulat", "up_regulat", "increas", "enhanc", "activat", "induc", "promot", "positively_correlat", "positive_correlat"},
	"inhibit":            {"inhibit", "suppress", "downregulat", "down_regulat", "decreas", "reduc", "attenuat", "block", "negatively_correlat", "negative_correlat"},
	metrics.NoRelation:   {"no_relation", "no_significant_relation", "not_related", "unrelated", "no_association", "no_direct_relation", "no_known_relation"},
}

// ParseHypothesis takes the proposed_hypothesis the output states (reasoning
// removed; the last JSON object with that key, also Python-style quoting;
// else a "Proposed hypothesis:" line) and maps it to exactly one of the
// task's labels: the labels themselves, spaces and hyphens read as
// underscores, else the verbs of labelSynonyms. None, several, or a
// directional label under negation ⇒ unparseable ("", false); the
// statement is returned either way.
func ParseHypothesis(output string, labels []string) (statement, label string, ok bool) {
	out := judging.StripReasoning(output)
	for _, obj := range judging.JSONObjects(out) {
		var v struct {
			H any `json:"proposed_hypothesis"`
		}
		if json.Unmarshal(obj, &v) == nil && v.H != nil {
			statement = fmt.Sprint(v.H)
		}
	}
	if statement == "" {
		if ms := hypoKey.FindAllStringSubmatch(out, -1); len(ms) > 0 {
			if m := ms[len(ms)-1]; m[1] != "" {
				_ = json.Unmarshal([]byte(`"`+m[1]+`"`), &statement) // a JSON string
			} else {
				statement = strings.ReplaceAll(m[2], `\'`, "'") // a Python one
			}
		}
	}
	if statement == "" {
		if ms := hypoLine.FindAllStringSubmatch(judging.Plain(out), -1); len(ms) > 0 {
			statement = strings.TrimSpace(ms[len(ms)-1][1])
		}
	}
	if statement == "" {
		return "", "", false
	}
	label, ok = HypothesisLabel(statement, labels)
	return statement, label, ok
}

// A direction set by a verb acting on a change ("prevents the decrease
// of X", "blocks the loss of", "attenuates the reduction in", "enhances the
// loss of") is the composition of the two: a verb that lowers what it acts
// on turns the change round. The verb's and the noun's stems alone would
// read the noun's direction, or both directions.
var (
	actingVerb    = regexp.MustCompile(`(?i)\b(?:(prevent|block|attenuat|revers|counteract|abolish|abrogat|rescu|mitigat|inhibit|suppress|reduc|ameliorat|antagoniz|diminish|lessen|alleviat|limit|decreas)|(increas|enhanc|promot|induc|stimulat|accelerat|exacerbat|aggravat|potentiat|augment|amplif))(?:e|es|ed|ing|s|ies|y)?\s+(?:the\s+|an?\s+|its\s+|their\s+)?(?:[\w-]+\s+){0,3}?(?:(decrease|decline|reduction|loss|depletion|down-?regulation|suppression|inhibition|deficiency)|(increase|elevation|rise|up-?regulation|induction|activation|accumulation|overexpression))\b`)
	directionWord = regexp.MustCompile(`(?i)correlat|regulat|increas|enhanc|activat|induc|promot|stimulat|decreas|reduc|suppress|inhibit|attenuat|block|prevent|revers|loss|declin|elevat`)
)

// composedLabel reads a direction set by a verb acting on a change (see
// actingVerb): ok is true when the statement holds exactly one such phrase,
// no other directional word and no negation; found is true when it holds
// one at all (the statement is then read by composition or not at all).
func composedLabel(statement string, labels []string) (label string, found, ok bool) {
	ms := actingVerb.FindAllStringSubmatchIndex(statement, -1)
	if len(ms) == 0 {
		return "", false, false
	}
	if len(ms) > 1 || negationRE.MatchString(statement) {
		return "", true, false
	}
	m := ms[0]
	rest := statement[:m[0]] + " " + statement[m[1]:]
	if directionWord.MatchString(rest) {
		return "", true, false
	}
	lowers, lowered := m[2] >= 0, m[6] >= 0
	positive := lowers == lowered // lowering a fall raises; raising a rise raises
	for _, l := range labels {
		switch {
		case positive && (l == "positive_correlate" || l == "stimulate"),
			!positive && (l == "negative_correlate" || l == "inhibit"):
			return l, true, true
		}
	}
	return "", true, false
}

// LabelSchema is the structured output of --hypothesis-format labels: the
// prompt's JSON object, its proposed_hypothesis one of labels.
func LabelSchema(labels []string) json.RawMessage {
	b, err := json.Marshal(map[string]any{
		"type":       "object",
		"properties": map[string]any{"proposed_hypothesis": map[string]any{"type": "string", "enum": labels}},
		"required":   []string{"proposed_hypothesis"},
	})
	if err != nil {
		panic(err) // strings only
	}
	return b
}

// HypothesisLabel maps a hypothesis statement to one of labels (see
// ParseHypothesis).
func HypothesisLabel(statement string, labels []string) (string, bool) {
	if l, found, ok := composedLabel(statement, labels); found {
		return l, ok
	}
	norm := strings.NewReplacer(" ", "_", "-", "_").Replace(strings.ToLower(statement))
	var found []string
	for _, l := range labels {
		if strings.Contains(norm, l) {
			found = append(found, l)
		}
	}
	if len(found) == 0 {
		for _, l := range labels {
			for _, stem := range labelSynonyms[l] {
				if strings.Contains(norm, stem) {
					found = append(found, l)
					break
				}
			}
		}
	}
	if len(found) != 1 {
		return "", false
	}
	if found[0] != metrics.NoRelation && negationRE.MatchString(statement) {
		return "", false
	}
	return found[0], true
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

// Declaration declares the suite to the registry.
var Declaration = engine.Declare("hypo", "TruthHypo: biomedical hypotheses with KG and PubMed knowledge; KnowHD groundedness",
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

func (s *Suite) Name() string { return "hypo" }

// MetricNames are the last parts of the summary's keys (summary.Measurer):
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
	item           TestItem
	open           *OpenInput
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
			for _, it := range s.items {
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
	background := p.item.Question
	var labels []string
	if p.open != nil {
		background, res.OpenID = p.open.Background, p.open.ID
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

// EntitySchema is the structured output of entity extraction.
const EntitySchema = `{"type":"object","properties":{"entities":{"type":"array","items":{"type":"string"}}},"required":["entities"]}`

// ClaimSchema is the structured output of claim decomposition.
const ClaimSchema = `{"type":"object","properties":{"claims":{"type":"array","items":{"type":"string"}}},"required":["claims"]}`

type entityList struct {
	Entities []string `json:"entities"`
}

type claimList struct {
	Claims []string `json:"claims"`
}

// Groundness is the KnowHD verifier's verdict on one claim (0 or 1).
type Groundness struct {
	Groundness *int `json:"groundness"`
}

// Validate requires 0 or 1.
func (g *Groundness) Validate() error {
	if g.Groundness == nil || (*g.Groundness != 0 && *g.Groundness != 1) {
		return errors.New("groundness must be 0 or 1")
	}
	return nil
}

var (
	groundLabel = judging.NewLabelled("groundness", `groundn?ess|groundedness`, `([01](?:[.,]\d+)?\b|zero\b|one\b)`).Sole()
	// groundIs is groundness stated in prose ("so groundness is 0"): it
	// must agree with the labelled statement.
	groundIs = regexp.MustCompile(`(?i)\bground(?:n?ess|edness)\s+(?:is|would be|should be|of)\s+["']?([01](?:[.,]\d+)?)\b`)
	listItem = regexp.MustCompile(`^\s*(?:[-*•]|\d+[.)])\s+(.+)$`)
)

// ParseGroundness is the text reader of a verifier reply whose JSON was not
// had: a reply that is only 0 or 1 (or whose first line is), or a labelled
// "groundness: 1" (also as a Python-style dict); every statement agrees. The authors' code counts a claim grounded when the
// character "1" appears anywhere in the reply; halu reads only the stated
// value.
func ParseGroundness(reply string) (Groundness, error) {
	s := strings.TrimSpace(judging.Plain(reply))
	if t := strings.Trim(s, " .\"'"); t == "0" || t == "1" {
		n := int(t[0] - '0')
		return Groundness{Groundness: &n}, nil
	}
	vals, _ := groundLabel.All(s)
	if first, _, _ := strings.Cut(s, "\n"); strings.Trim(first, " .\"'") == "0" || strings.Trim(first, " .\"'") == "1" {
		vals = append(vals, strings.Trim(first, " .\"'")) // "1" on a line of its own, the reasoning after it
	}
	for _, m := range groundIs.FindAllStringSubmatch(s, -1) {
		vals = append(vals, m[1])
	}
	vals = append(vals, groundLabel.Again(s)...)
	for i, v := range vals {
		switch strings.ToLower(v) {
		case "zero":
			vals[i] = "0"
		case "one":
			vals[i] = "1"
		}
	}
	if len(vals) == 0 {
		return Groundness{}, errors.New("no groundness stated")
	}
	for _, v := range vals {
		if v != "0" && v != "1" {
			return Groundness{}, fmt.Errorf("groundness %s is not 0 or 1", v)
		}
		if v != vals[0] {
			return Groundness{}, judging.TwoValues("two different groundness values (%s, %s)", vals[0], v)
		}
	}
	n := int(vals[0][0] - '0')
	return Groundness{Groundness: &n}, nil
}

// ParseList is the text reader of a list the verifier was asked to give as
// JSON (claims, entities): its bulleted or numbered lines, in order.
func ParseList(reply string) ([]string, error) {
	var out []string
	for _, l := range strings.Split(reply, "\n") {
		if m := listItem.FindStringSubmatch(l); m != nil {
			out = append(out, strings.TrimSpace(strings.ReplaceAll(m[1], "**", "")))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no bulleted or numbered list")
	}
	return out, nil
}

// ParseGroundnessPaper is the authors' reading of a support verdict: the
// claim is grounded when the character "1" appears anywhere in the reply
// (their code), else not. It reads every reply.
func ParseGroundnessPaper(reply string) (Groundness, error) {
	n := 0
	if strings.Contains(reply, "1") {
		n = 1
	}
	return Groundness{Groundness: &n}, nil
}

// GroundSchema is the verifier's structured output.
const GroundSchema = `{"type":"object","properties":{"groundness":{"type":"integer","enum":[0,1]}},"required":["groundness"]}`

// unreadWrong: an unreadable hypothesis counts as wrong (the paper).
func (c *Config) unreadWrong() bool { return c.Unreadable != "unscored" }

// VerifierSelf as --verifier lets each generator check its own claims
// (the authors fix one verifier for every generator; a run that does not
// says so in its notes).
const VerifierSelf = "self"

func (s *Suite) verifier(model string) string {
	if s.cfg.Verifier != "" && s.cfg.Verifier != VerifierSelf {
		return s.cfg.Verifier
	}
	return model
}

func (s *Suite) entities(ctx context.Context, c *engine.Calls, model, user string) ([]string, error) {
	v, ok, err := judging.JudgeAs(ctx, c, "entities", localmodels.ChatRequest{
		Model: model, Messages: []localmodels.Message{{Role: "user", Content: user}},
		Options: localmodels.Options{Temperature: localmodels.Float(0), Seed: localmodels.Int(s.cfg.Seed), NumPredict: localmodels.Int(s.cfg.VerifierMaxTokens)},
	}, json.RawMessage(EntitySchema), func(raw string) (entityList, error) {
		l, err := ParseList(raw)
		return entityList{Entities: l}, err
	})
	if err != nil || !ok {
		return nil, err
	}
	return v.Entities, nil
}

var parenID = regexp.MustCompile(`\(([^()]+)\)\s*$`)

// nodes finds the graph nodes entity strings name. The authors' format is
// "entity_type entity_name (entity_id if presented)": an id in parentheses is
// tried first (with the type), then the name without the type word.
func (s *Suite) nodes(ents []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, e := range ents {
		e = strings.TrimSpace(e)
		typ, rest, _ := strings.Cut(e, " ")
		if m := parenID.FindStringSubmatch(e); m != nil {
			id := kg.NormalizeID(typ, m[1])
			if _, ok := s.kg.Node(id); ok {
				add(id)
				continue
			}
			for _, n := range s.kg.Lookup(m[1]) {
				add(n.ID)
			}
			rest = strings.TrimSpace(parenID.ReplaceAllString(rest, ""))
		}
		found := false
		for _, cand := range []string{rest, e} {
			if cand == "" || found {
				continue
			}
			for _, n := range s.kg.Lookup(cand) {
				add(n.ID)
				found = true
			}
		}
	}
	return out
}

// claimNodes are the graph nodes of a claim's extracted entities (eq. 2's
// V(p)): under --claim-nodes bm25 (the authors' code) the top node_k = 100
// nodes of each entity string by BM25, under exact the nodes its id or
// names name (nodes).
func (s *Suite) claimNodes(ents []string) ([]string, error) {
	if s.cfg.ClaimNodes != "bm25" {
		return s.nodes(ents), nil
	}
	var out []string
	seen := map[string]bool{}
	for _, e := range ents {
		hits, err := s.kg.SearchNodes(e, nodeK, s.bm25())
		if err != nil {
			return nil, err
		}
		for _, h := range hits {
			if !seen[h.ID] {
				seen[h.ID] = true
				out = append(out, h.ID)
			}
		}
	}
	return out, nil
}

// EdgeSentence renders an edge as the authors do:
// {x type} {x mention} ({x id}) has the relation "{relation}" with {y type} {y mention} ({y id}).
func EdgeSentence(kg *kg.KG, e kg.Edge) string {
	part := func(id string) (string, string, string) {
		typ, cid, _ := strings.Cut(id, "|")
		name := cid
		if kg != nil {
			if n, ok := kg.Node(id); ok && n.Name != "" {
				name = n.Name
			}
		}
		return typ, name, cid
	}
	xt, xn, xi := part(e.Head)
	yt, yn, yi := part(e.Tail)
	return fmt.Sprintf("%s %s (%s) has the relation %q with %s %s (%s)", xt, xn, xi, e.Relation, yt, yn, yi)
}

// ChainSentence renders a chain on one line: its edges' sentences
// (EdgeSentence) joined by "; ". The authors' code that writes a chain is
// not published; this rendering is halu's (named in every run that shows
// chains).
func ChainSentence(g *kg.KG, c kg.Chain) string {
	parts := make([]string, len(c.Edges))
	for i, e := range c.Edges {
		parts[i] = EdgeSentence(g, e)
	}
	return strings.Join(parts, "; ")
}

// kgKnowledge renders the KG knowledge shown for nodes (the authors'
// max_n_edges 32, max_depth 2), at most 32 lines: under --kg-context chains
// (the authors'), the chains of at most 2 edges followed x → y from any
// node to any other, one per line; under edges, the edges of the chains
// walked either way between any two nodes, each edge once. When no chain
// links any two, the nodes' own edges (the authors' per-node fallback).
// Chains and fallback edges are taken in a random order seeded by the
// run's seed and key (kg-chains sampled, as the authors' code) or by
// supporting articles (ranked). It returns the lines and their source
// ("chains", "nodes", or "" for none).
func (s *Suite) kgKnowledge(nodes []string, key string) ([]string, string, error) {
	rng := rand.New(rand.NewPCG(uint64(s.cfg.Seed), fnv64(key)))
	limit := maxKGEdges
	if s.cfg.KGChains == "sampled" {
		limit = 0 // all, to sample from
	}
	directed := s.cfg.KGContext == "chains"
	var chains []kg.Chain
	for i := range nodes {
		for j := range nodes {
			var cs []kg.Chain
			var err error
			switch {
			case directed && i != j:
				cs, err = s.kg.ForwardChains(nodes[i], nodes[j], maxHops, limit, s.cfg.BelowPMID)
			case !directed && i < j:
				cs, err = s.kg.Chains(nodes[i], nodes[j], maxHops, limit, s.cfg.BelowPMID)
			}
			if err != nil {
				return nil, "", err
			}
			chains = append(chains, cs...)
		}
	}
	var out []string
	seen := map[string]bool{}
	addLine := func(line string) {
		if !seen[line] && len(out) < maxKGEdges {
			seen[line] = true
			out = append(out, line)
		}
	}
	add := func(es []kg.Edge) {
		for _, e := range es {
			addLine(EdgeSentence(s.kg, e))
		}
	}
	if len(chains) > 0 {
		if s.cfg.KGChains == "sampled" {
			rng.Shuffle(len(chains), func(a, b int) { chains[a], chains[b] = chains[b], chains[a] })
		} else {
			sort.SliceStable(chains, func(a, b int) bool { return chains[a].Support > chains[b].Support })
		}
		for _, ch := range chains {
			if directed {
				addLine(ChainSentence(s.kg, ch))
			} else {
				add(ch.Edges)
			}
		}
		return out, "chains", nil
	}
	var own []kg.Edge
	for _, n := range nodes {
		es, err := s.kg.Incident(n, s.cfg.BelowPMID, 0)
		if err != nil {
			return nil, "", err
		}
		own = append(own, es...)
	}
	if len(own) == 0 {
		return nil, "", nil
	}
	if s.cfg.KGChains == "sampled" {
		rng.Shuffle(len(own), func(a, b int) { own[a], own[b] = own[b], own[a] })
	} else {
		sort.SliceStable(own, func(a, b int) bool { return len(own[a].PMIDs) > len(own[b].PMIDs) })
	}
	add(own)
	return out, "nodes", nil
}

func fnv64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

var (
	sentenceRE = regexp.MustCompile(`[^.!?\n]+[.!?]?`)
	jsonFence  = regexp.MustCompile("(?s)```json\\s*(\\{.*?\\})\\s*```")
)

// SplitLines is KnowHD's fallback in the authors' code when the claim
// list cannot be had: the statement's lines, blank ones left out.
func SplitLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// SplitSentences is halu's KnowHD fallback when the claim JSON cannot be had:
// the statement's sentences (at least 3 words each) as claims.
func SplitSentences(text string) []string {
	text = jsonFence.ReplaceAllString(text, " ")
	var out []string
	for _, m := range sentenceRE.FindAllString(text, -1) {
		m = strings.TrimSpace(strings.Trim(strings.TrimSpace(m), "#*-"))
		if len(strings.Fields(m)) >= 3 {
			out = append(out, m)
		}
	}
	return out
}

// knowHD computes the groundedness of one hypothesis output (its reasoning
// and structured hypothesis) against one knowledge source.
func (s *Suite) knowHD(ctx context.Context, c *engine.Calls, model, output, src string) (*Grounding, error) {
	vm := s.verifier(model)
	g := &Grounding{}
	v, ok, err := judging.JudgeAs(ctx, c, "decompose", localmodels.ChatRequest{
		Model: vm, Messages: []localmodels.Message{{Role: "user", Content: fill(s.prompts.Decompose, map[string]string{"claims": output})}},
		Options: localmodels.Options{Temperature: localmodels.Float(0), Seed: localmodels.Int(s.cfg.Seed), NumPredict: localmodels.Int(s.cfg.VerifierMaxTokens)},
	}, json.RawMessage(ClaimSchema), func(raw string) (claimList, error) {
		l, err := ParseList(raw)
		return claimList{Claims: l}, err
	})
	if err != nil {
		return nil, err
	}
	claims := v.Claims
	if !ok || len(claims) == 0 {
		claims, g.ClaimsFallback = SplitSentences(output), true
		if s.cfg.ClaimFallback == "lines" {
			claims = SplitLines(output)
		}
	}
	if c.Planning() && len(claims) == 0 {
		// A dry run has no claims: plan the per-claim calls at the cap,
		// an upper bound for calls not yet cached (the plan says so).
		c.PlanAssumes("hypo: per-claim calls (verify; entities for KG sources) are planned at %d claims per statement, the authors' cap; the run makes one per claim the decomposer lists", maxClaims)
		claims = make([]string, maxClaims)
		for i := range claims {
			claims[i] = fmt.Sprintf("planned claim %d", i+1)
		}
	}
	if len(claims) > maxClaims {
		claims = claims[len(claims)-maxClaims:] // the authors' code keeps the last ten
	}
	var entailed []bool
	var retrieved [][]index.Hit // every claim's documents, from one snapshot of the index
	if strings.Contains(src, "lit") {
		if retrieved, err = s.lit.SearchBatch(ctx, claims, index.SearchOptions{K: claimK, MinScore: s.cfg.MinScore, BelowPMID: s.cfg.BelowPMID, BM25: s.bm25()}); err != nil {
			return nil, err
		}
	}
	for i, claim := range claims {
		cc := ClaimCheck{Claim: claim}
		vals := map[string]string{"claim": claim}
		var hits []index.Hit
		if retrieved != nil {
			hits = retrieved[i]
		}
		var lines []string
		if strings.Contains(src, "kg") {
			ents, err := s.entities(ctx, c, vm, fill(s.prompts.ClaimEntity, map[string]string{"claim": claim}))
			if err != nil {
				return nil, err
			}
			nodes, err := s.claimNodes(ents)
			if err != nil {
				return nil, err
			}
			edges, err := s.kg.EdgesAmong(nodes, s.cfg.BelowPMID)
			if err != nil {
				return nil, err
			}
			if len(edges) > edgeK {
				rng := rand.New(rand.NewPCG(uint64(s.cfg.Seed), uint64(i)))
				rng.Shuffle(len(edges), func(a, b int) { edges[a], edges[b] = edges[b], edges[a] })
				edges = edges[:edgeK]
			}
			for _, e := range edges {
				lines = append(lines, EdgeSentence(s.kg, e))
			}
		}
		replyCap, schema := verifyMaxTokens, json.RawMessage(GroundSchema)
		if s.cfg.VerdictFormat == "text" {
			replyCap, schema = s.cfg.VerifierMaxTokens, nil
		}
		lines, hits, fit, err := s.fitKnowledge(ctx, c, vm, []string{s.prompts.VerifySys[src]}, s.prompts.Verify[src], vals,
			"edge_text", lines, "document_text", hits, replyCap)
		if err != nil {
			return nil, err
		}
		cc.Edges, cc.Fit = len(lines), fit
		for _, h := range hits {
			cc.PMIDs = append(cc.PMIDs, h.PMID)
		}
		gv, ok, err := judging.JudgeWith(ctx, c, "verify", localmodels.ChatRequest{
			Model: vm,
			Messages: []localmodels.Message{{Role: "system", Content: s.prompts.VerifySys[src]},
				{Role: "user", Content: fill(s.prompts.Verify[src], vals)}},
			Options: localmodels.Options{Temperature: localmodels.Float(0), Seed: localmodels.Int(s.cfg.Seed), NumPredict: localmodels.Int(replyCap)},
		}, schema, func() judging.Reader[Groundness] {
			r := GroundnessReader(claim)
			r.Subject = model
			r.Other = func(o Groundness, unread bool) {
				if cc.OtherUnread = unread; !unread && o.Groundness != nil {
					v := *o.Groundness == 1
					cc.Other = &v
				}
			}
			return r
		}())
		if err != nil {
			return nil, err
		}
		if ok && gv.Groundness != nil && (*gv.Groundness == 0 || *gv.Groundness == 1) {
			cc.Scored, cc.Supported = true, *gv.Groundness == 1
			entailed = append(entailed, cc.Supported)
		}
		g.Claims = append(g.Claims, cc)
	}
	g.Groundedness, g.Scored = metrics.Groundedness(entailed)
	return g, nil
}

// GroundnessReader is how a verifier's reply about claim is read (halu's
// reader, the authors' rule beside), in a run and in the reply corpus.
func GroundnessReader(claim string) judging.Reader[Groundness] {
	return judging.Reader[Groundness]{Text: ParseGroundness, Paper: ParseGroundnessPaper, Quoted: []string{claim}, Check: true, Schema: json.RawMessage(GroundSchema)}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
