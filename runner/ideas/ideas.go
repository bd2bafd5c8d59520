// Package ideas is the LiveIdeaBench suite (Ruan et al., "LiveIdeaBench:
// Evaluating LLMs' Scientific Creativity and Idea Generation with Minimal
// Context"): each model proposes scientific ideas from a single keyword, a
// panel of local judge models scores each idea's originality, feasibility
// and clarity (1–10), one sampled judge grades how different a model's ideas
// for the same keyword are (fluency, A–D), and flexibility is the 30th
// percentile of the per-keyword composite.
package ideas

import (
	"bytes"
	"context"
	"embed"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"halu/localmodels"
	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/judging"
	"halu/runner/rundir"
	"halu/runner/setting"
)

//go:embed data/*.csv data/*.json data/*.txt
var assets embed.FS

type promptFile struct {
	IdeaPrompt struct {
		Description         string `json:"description"`
		FallbackDescription string `json:"fallback_description"`
	} `json:"idea_prompt"`
	CriticPrompt struct {
		Description string `json:"description"`
	} `json:"critic_prompt"`
	FluencyCriticPrompt struct {
		Description string `json:"description"`
	} `json:"fluency_critic_prompt"`
}

// Prompts are the authors' prompt strings (utils/prompts.json).
type Prompts struct {
	Idea, Fallback, Critic, CriticUser, Fluency string
}

// verbatim returns the text after a data file's "# ---- verbatim" line.
func verbatim(name string) string {
	b, err := assets.ReadFile("data/" + name)
	if err != nil {
		panic(err)
	}
	s := string(b)
	if i := strings.Index(s, "# ---- verbatim"); i >= 0 {
		s = s[i:]
		s = s[strings.Index(s, "\n")+1:]
	}
	return s
}

// LoadPrompts reads the embedded prompts.
func LoadPrompts() Prompts {
	b, err := assets.ReadFile("data/prompts.json")
	if err != nil {
		panic(err)
	}
	var f promptFile
	if err := json.Unmarshal(b, &f); err != nil {
		panic(err)
	}
	user := verbatim("critic_user.txt")
	return Prompts{Idea: f.IdeaPrompt.Description, Fallback: f.IdeaPrompt.FallbackDescription,
		Critic: f.CriticPrompt.Description, CriticUser: strings.TrimSuffix(user, "\n"), Fluency: f.FluencyCriticPrompt.Description}
}

func lines(name string) []string {
	var out []string
	for _, l := range strings.Split(verbatim(name), "\n") {
		if l = strings.TrimRight(l, "\r"); strings.TrimSpace(l) != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// RefusalPhrases is the authors' list (utils/LLM.py REJECTION_PHRASES),
// matched case-insensitively anywhere in an idea.
func RefusalPhrases() []string { return lines("refusal_phrases.txt") }

// FinalIdeaMarkers are the delimiters tried, in order, before an idea.
func FinalIdeaMarkers() []string { return lines("final_idea_markers.txt") }

// Refusal returns the refusal phrase an idea contains, if any.
func Refusal(idea string) (string, bool) {
	low := strings.ToLower(idea)
	for _, p := range RefusalPhrases() {
		if strings.Contains(low, strings.ToLower(p)) {
			return p, true
		}
	}
	return "", false
}

// ExtractIdea is the authors' extraction (applied to qwq): reasoning
// stripped (judging.StripReasoning), then, when a marker occurs, the text
// after its first occurrence, markers tried in their order and
// case-insensitively — the last of them the bare phrase "final idea",
// wherever it stands. found tells whether a marker was used.
func ExtractIdea(output string) (idea string, found bool) {
	s := judging.StripReasoning(output)
	low := strings.ToLower(s)
	for _, m := range FinalIdeaMarkers() {
		if i := strings.Index(low, strings.ToLower(m)); i >= 0 {
			return strings.TrimSpace(s[i+len(m):]), true
		}
	}
	return strings.TrimSpace(s), false
}

// finalIdeaLine is a marker line: "Final Idea:" (bold, a heading or
// plain, any case) at the start of a line, with its colon.
var finalIdeaLine = regexp.MustCompile(`(?im)^[ \t]*(?:#+[ \t]*)?(?:\*\*|__)?final idea(?:\*\*|__)?[ \t]*:[ \t]*(?:\*\*|__)?`)

// ExtractIdeaLine is halu's extraction (--final-idea all): the text after
// the last line that starts with a "Final Idea:" marker, so that prose that
// mentions "this final idea" is never cut; without one, the whole output
// (reasoning stripped).
func ExtractIdeaLine(output string) (idea string, found bool) {
	s := judging.StripReasoning(output)
	locs := finalIdeaLine.FindAllStringIndex(s, -1)
	if len(locs) == 0 {
		return strings.TrimSpace(s), false
	}
	return strings.TrimSpace(s[locs[len(locs)-1][1]:]), true
}

// Words counts an idea's words (whitespace-separated).
func Words(s string) int { return len(strings.Fields(s)) }

// MaxWords is the authors' word bound: an idea of 200 words or more is
// not scored.
const MaxWords = 200

// Keyword is a keyword with its category (of 22).
type Keyword struct {
	Keyword  string `json:"keyword"`
	Category string `json:"category"`
}

// Keywords returns the 1,180 keywords with their categories.
func Keywords() ([]Keyword, error) {
	cat := map[string]string{}
	b, _ := assets.ReadFile("data/keyword_classifications.csv")
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("keyword_classifications.csv: %w", err)
	}
	for _, r := range rows[1:] {
		cat[r[0]] = r[1]
	}
	b, _ = assets.ReadFile("data/kws.csv")
	rows, err = csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("kws.csv: %w", err)
	}
	var out []Keyword
	for _, r := range rows[1:] {
		out = append(out, Keyword{Keyword: r[1], Category: cat[r[1]]})
	}
	return out, nil
}

