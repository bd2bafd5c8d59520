package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"halu/localmodels"
	"halu/runner/judging"
	"halu/runner/rundir"
	"halu/runner/setting"
)

// EngineConfig holds the settings of how runs reach the model server and
// read its replies, shared by every command that calls models. They are
// declared once (Settings); the manifest records them (Manifest.Engine),
// and a resume keeps those that change what a run measures.
type EngineConfig struct {
	Ollama   string
	Backends []string
	Timeout  time.Duration

	Idle          time.Duration
	Budget        time.Duration
	Repeats       int
	NumCtx        int
	NumThread     int
	KeepAlive     time.Duration
	ItemsInFlight int
	Parallel      int
	Cache         string
	NoCache       bool
	Retries       int
	Readers       string
	JudgeChecks   float64
	JudgeRepairs  int
	// TopP, TopK and RepeatPenalty are sent with every generation that
	// does not set its own; nil leaves the server's default (Ollama: the
	// model's Modelfile, else its built-in values).
	TopP          *float64
	TopK          *float64
	RepeatPenalty *float64
	// Logprobs asks every generation for its tokens' log-probabilities,
	// with this many alternatives per token (0: not asked).
	Logprobs int
	// Verify is the share of the calls the cache answers that a run asks
	// the server again, live, keeping the recorded replies (Reask.Keep):
	// whether the server still agrees with its cache (0: none).
	Verify float64
}

// MarshalJSON encodes the config by its settings (the manifest's engine).
func (c EngineConfig) MarshalJSON() ([]byte, error) { return c.Settings().MarshalJSON() }

// UnmarshalJSON reads a config MarshalJSON wrote.
func (c *EngineConfig) UnmarshalJSON(b []byte) error { return c.Settings().UnmarshalJSON(b) }

// DefaultEngineConfig has the engine's defaults, some from the
// environment: OLLAMA_HOST, OLLAMA_NUM_PARALLEL and HALU_CACHE.
func DefaultEngineConfig() EngineConfig {
	parallel := 1
	var n int
	if _, err := fmt.Sscan(os.Getenv("OLLAMA_NUM_PARALLEL"), &n); err == nil && n > 0 {
		parallel = n
	}
	return EngineConfig{Ollama: localmodels.HostFromEnv(), Timeout: 10 * time.Minute, Idle: 3 * time.Minute, Budget: 10 * time.Minute,
		Repeats: 8, NumCtx: 4096, KeepAlive: 10 * time.Minute, ItemsInFlight: 0, Parallel: parallel, Cache: defaultCacheDir(),
		Retries: 5, Readers: judging.ReadersHalu, JudgeChecks: DefaultJudgeChecks, JudgeRepairs: 1}
}

func defaultCacheDir() string {
	if d := os.Getenv("HALU_CACHE"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ".halu-cache"
	}
	return d + "/halu/responses"
}

// APIKeyEnv holds the bearer token sent to an OpenAI-compatible server.
// It is read from the environment only: never a setting, the manifest or
// a log line.
const APIKeyEnv = "HALU_API_KEY"

// DefaultJudgeChecks is the judge card's default sample: 5% of judged
// units, so its extra calls stay within 10% of a run's judge calls (a
// retest, and a swap for pairwise judgements, per drawn unit).
const DefaultJudgeChecks = 0.05

// ServerSettings are the settings of which server to talk to: every
// command that calls one takes them.
func (c *EngineConfig) ServerSettings() setting.List {
	return setting.List{
		setting.String("ollama", &c.Ollama, "Ollama server (host:port or URL), or several, comma-separated, for a pool; default from OLLAMA_HOST").Conducts(),
		setting.Strings("backend", &c.Backends, "model server: openai=URL (vLLM, llama-server, SGLang, LM Studio, Ollama's /v1; a bearer token from $"+APIKeyEnv+" if set) or ollama=HOST; repeat it for a pool of servers of one API").As(setting.Serving),
		setting.Duration("timeout", &c.Timeout, "limit for one non-streamed call (embeddings, model info)").Conducts(),
	}
}

