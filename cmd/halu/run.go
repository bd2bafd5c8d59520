package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"halu/runner"
	"halu/runner/cfaith"
	"halu/runner/hic"
	"halu/runner/hypo"
	"halu/runner/ideas"
	"halu/runner/intent"
	"halu/runner/smoke"
)

// suiteDef connects a suite to the command line: flags build a config, and a
// config (from flags, or from a manifest on resume) builds the suite.
type suiteDef struct {
	name  string
	short string
	// flags binds the suite's flags and returns a function that yields the
	// config they describe.
	flags func(fs *pflag.FlagSet) func() (any, error)
	// build makes the suite from a config in its JSON form; its errors are
	// usage errors (the config cannot make a suite).
	build func(cfg json.RawMessage) (runner.Suite, error)
	// override returns the config base (a run's, in JSON) changed by the
	// suite flags in args, for a rerun.
	override func(base json.RawMessage, args []string) (any, error)
}

// suite makes the suite from a config as its flags yield it; a config that
// cannot make a suite is a usage error.
func (d suiteDef) suite(cfg any) (runner.Suite, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	s, err := d.build(raw)
	if err != nil {
		return nil, usageError{err}
	}
	return s, nil
}

// defineSuite ties a suite's config type C to the command line. bind
// registers the flags on a config holding the suite's defaults and may
// return a finish step that turns flag-only values into config fields; the
// suite's own constructor validates the result.
func defineSuite[C any, S runner.Suite](name, short string, defaults func() C, bind func(fs *pflag.FlagSet, cfg *C) (finish func() error), newSuite func(C) (S, error)) suiteDef {
	return suiteDef{
		name:  name,
		short: short,
		flags: func(fs *pflag.FlagSet) func() (any, error) {
			cfg := defaults()
			finish := bind(fs, &cfg)
			return func() (any, error) {
				if finish != nil {
					if err := finish(); err != nil {
						return nil, usageError{err}
					}
				}
				return cfg, nil
			}
		},
		build: func(raw json.RawMessage) (runner.Suite, error) {
			var cfg C
			if err := json.Unmarshal(raw, &cfg); err != nil {
				return nil, err
			}
			return newSuite(cfg)
		},
		override: func(base json.RawMessage, args []string) (any, error) {
			cfg := defaults()
			fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
			finish := bind(fs, &cfg)
			// Binding set the fields to their defaults; the run's own
			// values go back in, then the flags given change some.
			if err := json.Unmarshal(base, &cfg); err != nil {
				return nil, fmt.Errorf("%s config: %w", name, err)
			}
			if err := fs.Parse(args); err != nil {
				return nil, usageError{err}
			}
			if fs.NArg() > 0 {
				return nil, usagef("%s: unexpected %v", name, fs.Args())
			}
			if finish != nil {
				if err := finish(); err != nil {
					return nil, usageError{err}
				}
			}
			return cfg, nil
		},
	}
}

func suites() []suiteDef {
	return []suiteDef{
		defineSuite("smoke", "Built-in smoke suite: a few questions, generated and judged, to check the whole path",
			smoke.DefaultConfig, bindSmoke, smoke.New),
		defineSuite("hic", "HIC-Bench: intelligent vs defective hallucination on the 100 CDID questions (IH, DH, IFS)",
			hic.DefaultConfig, bindHIC, hic.New),
		defineSuite("ideas", "LiveIdeaBench: scientific ideas from one keyword, judged by a local panel (originality, feasibility, clarity, fluency, flexibility)",
			ideas.DefaultConfig, bindIdeas, ideas.New),
		defineSuite("hypo", "TruthHypo: biomedical hypotheses with KG and PubMed knowledge; KnowHD groundedness",
			hypo.DefaultConfig, bindHypo, hypo.New),
		defineSuite("intent", "FaithQA: intent hallucination (omission, misinterpretation) scored by the Constraint Score, beside a 1–10 judge baseline",
			intent.DefaultConfig, bindIntent, intent.New),
		defineSuite("cfaith", "C-FAITH: hallucination rates on a HaluAgent-built dataset (generative, single-choice, true/false; per type)",
			cfaith.DefaultConfig, bindCFaith, cfaith.New),
	}
}

// bindRunOut binds a suite run's --out: halu run SUITE's, and doctor's
// when it reads such a line.
func bindRunOut(fs *pflag.FlagSet, out *string) {
	fs.StringVar(out, "out", "", "run directory (default runs/SUITE-TIME)")
}