// Config is the suite's settings (declared in Settings).
type Config struct {
	Models []string
	Judges []string
	// Keywords is a file of keywords, one per line ("": the 1,180 of the
	// paper); Limit runs a seeded sample of that many of them (0: all).
	Keywords string
	Limit    int
	// Protocol is setting.ProtocolPaper (the authors' code's values, the
	// default) or setting.ProtocolHalu.
	Protocol string
	// IdeasPerKeyword: fluency needs at least 2 (the authors' code uses 2).
	IdeasPerKeyword int
	CriticsPerIdea  int
	FamilyCap       float64
	// SameBase declares models that share a base (never judge each other).
	SameBase [][]string
	// SameBaseFrom is "metadata" (same family and parameter size, or the
	// same digest, as Ollama reports them — plus declared pairs) or
	// "declared" (only the pairs in SameBase, and a model itself).
	SameBaseFrom string
	// Organisations declares models' organisations (model → organisation)
	// over the shipped table, for the cap and the same-base rule.
	Organisations map[string]string
	// FluencyPairs is "one" (one random pair of a model's ideas per
	// keyword, as the authors' code) or "all".
	FluencyPairs string
	Seed         int
	// Temperature of idea generation and CriticTemperature of the critics
	// (nil: none sent, the model's own default, as the authors' code).
	Temperature       *float64
	CriticTemperature *float64
	// MaxTokens caps an idea (num_predict), JudgeMaxTokens a critic's
	// reply and FluencyMaxTokens a fluency grade; 0 sends no cap, as the
	// authors' code (a thinking generator capped is cut before its "Final
	// Idea" and then dropped by the length filter).
	MaxTokens        int
	JudgeFormat      string // json or text
	JudgeMaxTokens   int
	FluencyMaxTokens int
	// FinalIdea is where the "Final Idea:" extraction applies: "qwq" (the
	// authors' code: only to models named qwq, whose prompt then ends with
	// their instruction to answer after **Final Idea:**; their markers, in
	// their order) or "all" (every model, a marker only where it starts a
	// line).
	FinalIdea string
	// Scoring is "current" (the paper: fluency A–D = 10/7/4/1, flexibility
	// over originality, feasibility, clarity and fluency) or
	// "first-release" (the December 2024 leaderboard's: 10/6.67/3.33/0, and
	// flexibility over originality, feasibility and fluency).
	Scoring  string
	External string
}