// Settings are every engine setting: the server's, then how calls are
// made and replies read.
func (c *EngineConfig) Settings() setting.List {
	whole := func(p **float64) func() error {
		return func() error {
			if *p != nil && (**p != math.Trunc(**p) || **p < 0) {
				return fmt.Errorf("want a whole number ≥ 0, or server")
			}
			return nil
		}
	}
	return append(c.ServerSettings(),
		setting.Duration("idle-timeout", &c.Idle, "fail (and retry) a generation that sent no token for this long").Conducts(),
		setting.Duration("budget", &c.Budget, "stop a generation that ran this long and keep its text (done reason \"budget\")").As(setting.Serving),
		setting.Int("repetition-stop", &c.Repeats, "stop a generation whose text ends in one span repeated this many times (over 200 bytes); 0: never").As(setting.Serving).Min(0),
		setting.Int("num-ctx", &c.NumCtx, "context window (num_ctx) asked of every generation; 0: the server's default").As(setting.Serving).Min(0),
		setting.Int("num-thread", &c.NumThread, "CPU threads asked of every generation (num_thread; 0: the server's choice); on a small shared machine, the cores it may use").Conducts().Min(0),
		setting.Duration("keep-alive", &c.KeepAlive, "how long a model stays loaded after each call (Ollama keep_alive)").Conducts(),
		setting.Int("items-in-flight", &c.ItemsInFlight, "items in progress at once; more than --parallel lets calls be served model by model. 0 (auto): 32, raised (up to 16 times, and the run's items) while reloading models takes more than 5% of the calls' time — a server that holds fewer models than the run calls reloads them every batch of items").Conducts().Min(0),
		setting.Int("parallel", &c.Parallel, "model calls in flight on the server (match the server's OLLAMA_NUM_PARALLEL)").Conducts().Min(1),
		setting.String("cache", &c.Cache, "response cache directory").Conducts(),
		setting.Bool("no-cache", &c.NoCache, "do not read or write the response cache").Conducts(),
		setting.Int("retries", &c.Retries, "attempts per model call on transient errors (unreachable server, timeouts, 5xx)").Conducts().Min(1),
		setting.Choice("readers", &c.Readers, "which reading of text-format judge replies makes the headline figures: halu (halu's careful readers) or paper (the authors' rule where their code has one); both readings are made, and the figures under the other are shown beside with the replies read differently counted (not a departure: the protocol is what the judge is asked)", judging.ReadersHalu, judging.ReadersPaper),
		setting.Float("judge-checks", &c.JudgeChecks, "share of judged units the judge card checks with extra calls: judged again with another seed (test–retest) and, for pairwise judgements, with the two texts swapped; 0: none (the card then rests on the panel's own verdicts)").Conducts().Check(func() error {
			if c.JudgeChecks < 0 || c.JudgeChecks > 1 {
				return fmt.Errorf("want a share from 0 to 1")
			}
			return nil
		}),
		setting.Int("judge-repairs", &c.JudgeRepairs, "repair turns for a judge reply that does not read: the judge is asked again, shown its reply and what was wrong with it, before the judgement counts as unscored; 0: asked once. A verdict read from a repair turn is counted (judge_repaired), and a published table is compared on that count").As(setting.Serving).Min(0),
		setting.Int("logprobs", &c.Logprobs, "ask every generation for each token's log-probability and its N most likely alternatives (1–20): the model-side confidence scores a suite checks against its truth, at no extra call (replies cached without them are asked again); 0: not asked").As(setting.Beside).Min(0).Check(func() error {
			if c.Logprobs > 20 {
				return fmt.Errorf("want 0 to 20 (the servers give at most 20 alternatives)")
			}
			return nil
		}),
		setting.Float("verify", &c.Verify, "share of the calls the cache answers to ask the server again, live, and compare (the run keeps the recorded replies; its summary says how many came back identical): whether the server still agrees with the cache; 0: none (halu verify RUN does this for a finished run, with the replies given again)").Conducts().Check(func() error {
			if c.Verify < 0 || c.Verify > 1 {
				return fmt.Errorf("want a share from 0 to 1")
			}
			return nil
		}),
		setting.OptFloat("default-top-p", &c.TopP, "top_p sent with every generation that sets none (server: not sent, the server's default)", "server").Check(func() error {
			if c.TopP != nil && (*c.TopP <= 0 || *c.TopP > 1) {
				return fmt.Errorf("want a number in (0, 1], or server")
			}
			return nil
		}),
		setting.OptFloat("default-top-k", &c.TopK, "top_k sent with every generation that sets none (0: off; server: not sent, the server's default)", "server").Check(whole(&c.TopK)),
		setting.OptFloat("default-repeat-penalty", &c.RepeatPenalty, "repeat_penalty sent with every generation that sets none (1: off; server: not sent, the server's default)", "server").Check(func() error {
			if c.RepeatPenalty != nil && *c.RepeatPenalty <= 0 {
				return fmt.Errorf("want a number > 0, or server")
			}
			return nil
		}),
	)
}