func bindSmoke(fs *pflag.FlagSet, cfg *smoke.Config) func() error {
	bindModels(fs, &cfg.Models, "models under test")
	bindJudges(fs, &cfg.Judges, "judge models")
	fs.IntVar(&cfg.Questions, "limit", cfg.Questions, "how many of the built-in questions (the first N)")
	// --questions was the count before; in hic it lists question IDs.
	fs.IntVar(&cfg.Questions, "questions", cfg.Questions, "how many of the built-in questions")
	fs.MarkDeprecated("questions", "use --limit (in hic, --questions lists question IDs)")
	fs.IntVar(&cfg.Seed, "seed", cfg.Seed, "sampling seed")
	fs.Float64Var(&cfg.Temperature, "temperature", cfg.Temperature, "generation temperature")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", cfg.MaxTokens, "generation length cap (num_predict)")
	format := "json"
	if !cfg.Schema {
		format = "text"
	}
	fs.StringVar(&format, "judge-format", format, "json (judge output constrained by a JSON schema) or text (free text, the verdict read from it)")
	fs.BoolVar(&cfg.Schema, "judge-schema", cfg.Schema, "constrain judge output with a JSON schema")
	fs.MarkDeprecated("judge-schema", "use --judge-format json|text")
	return func() error {
		if !fs.Changed("judge-format") {
			return nil
		}
		switch format {
		case "json", "text":
			cfg.Schema = format == "json"
			return nil
		}
		return fmt.Errorf("smoke: --judge-format %q (want json or text)", format)
	}
}

func bindHIC(fs *pflag.FlagSet, cfg *hic.Config) func() error {
	bindModels(fs, &cfg.Models, "models under test")
	bindJudges(fs, &cfg.Judges, "judge panel (the paper averages two)")
	fs.StringSliceVar(&cfg.Strategies, "strategy", cfg.Strategies, "prompt strategies: scp, cot, rag, rcp, dhp, rcp+dhp")
	fs.IntVar(&cfg.Answers, "answers", cfg.Answers, "answers per question")
	fs.Float64SliceVar(&cfg.Temperatures, "temperature", cfg.Temperatures, "generation temperature(s), e.g. 1.0,0.4")
	fs.StringSliceVar(&cfg.Questions, "questions", nil, "question IDs or domains to keep (default all 100)")
	fs.IntVar(&cfg.Limit, "limit", 0, "questions to run (0: all kept): a seeded sample in which each domain keeps its share, listed in the manifest")
	fs.IntVar(&cfg.Seed, "seed", cfg.Seed, "sampling seed (answer i uses seed+i)")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", cfg.MaxTokens, "generation cap (num_predict); the prompt's 70-token limit stays in the prompt")
	fs.StringVar(&cfg.JudgeFormat, "judge-format", cfg.JudgeFormat, "text (the paper's one-line format) or json (structured output)")
	fs.IntVar(&cfg.JudgeMaxTokens, "judge-max-tokens", cfg.JudgeMaxTokens, "judge reply cap")
	fs.BoolVar(&cfg.TieHallucinated, "tie-hallucinated", cfg.TieHallucinated, "a panel tie on hallucination counts as hallucinated")
	fs.StringVar(&cfg.RAGSource, "rag-source", cfg.RAGSource, "RAG context: knowledge (CDKB text, the paper) or principle (the authors' code)")
	fs.StringVar(&cfg.Protocol, "protocol", cfg.Protocol, "paper (the authors' settings) or halu (JSON judges, DHP answers sampled apart); settings given override either")
	fs.StringVar(&cfg.DHPAnswers, "dhp-answers", cfg.DHPAnswers, "split (one DHP reply per question cut at blank lines, the authors' code) or samples (--answers replies, each judged whole)")
	fs.StringVar(&cfg.EmbedModel, "embed-model", cfg.EmbedModel, "embedding model for Flu (the paper: SimCSE sup-simcse-bert-base-uncased)")
	fs.StringVar(&cfg.Human, "human", "", "CSV of human labels: answer id (model/strategy/T<t>/q<id>/a<i>), IH|DH|neutral")
	fs.StringVar(&cfg.Data, "data", "", "CDID-format CSV (default: the bundled 100 questions)")
	return func() error {
		if fs.Changed("protocol") {
			return hic.ApplyProtocol(cfg, fs.Changed)
		}
		return nil
	}
}