// Settings declares the suite's settings, with the authors' code's values
// (../shared/prompts/README.md): 2 ideas per keyword and model, 3 critics
// per idea, one random fluency pair, no temperature sent, critics reading
// free text, "Final Idea" extraction for qwq only, the current release's
// scales. halu's protocol: more ideas (3) and every fluency pair for
// tighter estimates, fixed temperatures (ideas 0.8, critics 0) for
// reproducible runs, structured critic output, and marker extraction for
// every model.
func (c *Config) Settings() setting.List {
	return setting.List{
		setting.Strings("models", &c.Models, "idea generators").As(setting.Subject).Models().Required(),
		setting.Strings("judges", &c.Judges, "the judge panel, best first").As(setting.Instrument).Models().Required().Deprecated("judge"),
		setting.Protocol(&c.Protocol, "3 ideas, all fluency pairs, fixed temperatures, JSON critics, Final Idea extraction for every model"),
		setting.String("keywords", &c.Keywords, "a file with one keyword per line (default: the paper's 1,180 keywords)").As(setting.Data).Path().Unset("the 1,180 keywords of the authors' kws.csv").Check(func() error {
			if _, err := strconv.Atoi(c.Keywords); err == nil {
				if _, err := os.Stat(c.Keywords); err != nil {
					return errors.New("no such file: a seeded sample of N keywords is --limit N")
				}
			}
			return nil
		}),
		setting.Int("limit", &c.Limit, "keywords to run: a seeded sample of N of the keyword list (0: every keyword, the paper's); the default 10 is a sample, named as a departure").As(setting.Data).Paper("0").Min(0),
		setting.Int("ideas-per-keyword", &c.IdeasPerKeyword, "ideas per keyword and model (fluency needs 2; the authors' code: 2)").Paper("2").Halu("3").Min(1),
		setting.Int("critics", &c.CriticsPerIdea, "critics sampled per idea").Paper("3").Min(1),
		setting.Float("family-cap", &c.FamilyCap, "largest share of the panel from one organisation (0 disables; the paper: 20%)").Paper("0.2").Min(0),
		setting.Pairs("organisation", &c.Organisations, "MODEL=ORG: the organisation behind a model, over the shipped table (repeatable)").As(setting.Instrument),
		setting.Groups("same-base", &c.SameBase, "models sharing a base, comma-separated (repeatable)").As(setting.Instrument),
		setting.Choice("same-base-from", &c.SameBaseFrom, "metadata (family+size or digest, plus --same-base) or declared (--same-base only)", "metadata", "declared").As(setting.Instrument),
		setting.Choice("fluency-pairs", &c.FluencyPairs, "one random pair of a model's ideas (the authors' code), or all pairs", "one", "all").Paper("one").Halu("all"),
		setting.Int("seed", &c.Seed, "seed for sampling keywords, critics and generations").As(setting.Draw),
		setting.OptFloat("temperature", &c.Temperature, "idea generation temperature (none: not sent, the model's default, as the authors' code)", "none").Paper("none").Halu("0.8").Check(nonNegative(&c.Temperature)),
		setting.OptFloat("critic-temperature", &c.CriticTemperature, "critic and fluency-judge temperature (none: not sent, as the authors' code)", "none").Paper("none").Halu("0").Check(nonNegative(&c.CriticTemperature)),
		setting.Int("max-tokens", &c.MaxTokens, "idea generation cap (num_predict; 0: none sent, as the authors' code)").Paper("0").Halu("600").Min(0),
		judging.FormatSetting(&c.JudgeFormat, "text (the authors': free text with a JSON block) or json (structured output)").Paper("text").Halu("json"),
		setting.Choice("final-idea", &c.FinalIdea, `qwq (extract after "Final Idea:" only for qwq models, as the authors) or all (every model, marker lines only)`, "qwq", "all").Paper("qwq").Halu("all"),
		setting.Choice("scoring", &c.Scoring, "current (the paper: fluency 10/7/4/1, flexibility over 4 dimensions) or first-release (the December 2024 leaderboard's: 10/6.67/3.33/0, 3 dimensions)", "current", "first-release").Paper("current"),
		setting.String("external", &c.External, "CSV of model,score for a Pearson correlation (the paper uses LiveBench)").As(setting.Beside).Path(),
		setting.Int("judge-max-tokens", &c.JudgeMaxTokens, "critic reply cap (0: none sent, as the authors' code)").Paper("0").Halu("300").Min(0),
		setting.Int("fluency-max-tokens", &c.FluencyMaxTokens, "fluency grade reply cap (0: none sent, as the authors' code)").Paper("0").Halu("20").Min(0),
	}
}