// Validate runs every engine setting's declared checks (setting.Min,
// setting.Check). Commands call it before they contact a server, whatever
// gave the values — flags, HALU_ variables, a run file or a resumed run's
// manifest — and New refuses a config that fails it.
func (c *EngineConfig) Validate() error { return c.Settings().Validate() }

// Recorded is the engine's settings as the run of manifest m used them:
// its engine section, or, for a run of format 1, what it recorded of
// them (migrateEngine).
func Recorded(m *rundir.Manifest) (EngineConfig, error) {
	if m.Engine == nil {
		return migrateEngine(m)
	}
	ec := DefaultEngineConfig()
	err := json.Unmarshal(m.Engine, &ec)
	return ec, err
}

// migrateEngine reads a format-1 manifest's engine settings from what it
// recorded of them: the serving section, then the command line (the
// values flags gave, as text); a setting recorded in neither (a timeout,
// the retries) takes its default, which changes no number.
func migrateEngine(m *rundir.Manifest) (EngineConfig, error) {
	ec := DefaultEngineConfig()
	sv := m.Serving
	ec.NumCtx, ec.NumThread, ec.Parallel, ec.ItemsInFlight = sv.NumCtx, sv.NumThread, max(sv.Parallel, 1), max(sv.ItemsInFlight, 1)
	ec.Repeats = sv.Repetition.MinRepeats
	for _, d := range []struct {
		text string
		out  *time.Duration
	}{{sv.KeepAlive, &ec.KeepAlive}, {sv.IdleTimeout, &ec.Idle}, {sv.Budget, &ec.Budget}} {
		*d.out = 0
		if d.text != "" {
			v, err := time.ParseDuration(d.text)
			if err != nil {
				return ec, fmt.Errorf("serving: %q: %w", d.text, err)
			}
			*d.out = v
		}
	}
	if m.Server.Host != "" {
		ec.Ollama = m.Server.Host
		if m.Server.API == "openai" {
			ec.Backends = []string{"openai=" + m.Server.Host}
		}
	}
	settings := ec.Settings()
	for _, s := range settings {
		v, ok := m.Flags[s.Name]
		if !ok {
			continue
		}
		if s.Value.Type() == "stringSlice" {
			v = strings.Trim(v, "[]") // format 1 wrote lists as [a,b]
		}
		s.Value.Reset()
		if err := s.Value.Set(v); err != nil {
			return ec, fmt.Errorf("engine setting --%s %q: %w", s.Name, v, err)
		}
	}
	if m.Readers != "" {
		ec.Readers = m.Readers
	}
	return ec, nil
}