func bindIdeas(fs *pflag.FlagSet, cfg *ideas.Config) func() error {
	var sameBase, orgs []string
	var pairs, temp, criticTemp string
	bindModels(fs, &cfg.Models, "idea generators")
	bindJudges(fs, &cfg.Judges, "the judge panel, best first")
	fs.StringVar(&cfg.Protocol, "protocol", cfg.Protocol, "paper (the authors' code's defaults) or halu (3 ideas, all fluency pairs, fixed temperatures, JSON critics, Final Idea extraction for every model); settings given override either")
	fs.StringVar(&cfg.Keyword, "keywords", cfg.Keyword, "N (a seeded sample of the 1,180 keywords) or a file with one keyword per line")
	var limit int
	fs.IntVar(&limit, "limit", 0, "keywords to run: the same as --keywords N")
	fs.IntVar(&cfg.IdeasPerKeyword, "ideas-per-keyword", cfg.IdeasPerKeyword, "ideas per keyword and model (fluency needs 2; the authors' code: 2)")
	fs.IntVar(&cfg.CriticsPerIdea, "critics", cfg.CriticsPerIdea, "critics sampled per idea")
	fs.Float64Var(&cfg.FamilyCap, "family-cap", cfg.FamilyCap, "largest share of the panel from one organisation (0 disables; the paper: 20%)")
	fs.StringArrayVar(&orgs, "organisation", nil, "MODEL=ORG: the organisation behind a model, over the shipped table (repeatable)")
	fs.StringArrayVar(&sameBase, "same-base", nil, "models sharing a base, comma-separated (repeatable)")
	fs.StringVar(&cfg.SameBaseFrom, "same-base-from", cfg.SameBaseFrom, "metadata (family+size or digest, plus --same-base) or declared (--same-base only)")
	fs.StringVar(&pairs, "fluency-pairs", "one", "one random pair of a model's ideas (the authors' code), or all pairs")
	fs.IntVar(&cfg.Seed, "seed", cfg.Seed, "seed for sampling keywords, critics and generations")
	fs.StringVar(&temp, "temperature", "none", "idea generation temperature (none: not sent, the model's default, as the authors' code)")
	fs.StringVar(&criticTemp, "critic-temperature", "none", "critic and fluency-judge temperature (none: not sent, as the authors' code)")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", cfg.MaxTokens, "idea generation cap (num_predict)")
	fs.StringVar(&cfg.JudgeFormat, "judge-format", cfg.JudgeFormat, "text (the authors': free text with a JSON block) or json (structured output)")
	fs.StringVar(&cfg.FinalIdea, "final-idea", cfg.FinalIdea, "qwq (extract after \"Final Idea:\" only for qwq models, as the authors) or all (every model, marker lines only)")
	fs.StringVar(&cfg.Scoring, "scoring", cfg.Scoring, "current (the paper: fluency 10/7/4/1, flexibility over 4 dimensions) or first-release (the December 2024 leaderboard's: 10/6.67/3.33/0, 3 dimensions)")
	fs.StringVar(&cfg.External, "external", "", "CSV of model,score for a Pearson correlation (the paper uses LiveBench)")
	fs.IntVar(&cfg.JudgeMaxTokens, "judge-max-tokens", cfg.JudgeMaxTokens, "critic reply cap")
	return func() error {
		// Only flags given change the config, so that a rerun keeps the
		// run's values.
		if fs.Changed("limit") {
			if fs.Changed("keywords") {
				return errors.New("ideas: --limit N is --keywords N: give one of them")
			}
			if limit < 1 {
				return fmt.Errorf("ideas: --limit %d (want at least 1)", limit)
			}
			cfg.Keyword = strconv.Itoa(limit)
		}
		if fs.Changed("organisation") {
			cfg.Organisations = map[string]string{}
			for _, kv := range orgs {
				m, o, ok := strings.Cut(kv, "=")
				if !ok || strings.TrimSpace(m) == "" || strings.TrimSpace(o) == "" {
					return fmt.Errorf("ideas: --organisation %q (want MODEL=ORG)", kv)
				}
				cfg.Organisations[strings.TrimSpace(m)] = strings.TrimSpace(o)
			}
		}
		if fs.Changed("same-base") {
			cfg.SameBase = nil
			for _, g := range sameBase {
				cfg.SameBase = append(cfg.SameBase, strings.Split(g, ","))
			}
		}
		for _, t := range []struct {
			flag string
			val  string
			out  **float64
		}{{"temperature", temp, &cfg.Temperature}, {"critic-temperature", criticTemp, &cfg.CriticTemperature}} {
			if !fs.Changed(t.flag) {
				continue
			}
			if t.val == "none" || t.val == "" {
				*t.out = nil
				continue
			}
			v, err := strconv.ParseFloat(t.val, 64)
			if err != nil || v < 0 {
				return fmt.Errorf("ideas: --%s %q (want a number ≥ 0, or none)", t.flag, t.val)
			}
			*t.out = &v
		}
		if fs.Changed("fluency-pairs") {
			switch pairs {
			case "all":
				cfg.FluencyAll = true
			case "one":
				cfg.FluencyAll = false
			default:
				return fmt.Errorf("ideas: --fluency-pairs %q (want one or all)", pairs)
			}
		}
		if fs.Changed("protocol") {
			return ideas.ApplyProtocol(cfg, fs.Changed)
		}
		return nil
	}
}