func nonNegative(p **float64) func() error {
	return func() error {
		if *p != nil && **p < 0 {
			return errors.New("want a number ≥ 0, or none")
		}
		return nil
	}
}

// MarshalJSON encodes the config by its settings.
func (c Config) MarshalJSON() ([]byte, error) { return c.Settings().MarshalJSON() }

// UnmarshalJSON reads a config MarshalJSON wrote.
func (c *Config) UnmarshalJSON(b []byte) error { return c.Settings().UnmarshalJSON(b) }

// DefaultConfig is the paper's protocol on a seeded sample of 10 keywords.
func DefaultConfig() Config {
	return Config{Limit: 10, Protocol: setting.ProtocolPaper, IdeasPerKeyword: 2, CriticsPerIdea: 3, FamilyCap: 0.2,
		FluencyPairs: "one", Seed: 1, SameBaseFrom: "metadata", MaxTokens: 0, JudgeFormat: "text", JudgeMaxTokens: 0,
		FinalIdea: "qwq", Scoring: "current"}
}

// paper is the publication the suite implements (engine.Suite.Paper).
const paper = "Ruan et al., \"LiveIdeaBench: Evaluating LLMs' Scientific Creativity and Idea Generation with Minimal Context\"; the authors' code: github.com/x66ccff/liveideabench"

// suiteName is the suite's name: its declaration's and its Task's.
const suiteName = "ideas"

// Declaration declares the suite to the registry.
var Declaration = engine.Declare(suiteName, "LiveIdeaBench: scientific ideas from one keyword, judged by a local panel (originality, feasibility, clarity, fluency, flexibility)",
	DefaultConfig, New, migrate)

// migrate brings a config of run format 1 up to date: "keywords" held N
// (a sample of the 1,180) or a file, fluency pairs were a switch, two keys
// had other names, and empty values were the values of the day.
func migrate(format int, cfg map[string]json.RawMessage) error {
	if format < 2 {
		var kw string
		if err := json.Unmarshal(cfg["keywords"], &kw); err == nil {
			if n, err := strconv.Atoi(kw); err == nil {
				cfg["limit"], cfg["keywords"] = json.RawMessage(strconv.Itoa(n)), json.RawMessage(`""`)
			} else {
				cfg["limit"] = json.RawMessage("0")
			}
		}
		if b, ok := cfg["fluency_all_pairs"]; ok {
			cfg["fluency_pairs"] = json.RawMessage(`"one"`)
			if string(b) == "true" {
				cfg["fluency_pairs"] = json.RawMessage(`"all"`)
			}
			delete(cfg, "fluency_all_pairs")
		}
		engine.Rename(cfg, "critics_per_idea", "critics")
		engine.Rename(cfg, "organisations", "organisation")
		engine.DefaultTo(cfg, "protocol", `"paper"`)
		engine.DefaultTo(cfg, "final_idea", `"all"`)
		engine.DefaultTo(cfg, "scoring", `"current"`)
	}
	if format < 3 {
		// Format 2 sent the fluency judge a 20-token cap.
		engine.DefaultTo(cfg, "fluency_max_tokens", "20")
	}
	return nil
}

// Suite is LiveIdeaBench.
type Suite struct {
	cfg      Config
	keywords []Keyword
	prompts  Prompts
	panelMu  sync.Mutex // the panel is formed once, by the first item
	panel    *Panel
	external map[string]float64
}

