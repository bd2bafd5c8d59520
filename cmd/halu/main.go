// Command halu evaluates open-weight language models for hallucination and
// scientific creativity, fully offline: every model call goes to a local
// Ollama server.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"halu/localmodels"
	"halu/runner"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

// Exit codes, for scripts and CI pipelines.
const (
	exitOK          = 0
	exitRunError    = 1
	exitUsage       = 2
	exitGate        = 3
	exitInterrupted = 130
)

// globals are the flags every command shares.
type globals struct {
	ollama    string
	timeout   time.Duration
	parallel  int
	cacheDir  string
	noCache   bool
	retries   int
	readers   string
	idle      time.Duration
	budget    time.Duration
	repeats   int
	numCtx    int
	numThread int
	keep      time.Duration
	inFlight  int
	backends  []string
	stdout    io.Writer
	stderr    io.Writer
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	g := &globals{stdout: stdout, stderr: stderr}
	root := newRoot(g)
	args, err := runFileSuite(args)
	if err != nil {
		fmt.Fprintf(stderr, "halu: %v\n", err)
		return exitUsage
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err = root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ue usageError
	var ce childExit
	switch {
	case errors.As(err, &ce):
		// with-ollama's command ended with its own status: pass it on, so
		// that a gate failure (3) or an interrupt (130) reads as such.
		fmt.Fprintf(stderr, "halu: %v\n", err)
		return ce.code
	case errors.As(err, &ue), errors.Is(err, localmodels.ErrModelNotFound):
		// A model the server does not have is fixed before a run, never
		// by resuming it: a usage error, found before any model call.
		fmt.Fprintf(stderr, "halu: %v\n", err)
		return exitUsage
	case errors.Is(err, runner.ErrInterrupted):
		fmt.Fprintf(stderr, "halu: %v\n", err)
		return exitInterrupted
	case ctx.Err() != nil:
		// A signal stopped the command (an index build, an import): the
		// error it gave is the consequence.
		fmt.Fprintf(stderr, "halu: interrupted: %v\n", err)
		return exitInterrupted
	case errors.Is(err, errGate):
		fmt.Fprintf(stderr, "halu: %v\n", err)
		return exitGate
	default:
		fmt.Fprintf(stderr, "halu: %v\n", err)
		return exitRunError
	}
}

type usageError struct{ error }

// childExit is a command run by halu that exited with code.
type childExit struct {
	error
	code int
}

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

var errGate = errors.New("quality gate failed")

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "halu",
		Short: "Evaluate open-weight LLMs for hallucination and scientific creativity, offline, on a local Ollama",
		Long: `halu runs published hallucination and creativity benchmarks against models served by a
local Ollama server. No call leaves the machine unless --ollama names another host.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetVersionTemplate("halu {{.Version}}\n")
	// HALU_ environment variables set any command's flags (a run file,
	// only run's: see runControl.settle).
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error { return applySettings(cmd, "") }
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVar(&g.ollama, "ollama", localmodels.HostFromEnv(), "Ollama server (host:port or URL), or several, comma-separated, for a pool; default from OLLAMA_HOST")
	pf.StringArrayVar(&g.backends, "backend", nil, "model server: openai=URL (vLLM, llama-server, SGLang, LM Studio, Ollama's /v1; a bearer token from $"+apiKeyEnv+" if set) or ollama=HOST; repeat it for a pool of servers of one API")
	pf.DurationVar(&g.timeout, "timeout", 10*time.Minute, "limit for one non-streamed call (embeddings, model info)")
	pf.DurationVar(&g.idle, "idle-timeout", 3*time.Minute, "fail (and retry) a generation that sent no token for this long")
	pf.DurationVar(&g.budget, "budget", 10*time.Minute, "stop a generation that ran this long and keep its text (done reason \"budget\")")
	pf.IntVar(&g.repeats, "repetition-stop", 8, "stop a generation whose text ends in one span repeated this many times (over 200 bytes); 0: never")
	pf.IntVar(&g.numCtx, "num-ctx", 4096, "context window (num_ctx) asked of every generation; 0: the server's default")
	pf.IntVar(&g.numThread, "num-thread", 0, "CPU threads asked of every generation (num_thread; 0: the server's choice); on a small shared machine, the cores it may use")
	pf.DurationVar(&g.keep, "keep-alive", 10*time.Minute, "how long a model stays loaded after each call (Ollama keep_alive)")
	pf.IntVar(&g.inFlight, "items-in-flight", 32, "items in progress at once; more than --parallel lets calls be served model by model")
	pf.IntVar(&g.parallel, "parallel", defaultParallel(), "model calls in flight on the server (match the server's OLLAMA_NUM_PARALLEL)")
	pf.StringVar(&g.cacheDir, "cache", defaultCacheDir(), "response cache directory")
	pf.BoolVar(&g.noCache, "no-cache", false, "do not read or write the response cache")
	pf.IntVar(&g.retries, "retries", 5, "attempts per model call on transient errors (unreachable server, timeouts, 5xx)")
	pf.StringVar(&g.readers, "readers", runner.ReadersPaper, "reading of text-format judge replies: paper (the authors' rule where their code has one) or halu (halu's stricter readers); both readings are made and disagreements counted")

	root.AddCommand(newVersionCmd(), newDoctorCmd(g), newModelsCmd(g), newRunCmd(g), newWithOllamaCmd(g), newIndexCmd(g), newKGCmd(g), newIntentCmd(), newBuildCmd(g), newRerunCmd(g), newReportCmd(), newCompareCmd(), newMergeCmd())
	return root
}

func defaultParallel() int {
	var n int
	if _, err := fmt.Sscan(os.Getenv("OLLAMA_NUM_PARALLEL"), &n); err == nil && n > 0 {
		return n
	}
	return 1
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

// client returns the one Ollama server of --ollama, for the commands that
// manage models on a server.
func (g *globals) client() (*localmodels.Client, error) {
	if strings.Contains(g.ollama, ",") {
		return nil, usagef("--ollama %q: this command works on one server; name one", g.ollama)
	}
	// The HTTP client's limit is a safety net behind the stream's own.
	c, err := localmodels.New(g.ollama, max(g.timeout, g.budget+g.idle))
	if err != nil {
		return nil, usageError{err}
	}
	return c, nil
}

// apiKeyEnv holds the bearer token sent to an OpenAI-compatible server.
// It is read from the environment only: never a flag, the manifest or a
// log line.
const apiKeyEnv = "HALU_API_KEY"

// server returns the model server the engine and doctor use: the
// --backend servers, else Ollama at --ollama; several make a pool, each
// with --parallel slots.
func (g *globals) server() (localmodels.Backend, error) {
	var members []localmodels.Backend
	timeout := max(g.timeout, g.budget+g.idle)
	if len(g.backends) == 0 {
		for _, h := range strings.Split(g.ollama, ",") {
			c, err := localmodels.New(strings.TrimSpace(h), timeout)
			if err != nil {
				return nil, usageError{err}
			}
			members = append(members, c)
		}
	}
	for _, spec := range g.backends {
		kind, addr, ok := strings.Cut(spec, "=")
		switch {
		case !ok || strings.TrimSpace(addr) == "":
			return nil, usagef("--backend %q: want openai=URL or ollama=HOST", spec)
		case kind == "ollama":
			c, err := localmodels.New(addr, timeout)
			if err != nil {
				return nil, usageError{err}
			}
			members = append(members, c)
		case kind == "openai":
			o, err := localmodels.NewOpenAI(addr, timeout, os.Getenv(apiKeyEnv))
			if err != nil {
				return nil, usageError{err}
			}
			o.Logf = func(format string, args ...any) { fmt.Fprintf(g.stderr, format, args...) }
			members = append(members, o)
		default:
			return nil, usagef("--backend %q: unknown kind %q (want openai or ollama)", spec, kind)
		}
	}
	if len(members) == 1 {
		return members[0], nil
	}
	p, err := localmodels.NewPool(members, g.parallel)
	if err != nil {
		return nil, usageError{err}
	}
	p.Logf = func(format string, args ...any) { fmt.Fprintf(g.stderr, format, args...) }
	return p, nil
}

func (g *globals) engine() (*runner.Engine, error) {
	c, err := g.server()
	if err != nil {
		return nil, err
	}
	if g.readers != runner.ReadersPaper && g.readers != runner.ReadersHalu {
		return nil, usagef("--readers %q (want paper or halu)", g.readers)
	}
	parallel := g.parallel
	if p, ok := c.(*localmodels.Pool); ok {
		parallel *= p.Size() // each server has --parallel slots
	}
	e := &runner.Engine{
		Readers:      g.readers,
		Client:       c,
		Parallel:     parallel,
		Retry:        runner.Retry{Attempts: g.retries, Base: time.Second, Max: 20 * time.Second},
		CallTimeout:  g.timeout,
		IdleTimeout:  g.idle,
		Budget:       g.budget,
		NumCtx:       g.numCtx,
		NumThread:    g.numThread,
		KeepAlive:    g.keep,
		JudgeRepairs: 1,

		ItemsInFlight: g.inFlight,
		Log:           g.stderr,
		Interactive:   isTerminal(g.stderr),
		Columns:       termWidth(g.stderr),
		Version:       version,
	}
	if g.repeats > 0 {
		e.Repetition = localmodels.Repetition{MinRepeats: g.repeats, MinChars: localmodels.DefaultRepetition.MinChars, MaxSpan: localmodels.DefaultRepetition.MaxSpan}
	}
	if !g.noCache {
		cache, err := runner.OpenCache(g.cacheDir)
		if err != nil {
			return nil, err
		}
		e.Cache = cache
	}
	return e, nil
}

// termWidth is w's terminal width in columns, 0 when w is no terminal.
func termWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print halu's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "halu %s\n", version)
			return nil
		},
	}
}