func bindHypo(fs *pflag.FlagSet, cfg *hypo.Config) func() error {
	bindModels(fs, &cfg.Models, "hypothesis generators")
	fs.StringSliceVar(&cfg.Settings, "setting", cfg.Settings, "knowledge settings: parametric, kg, lit, kg+lit")
	fs.StringVar(&cfg.Index, "index", "", "literature index directory (halu index build)")
	fs.StringVar(&cfg.KG, "kg", "", "knowledge-graph directory (halu kg import)")
	fs.Uint64Var(&cfg.BelowPMID, "max-pmid", cfg.BelowPMID, "knowledge cutoff: only articles with PMID < N (strictly, as the authors' code)")
	fs.StringSliceVar(&cfg.Tasks, "tasks", cfg.Tasks, "tasks: chem-gene, dis-gene, gene-gene")
	fs.IntVar(&cfg.Limit, "limit", 0, "items per task (0: all): a seeded sample keeping each label's share, listed in the manifest")
	fs.StringVar(&cfg.Sample, "sample", cfg.Sample, "how --limit draws: stratified (seeded, each label keeps its share) or first (the file's first rows, sorted by label)")
	fs.IntVar(&cfg.Seed, "seed", cfg.Seed, "seed (candidate i uses seed+i; KG edge sampling; the --limit sample)")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", cfg.MaxTokens, "generation cap (num_predict)")
	fs.StringSliceVar(&cfg.KnowHD, "knowhd", nil, "KnowHD sources: kg, lit, kg+lit")
	fs.StringVar(&cfg.Verifier, "verifier", "", "model that splits claims and judges support (default: the generator)")
	fs.Float64Var(&cfg.MinScore, "min-score", 0, "τ: keep only documents with BM25 ≥ τ for claim checks (eq. 1)")
	fs.IntVar(&cfg.Candidates, "candidates", cfg.Candidates, "sampled hypotheses per item beside the greedy one, for the selection comparison (Fig. 4; the paper: 5; 0: greedy only)")
	fs.Float64Var(&cfg.Temperature, "candidate-temperature", cfg.Temperature, "temperature of sampled candidates")
	fs.StringVar(&cfg.Data, "data", "", "TruthHypo-format TSV (default: the bundled 2,024 test items)")
	fs.StringVar(&cfg.Open, "open", "", "open-ended mode: JSONL of {id, background}; 5 hypotheses each, ranked by groundedness")
	fs.IntVar(&cfg.VerifierMaxTokens, "verifier-max-tokens", cfg.VerifierMaxTokens, "cap for entity extraction and claim decomposition replies")
	fs.StringVar(&cfg.Protocol, "protocol", cfg.Protocol, "paper (the authors' code's values) or halu (textbook BM25, KG chains ranked by support); settings given override either")
	fs.StringVar(&cfg.BM25, "bm25", cfg.BM25, "BM25 parameters: pyserini (k1 0.9, b 0.4: the authors' retriever) or textbook (k1 1.2, b 0.75); τ is on this scale")
	fs.StringVar(&cfg.KGChains, "kg-chains", cfg.KGChains, "which 32 KG lines are shown: sampled (a seeded random sample of the chains, the authors' code) or ranked (by supporting articles)")
	return func() error {
		if fs.Changed("protocol") {
			return hypo.ApplyProtocol(cfg, fs.Changed)
		}
		return nil
	}
}