// New checks cfg and loads the keywords.
func New(cfg Config) (*Suite, error) {
	if err := cfg.Settings().Validate(); err != nil {
		return nil, fmt.Errorf("ideas: %w", err)
	}
	all, err := Keywords()
	if err != nil {
		return nil, err
	}
	s := &Suite{cfg: cfg, prompts: LoadPrompts()}
	if cfg.Keywords != "" {
		b, err := os.ReadFile(cfg.Keywords)
		if err != nil {
			return nil, fmt.Errorf("ideas: --keywords: %w", err)
		}
		if all, err = readKeywords(cfg.Keywords, b, all); err != nil {
			return nil, err
		}
	}
	s.keywords = all
	if cfg.Limit > 0 && cfg.Limit < len(all) {
		rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x1d3a))
		idx := rng.Perm(len(all))[:cfg.Limit]
		sort.Ints(idx)
		s.keywords = nil
		for _, i := range idx {
			s.keywords = append(s.keywords, all[i])
		}
	}
	if cfg.External != "" {
		if s.external, err = loadExternal(cfg.External); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// readKeywords reads a keyword file (one keyword per line; blank lines
// skipped), each keyword taking its category from known when the paper's
// list has it. A keyword must be text a model can be sent — valid UTF-8
// without control characters, no longer than maxKeyword — and given once
// (an rundir.InputError naming the line otherwise); a file without one is
// refused.
func readKeywords(name string, b []byte, known []Keyword) ([]Keyword, error) {
	cat := map[string]string{}
	for _, k := range known {
		cat[k.Keyword] = k.Category
	}
	var out []Keyword
	seen := rundir.IDs{}
	for i, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if err := rundir.CheckText("keyword", l); err != nil {
			return nil, rundir.BadInput(name, i+1, "%v", err)
		}
		if n := utf8.RuneCountInString(l); n > maxKeyword {
			return nil, rundir.BadInput(name, i+1, "a keyword of %d characters (at most %d: one keyword per line)", n, maxKeyword)
		}
		if err := seen.Add(name, i+1, "keyword", l); err != nil {
			return nil, err
		}
		out = append(out, Keyword{Keyword: l, Category: cat[l]})
	}
	if len(out) == 0 {
		return nil, rundir.BadInput(name, 0, "no keyword (one per line)")
	}
	return out, nil
}

// maxKeyword is the longest keyword accepted, in characters: the paper's
// longest has a few dozen; a longer line is a paragraph or a file of
// another kind.
const maxKeyword = 200

func loadExternal(path string) (map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ideas --external: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	out := map[string]float64{}
	for line := 1; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(rec) < 2 {
			return nil, fmt.Errorf("%s:%d: want model,score", path, line)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rec[1]), 64)
		if err != nil {
			if line == 1 {
				continue // header
			}
			return nil, fmt.Errorf("%s:%d: score %q is not a number", path, line, rec[1])
		}
		out[strings.TrimSpace(rec[0])] = v
	}
	return out, nil
}

// Task is LiveIdeaBench as the engine runs it: every part it has.
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
		MetricNames:  s.MetricNames,
		OtherReading: s.OtherReading,
		Flag:         s.Flag,
		Outcomes:     s.Outcomes,
	}
}

// MetricNames are the last parts of the summary's keys (engine.Suite.MetricNames):
// MODEL.NAME.
func (s *Suite) MetricNames() []string {
	return []string{"originality", "feasibility", "clarity", "fluency", "flexibility", "average", "average5", "refusal_rate"}
}

func (s *Suite) Models() []string {
	return append(append([]string(nil), s.cfg.Models...), s.cfg.Judges...)
}

// Prompts records the templates in the manifest.
func (s *Suite) Prompts() map[string]rundir.PromptInfo {
	src := "github.com/x66ccff/liveideabench (MIT)"
	out := map[string]rundir.PromptInfo{}
	for n, t := range map[string]string{"idea_prompt": s.prompts.Idea, "idea_fallback": s.prompts.Fallback, "critic_system": s.prompts.Critic,
		"critic_user": s.prompts.CriticUser, "fluency_critic": s.prompts.Fluency, "refusal_phrases": strings.Join(RefusalPhrases(), "\n"),
		"final_idea_markers": strings.Join(FinalIdeaMarkers(), "\n")} {
		out[n] = rundir.PromptInfo{Source: src, Text: t}
	}
	return out
}

func (s *Suite) Datasets() []string {
	var d []string
	if s.cfg.Keywords != "" {
		d = append(d, s.cfg.Keywords)
	}
	if s.cfg.External != "" {
		d = append(d, s.cfg.External)
	}
	return d
}

type payload struct {
	kw    Keyword
	model string
}

// Items: one per (keyword, model).
func (s *Suite) Items(ctx context.Context) ([]engine.Item, error) {
	var items []engine.Item
	for _, k := range s.keywords {
		for _, m := range s.cfg.Models {
			items = append(items, engine.Item{ID: k.Keyword + "/" + m, Payload: payload{k, m}, Group: m})
		}
	}
	return items, nil
}

// ItemResult is the record data of one (keyword, model).
type ItemResult struct {
	Keyword  string        `json:"keyword"`
	Category string        `json:"category"`
	Model    string        `json:"model"`
	Ideas    []Idea        `json:"ideas"`
	Fluency  []FluencyPair `json:"fluency,omitempty"`
	Panel    []string      `json:"eligible_judges"`
	// CapNotApplied says why the panel's organisation cap was not applied
	// (Panel.CapNotApplied): a departure from the paper's panel the summary
	// counts from the records, as a report made later reads them.
	CapNotApplied string `json:"cap_not_applied,omitempty"`
}

// Idea is one generated idea with its critiques.
type Idea struct {
	Index      int        `json:"index"`
	Raw        string     `json:"raw"`
	Text       string     `json:"text"`
	Marker     bool       `json:"final_idea_marker"`
	Refused    string     `json:"refused,omitempty"` // phrase of the first attempt's refusal
	Fallback   bool       `json:"fallback"`
	Refusal2   string     `json:"refused_again,omitempty"`
	Words      int        `json:"words"`
	Excluded   string     `json:"excluded,omitempty"`
	Critiques  []Critique `json:"critiques,omitempty"`
	ThinkChars int        `json:"thinking_chars,omitempty"`
}

// Critique is one critic's scores; Scored false when its reply never parsed.
type Critique struct {
	Judge       string `json:"judge"`
	Scored      bool   `json:"scored"`
	Originality int    `json:"originality,omitempty"`
	Feasibility int    `json:"feasibility,omitempty"`
	Clarity     int    `json:"clarity,omitempty"`
	Analysis    string `json:"analysis,omitempty"`
	// Other is the scores the reader that did not decide read in the same
	// reply (the authors' cascade under the default readers), kept only
	// when they differ; OtherUnread when it read none.
	Other       *Scores `json:"other_scores,omitempty"`
	OtherUnread bool    `json:"other_unread,omitempty"`
}

// Scores are a critic's three scores.
type Scores struct {
	Originality int `json:"originality"`
	Feasibility int `json:"feasibility"`
	Clarity     int `json:"clarity"`
}

// FluencyPair is one fluency grading of two ideas.
type FluencyPair struct {
	A      int     `json:"a"`
	B      int     `json:"b"`
	Judge  string  `json:"judge"`
	Scored bool    `json:"scored"`
	Grade  string  `json:"grade,omitempty"`
	Score  float64 `json:"score,omitempty"`
	// OtherGrade is the grade the reader that did not decide read (the
	// authors' first-letter rule under the default readers), kept only
	// when the two differ; OtherUnread when it read none.
	OtherGrade  string `json:"other_grade,omitempty"`
	OtherUnread bool   `json:"other_unread,omitempty"`
}

// seeded returns a generator for one decision, derived from the run seed and
// the decision's name: the same run makes the same choices on every machine.
func seeded(seed int, parts ...string) *rand.Rand {
	h := fnv.New64a()
	fmt.Fprint(h, seed)
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return rand.New(rand.NewPCG(h.Sum64(), uint64(seed)))
}