func bindIntent(fs *pflag.FlagSet, cfg *intent.Config) func() error {
	bindModels(fs, &cfg.Models, "models under test")
	judge := bindOneJudge(fs, "intent", &cfg.Judge, "judge model: maps constraints, scores them, rates the baseline, checks facts")
	fs.StringVar(&cfg.Data, "data", "", "FaithQA-format JSONL (default: the bundled sample; see halu intent make)")
	fs.StringSliceVar(&cfg.Tasks, "tasks", nil, "task types to keep: factqa, story, poem, response_eval, relationship, summary")
	fs.IntVar(&cfg.Limit, "limit", 0, "items per task (0: all): a seeded random sample keeping the task's difficulty shares, listed in the manifest")
	fs.StringVar(&cfg.Sample, "sample", cfg.Sample, "how --limit draws: stratified (seeded, as the paper samples each category) or first (the file's first items)")
	fs.IntVar(&cfg.Seed, "seed", cfg.Seed, "sampling seed (sample i of a judge call uses seed+i; the --limit sample)")
	fs.Float64Var(&cfg.Temperature, "temperature", cfg.Temperature, "generation temperature of the models under test")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", cfg.MaxTokens, "generation cap (num_predict)")
	fs.StringVar(&cfg.Weights, "weights", cfg.Weights, "constraint weights: default (3/2/1), uniform, steep (5/2/1), flat (2/1.5/1), inverted (1/2/3)")
	fs.IntVar(&cfg.MapSamples, "map-samples", cfg.MapSamples, "constraint mappings per query; the majority set is kept")
	fs.Float64Var(&cfg.MapTemperature, "map-temperature", cfg.MapTemperature, "mapping temperature when --map-samples > 1")
	fs.IntVar(&cfg.BaselineSamples, "baseline-samples", cfg.BaselineSamples, "self-consistency samples of the 1–10 baseline (0: no baseline)")
	fs.Float64Var(&cfg.BaselineTemperature, "baseline-temperature", cfg.BaselineTemperature, "baseline sampling temperature")
	fs.IntVar(&cfg.FactSamples, "fact-samples", cfg.FactSamples, "independent fact checks of Fact QA responses (0: none)")
	fs.Float64Var(&cfg.FactTemperature, "fact-temperature", cfg.FactTemperature, "fact-check sampling temperature")
	fs.StringVar(&cfg.JudgeFormat, "judge-format", cfg.JudgeFormat, "text (the paper: Tables 6 and 7, reasoning then a START: listing of X/Y ratios) or json (one structured verdict per constraint)")
	fs.IntVar(&cfg.JudgeMaxTokens, "judge-max-tokens", cfg.JudgeMaxTokens, "judge reply cap")
	fs.BoolVar(&cfg.CodeChecks, "code-checks", cfg.CodeChecks, "let code decide countable constraints (word/line/stanza counts, required or forbidden words); the paper's judge decides all")
	fs.StringVar(&cfg.Protocol, "protocol", cfg.Protocol, "paper (text judges that reason first, the judge decides every constraint) or halu (JSON judges, code checks); settings given override either")
	return func() error {
		if err := judge(); err != nil {
			return err
		}
		if fs.Changed("protocol") {
			return intent.ApplyProtocol(cfg, fs.Changed)
		}
		return nil
	}
}