func (s *Suite) Process(ctx context.Context, c *engine.Calls, it engine.Item) (any, error) {
	p := it.Payload.(payload)
	panel, err := s.panelFor(ctx, c.Engine())
	if err != nil {
		return nil, err
	}
	eligible := panel.Eligible(p.model)
	res := ItemResult{Keyword: p.kw.Keyword, Category: p.kw.Category, Model: p.model, Panel: eligible, CapNotApplied: panel.CapNotApplied}
	used := map[string]bool{}
	for i := 0; i < s.cfg.IdeasPerKeyword; i++ {
		idea, err := s.generate(ctx, c, p, i)
		if err != nil {
			return nil, err
		}
		if idea.Excluded == "" && len(eligible) > 0 {
			for _, j := range pickCritics(eligible, used, s.cfg.CriticsPerIdea, seeded(s.cfg.Seed, "critics", p.kw.Keyword, p.model, strconv.Itoa(i))) {
				used[j] = true
				cr, err := s.critique(ctx, c, j, p.model, idea.Text)
				if err != nil {
					return nil, err
				}
				idea.Critiques = append(idea.Critiques, cr)
			}
		}
		res.Ideas = append(res.Ideas, idea)
	}
	// Fluency: one sampled judge grades pairs of this model's scorable ideas.
	var ok []int
	for _, idea := range res.Ideas {
		if idea.Excluded == "" {
			ok = append(ok, idea.Index)
		}
	}
	if len(ok) >= 2 && len(eligible) > 0 {
		rng := seeded(s.cfg.Seed, "fluency", p.kw.Keyword, p.model)
		judge := eligible[rng.IntN(len(eligible))]
		var pairs [][2]int
		for a := 0; a < len(ok); a++ {
			for b := a + 1; b < len(ok); b++ {
				pairs = append(pairs, [2]int{ok[a], ok[b]})
			}
		}
		if s.cfg.FluencyPairs != "all" {
			k := rng.IntN(len(pairs))
			pairs = pairs[k : k+1]
		}
		for _, pr := range pairs {
			fp, err := s.fluency(ctx, c, judge, p.model, p.kw.Keyword, res.Ideas[pr[0]].Text, res.Ideas[pr[1]].Text)
			if err != nil {
				return nil, err
			}
			fp.A, fp.B = pr[0], pr[1]
			res.Fluency = append(res.Fluency, fp)
		}
	}
	return res, nil
}

func (s *Suite) generate(ctx context.Context, c *engine.Calls, p payload, i int) (Idea, error) {
	idea := Idea{Index: i}
	// The authors' code asks qwq for its answer after a marker and cuts
	// the reply there; other models' replies are scored whole.
	qwq := s.cfg.FinalIdea == "qwq" && strings.Contains(strings.ToLower(p.model), "qwq")
	extract := func(out string) (string, bool) {
		switch {
		case qwq:
			return ExtractIdea(out)
		case s.cfg.FinalIdea == "all":
			return ExtractIdeaLine(out)
		}
		return strings.TrimSpace(judging.StripReasoning(out)), false
	}
	ask := func(prompt string, sample int) (localmodels.ChatResponse, error) {
		if qwq {
			prompt += FinalIdeaInstruction
		}
		return c.Chat(ctx, "generate", localmodels.ChatRequest{
			Model:    p.model,
			Messages: []localmodels.Message{{Role: "user", Content: prompt}},
			Options: localmodels.Options{Temperature: s.cfg.Temperature, Seed: localmodels.Int(s.cfg.Seed + sample),
				NumPredict: capOf(s.cfg.MaxTokens)},
		}, sample)
	}
	resp, err := ask(strings.ReplaceAll(s.prompts.Idea, "{{keywords}}", p.kw.Keyword), i)
	if err != nil {
		return idea, err
	}
	idea.Raw = resp.Content
	idea.ThinkChars = len(resp.Thinking)
	idea.Text, idea.Marker = extract(resp.Content)
	if phrase, refused := Refusal(idea.Text); refused {
		idea.Refused = phrase
		idea.Fallback = true
		resp, err = ask(strings.ReplaceAll(s.prompts.Fallback, "{{keywords}}", p.kw.Keyword), i)
		if err != nil {
			return idea, err
		}
		idea.Raw = resp.Content
		idea.Text, idea.Marker = extract(resp.Content)
		// The authors' code scores the fallback reply whatever it says:
		// dropping a second refusal would favour models that refuse.
		if phrase, again := Refusal(idea.Text); again {
			idea.Refusal2 = phrase
		}
	}
	idea.Words = Words(idea.Text)
	idea.Excluded = LengthExclusion(idea.Text)
	if c.Planning() {
		idea.Excluded = "" // a dry run plans the critics of every idea
	}
	return idea, nil
}

// FinalIdeaInstruction is what the authors' code appends to qwq's prompt.
const FinalIdeaInstruction = "\n\nYou MUST give your answer after **Final Idea:**"

// Length bounds of a scored idea, as the authors' code filters: more than
// MinChars and fewer than MaxChars characters, and fewer than MaxWords
// words.
const (
	MinChars = 100
	MaxChars = 2500
)

// LengthExclusion is why an idea of this text is not scored ("" when it
// is): the authors' filter, 100 < characters < 2,500 and words < 200.
func LengthExclusion(text string) string {
	chars, words := utf8.RuneCountInString(text), Words(text)
	switch {
	case chars <= MinChars:
		return fmt.Sprintf("%d characters, not over %d", chars, MinChars)
	case chars >= MaxChars:
		return fmt.Sprintf("%d characters, not under %d", chars, MaxChars)
	case words >= MaxWords:
		return fmt.Sprintf("%d words, not under %d", words, MaxWords)
	}
	return ""
}

func (s *Suite) critique(ctx context.Context, c *engine.Calls, judge, model, idea string) (Critique, error) {
	req := localmodels.ChatRequest{
		Model: judge,
		Messages: []localmodels.Message{
			{Role: "system", Content: s.prompts.Critic},
			{Role: "user", Content: strings.ReplaceAll(s.prompts.CriticUser, "{idea}", idea)},
		},
		Options: localmodels.Options{Temperature: s.cfg.CriticTemperature, Seed: localmodels.Int(s.cfg.Seed), NumPredict: capOf(s.cfg.JudgeMaxTokens)},
	}
	cr := Critique{Judge: judge}
	r := CriticReader(idea)
	r.Subject = model
	r.Other = func(o CriticScores, unread bool) {
		if cr.OtherUnread = unread; !unread {
			v := o.Scores()
			cr.Other = &v
		}
	}
	sc, ok, err := judging.JudgeWith(ctx, c, "critic", req, judging.Schema(s.cfg.JudgeFormat, CriticSchema), r)
	if err != nil {
		return cr, err
	}
	if ok {
		cr.Scored, cr.Originality, cr.Feasibility, cr.Clarity, cr.Analysis = true, sc.Originality, sc.Feasibility, sc.Clarity, sc.Analysis
	}
	return cr, nil
}

func (s *Suite) fluency(ctx context.Context, c *engine.Calls, judge, model, keyword, a, b string) (FluencyPair, error) {
	prompt := func(a, b string) string {
		return strings.NewReplacer("{{keyword}}", keyword, "{{A}}", a, "{{B}}", b).Replace(s.prompts.Fluency)
	}
	req := localmodels.ChatRequest{
		Model:    judge,
		Messages: []localmodels.Message{{Role: "user", Content: prompt(a, b)}},
		Options:  localmodels.Options{Temperature: s.cfg.CriticTemperature, Seed: localmodels.Int(s.cfg.Seed), NumPredict: capOf(s.cfg.FluencyMaxTokens)},
	}
	fp := FluencyPair{Judge: judge}
	r := FluencyReader(a, b)
	r.Subject = model
	// The grade says how alike the two ideas are: it must not depend on
	// which is shown first.
	r.Swap = func(r localmodels.ChatRequest) localmodels.ChatRequest {
		r.Messages = []localmodels.Message{{Role: "user", Content: prompt(b, a)}}
		return r
	}
	r.Other = func(o FluencyGrade, unread bool) {
		if fp.OtherUnread = unread; !unread {
			fp.OtherGrade = o.Grade
		}
	}
	g, ok, err := judging.JudgeWith(ctx, c, "fluency", req, judging.Schema(s.cfg.JudgeFormat, FluencySchema), r)
	if err != nil {
		return fp, err
	}
	if ok {
		fp.Scored, fp.Grade = true, g.Grade
		fp.Score, _ = metrics.FluencyScore(g.Grade)
	}
	return fp, nil
}

// capOf is a reply cap as sent: none for 0 (the authors' code sends none).
func capOf(n int) *int {
	if n <= 0 {
		return nil
	}
	return localmodels.Int(n)
}