// unknownSuite is the usage error for a suite name halu does not have,
// with the nearest names.
func unknownSuite(name string) error {
	var names, near []string
	for _, s := range suites() {
		names = append(names, s.name)
		if d := editDistance(strings.ToLower(name), s.name); d <= 2 || strings.HasPrefix(s.name, strings.ToLower(name)) {
			near = append(near, s.name)
		}
	}
	hint := ""
	if len(near) > 0 {
		hint = fmt.Sprintf(" — did you mean %s?", strings.Join(near, " or "))
	}
	return usagef("unknown suite %q%s (suites: %s)", name, hint, strings.Join(names, ", "))
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func findSuite(name string) (suiteDef, bool) {
	for _, s := range suites() {
		if s.name == name {
			return s, true
		}
	}
	return suiteDef{}, false
}

func newRunCmd(g *globals) *cobra.Command {
	var resume string
	var rc runControl
	cmd := &cobra.Command{
		Use:   "run SUITE [flags] | run --resume DIR",
		Short: "Run a benchmark suite, or resume an interrupted run",
		// A word that is no suite is one misspelt: say which it may be.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return unknownSuite(args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if resume == "" {
				return usagef("run: name a suite (halu run smoke …) or --resume DIR")
			}
			gates, err := rc.settle(cmd)
			if err != nil {
				return err
			}
			return resumeDir(cmd, g, resume, gates)
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// "halu run hci --models x": the suite's name, not its flags, is wrong.
		if a := c.Flags().Args(); len(a) > 0 {
			if _, ok := findSuite(a[0]); !ok {
				return unknownSuite(a[0])
			}
		}
		return usageError{err}
	})
	cmd.PersistentFlags().StringVar(&resume, "resume", "", "resume the run in DIR: skip completed items, redo the rest, with the run's own settings")
	rc.bind(cmd.PersistentFlags())
	for _, def := range suites() {
		def := def
		var out string
		sub := &cobra.Command{
			Use:   def.name,
			Short: def.short,
			Args:  cobra.NoArgs,
		}
		config := def.flags(sub.Flags())
		bindRunOut(sub.Flags(), &out)
		sub.RunE = func(cmd *cobra.Command, args []string) error {
			gates, err := rc.settle(cmd)
			if err != nil {
				return err
			}
			if resume != "" {
				return resumeDir(cmd, g, resume, gates)
			}
			cfg, err := config()
			if err != nil {
				return err
			}
			s, err := def.suite(cfg)
			if err != nil {
				return err
			}
			shard, err := rc.shardSpec()
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join("runs", def.name+"-"+time.Now().Format("20060102-150405"))
				if shard != nil {
					out += fmt.Sprintf("-shard%dof%d", shard.I, shard.N)
				}
			}
			return execute(cmd, g, s, runner.RunSpec{Dir: out, Args: os.Args[1:], Config: cfg, DryRun: rc.dryRun, Flags: effectiveFlags(cmd), Invocation: os.Args[1:], Shard: shard}, gates)
		}
		cmd.AddCommand(sub)
	}
	return cmd
}

// resumeDir resumes the run in dir with its own settings: every setting
// not given takes the run's value, and a setting given with another value
// than the run's is refused (a resumed run that changed what it measures
// halfway would mix two runs in one).
func resumeDir(cmd *cobra.Command, g *globals, dir string, gates []runner.Gate) error {
	m, err := runner.ReadManifest(dir)
	if err != nil {
		return err
	}
	differ, err := runSettings(allFlags(cmd), dir, m)
	if err != nil {
		return err
	}
	if len(differ) > 0 {
		return usagef("resume %s keeps the run's own settings, and these differ: %s; start a new run for other settings, or change a stage's with `halu rerun %s --stage STAGE …`",
			dir, strings.Join(differ, ", "), dir)
	}
	return resumeRun(cmd, g, dir, m, nil, gates)
}

// resumeRun resumes the run in dir (manifest m) with its own settings,
// redoing the calls rerun names afresh (nil: none).
func resumeRun(cmd *cobra.Command, g *globals, dir string, m *runner.Manifest, rerun *runner.Rerun, gates []runner.Gate) error {
	def, ok := findSuite(m.Suite)
	if !ok {
		return fmt.Errorf("run %s: unknown suite %q", dir, m.Suite)
	}
	s, err := def.build(m.Config)
	if err != nil {
		return fmt.Errorf("run %s: config: %w", dir, err)
	}
	return execute(cmd, g, s, runner.RunSpec{Dir: dir, Resume: true, Args: m.Args, Config: m.Config, Rerun: rerun, Flags: m.Flags, Invocation: os.Args[1:]}, gates)
}

// execute runs s and applies the quality gates to its summary: exit 1 for
// a run error, 3 for a gate that failed.
func execute(cmd *cobra.Command, g *globals, s runner.Suite, spec runner.RunSpec, gates []runner.Gate) error {
	if err := runner.CheckGateNames(s, gates); err != nil {
		return usageError{err}
	}
	e, err := g.engine()
	if err != nil {
		return err
	}
	res, err := e.Run(cmd.Context(), s, spec)
	w := cmd.OutOrStdout()
	if res != nil && res.Plan != nil {
		res.Plan.Print(w)
		return err
	}
	if res != nil && res.Summary != nil {
		res.Summary.Print(w)
	}
	if res != nil {
		fmt.Fprintf(w, "run directory: %s\n", res.Dir)
	}
	if err != nil {
		return err
	}
	return checkGates(w, res.Summary, gates)
}
