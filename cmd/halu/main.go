// Command halu evaluates open-weight language models for hallucination and
// scientific creativity, fully offline: every model call goes to a local
// model server (Ollama by default, any OpenAI-compatible server, or a pool
// of them), and literature grounding uses an on-disk PubMed index.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"halu/localmodels"
	"halu/runner/engine"
	"halu/runner/registry"
	"halu/runner/rundir"
)

// version is set at build time with -ldflags "-X main.version=…", and
// revision (the commit, "+modified" for a tree with changes) by the
// Makefile's -X main.revision=…, where the toolchain stamps none.
var (
	version  = "0.1.0-dev"
	revision = ""
)

// Exit codes, for scripts and CI pipelines.
const (
	exitOK          = 0
	exitRunError    = 1
	exitUsage       = 2
	exitGate        = 3
	exitNothing     = 4
	exitInterrupted = 130
)

// globals are what every command shares: the engine's settings (bound as
// flags only by the commands that call a model server) and the output.
type globals struct {
	eng    engine.EngineConfig
	stdout io.Writer
	stderr io.Writer
	// build is halu's build identity (rundir.Build), begun early by a
	// command that has other work before it needs it; nil: made when
	// asked.
	build func() string
	// checks are, per suite command, what settles its settings (HALU_
	// variables, the run file) and runs every declared check of them and
	// of the engine's, as the run itself would: what halu slurm submit
	// asks of the run it writes into a job (suiteCmd registers them).
	checks map[*cobra.Command]func(*cobra.Command) error
}

func main() {
	stop := cpuProfile(os.Getenv("HALU_CPUPROFILE"), os.Stderr)
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// cpuProfile writes a CPU profile of the whole process to path (none when
// path is empty), for `go tool pprof`: where halu's own time per model
// call goes, which make bench-engine's figures compare with a direct
// client's. It returns the function that ends the profile.
func cpuProfile(path string, stderr io.Writer) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(stderr, "halu: HALU_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	// bleve reports through the standard logger (a segment it could not
	// load, say): say whose line it is.
	log.SetFlags(0)
	log.SetPrefix("halu: bleve: ")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	g := &globals{eng: engine.DefaultEngineConfig(), stdout: stdout, stderr: stderr}
	root := newRoot(g)
	args, err := runFileSuite(args)
	if err != nil {
		fmt.Fprintf(stderr, "halu: %v\n", err)
		return exitUsage
	}
	root.SetArgs(boolFlagsBeforeCommand(g, args))
	root.SetOut(stdout)
	root.SetErr(stderr)
	err = root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ue usageError
	var ce childExit
	if isCobraUsage(err) {
		// Cobra's own usage errors (an unknown command or flag, a wrong
		// argument count) are usage errors: exit 2, with the nearest flag
		// when one was misspelled.
		err = usageError{withSuggestion(err, root)}
	}
	switch {
	case errors.As(err, &ce):
		// with-ollama's command ended with its own status: pass it on, so
		// that a gate failure (3) or an interrupt (130) reads as such.
		fmt.Fprintf(stderr, "halu: %v\n", err)
		return ce.code
	case errors.As(err, &ue), errors.Is(err, localmodels.ErrModelNotFound), isInputError(err):
		// A model the server does not have is fixed before a run, never
		// by resuming it: a usage error, found before any model call.
		fmt.Fprintf(stderr, "halu: %v\n", err)
		return exitUsage
	case errors.Is(err, engine.ErrInterrupted):
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
	case errors.Is(err, errNothingMeasured):
		fmt.Fprintf(stderr, "halu: %v\n", err)
		return exitNothing
	default:
		fmt.Fprintf(stderr, "halu: %v\n", err)
		return exitRunError
	}
}

// boolFlagsBeforeCommand lets an engine setting's yes/no flag stand before
// the command, as its valued flags can ("halu --no-cache run …" as
// "halu --cache DIR run …"): cobra, finding the command, takes a flag it
// does not know yet to consume the next word, so a bare "--no-cache" there
// is written "--no-cache=true".
func boolFlagsBeforeCommand(g *globals, args []string) []string {
	isBool := map[string]bool{}
	for _, s := range g.eng.Settings() {
		isBool[s.Name] = s.Value.Type() == "bool"
	}
	out := append([]string(nil), args...)
	for i := 0; i < len(out); i++ {
		a := out[i]
		if !strings.HasPrefix(a, "-") {
			break // the command: what follows is its own
		}
		name := strings.TrimLeft(a, "-")
		b, known := isBool[name]
		switch {
		case b:
			out[i] = a + "=true"
		case known:
			i++ // its value
		}
	}
	return out
}

type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// cobraUsage are the messages cobra and pflag give a command line they
// cannot parse.
var cobraUsage = regexp.MustCompile(`^(?:unknown command |unknown flag: |unknown shorthand flag: |flag needs an argument: |invalid argument |accepts |requires at least |requires at most |accepts between |bad flag syntax: )`)

func isCobraUsage(err error) bool { return cobraUsage.MatchString(err.Error()) }

var unknownFlag = regexp.MustCompile(`^unknown flag: --([^\s=]+)`)

// withSuggestion adds to an unknown flag's error the nearest flag halu
// has (by edit distance, at most a third of its length): "--modles" → "did
// you mean --models?".
func withSuggestion(err error, root *cobra.Command) error {
	m := unknownFlag.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	names := map[string]bool{}
	var where []string // commands that take the flag, when it is halu's
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		add := func(f *pflag.Flag) {
			if f.Deprecated == "" && !f.Hidden {
				names[f.Name] = true
				if f.Name == m[1] && !slices.Contains(where, c.CommandPath()) {
					where = append(where, c.CommandPath())
				}
			}
		}
		c.Flags().VisitAll(add)
		c.PersistentFlags().VisitAll(add)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, d := range registry.All() {
		for _, s := range d.Config().Settings() {
			names[s.Name] = true
		}
	}
	if len(where) > 0 {
		if len(where) > 3 {
			where = append(where[:3], "…")
		}
		return fmt.Errorf("%w: it is a flag of %s — give it after the command that takes it", err, strings.Join(where, ", "))
	}
	best, bestD := "", len(m[1])/3+1
	for n := range names {
		if d := editDistance(m[1], n); d < bestD || d == bestD && best != "" && n < best {
			best, bestD = n, d
		}
	}
	if best == "" || bestD > len(m[1])/3 {
		return fmt.Errorf("%w (halu <command> --help lists the flags)", err)
	}
	return fmt.Errorf("%w — did you mean --%s?", err, best)
}

// isInputError reports whether err is in what halu was given to read (a
// damaged or unreadable input file): packages that read inputs mark such
// errors with an InputError method, and they exit as usage errors do (2).
func isInputError(err error) bool {
	var ie interface{ InputError() bool }
	return errors.As(err, &ie) && ie.InputError()
}

// childExit is a command run by halu that exited with code.
type childExit struct {
	error
	code int
}

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

var errGate = errors.New("quality gate failed")

func newRoot(g *globals) *cobra.Command {
	if g.checks == nil {
		g.checks = map[*cobra.Command]func(*cobra.Command) error{}
	}
	root := &cobra.Command{
		Use:   "halu",
		Short: "Evaluate open-weight LLMs for hallucination and scientific creativity, offline, on a local Ollama",
		Long: `halu runs published hallucination and creativity benchmarks against models served by a
local Ollama server. No call leaves the machine unless --ollama names another host.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	// --version prints what `halu version` prints, the build's hash made
	// only when asked.
	cobra.AddTemplateFunc("haluBuild", func() string { return rundir.Build(version, revision) })
	root.SetVersionTemplate("halu {{haluBuild}}\n")
	// HALU_ environment variables set any command's flags (a run file,
	// only run's: see runControl.settle).
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error { return applySettings(cmd, "") }
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newVersionCmd(), newDoctorCmd(g), newModelsCmd(g), newRunCmd(g), newWithOllamaCmd(g), newIndexCmd(g), newKGCmd(g), newIntentCmd(), newBuildCmd(g), newJudgesCmd(g), newRerunCmd(g), newVerifyCmd(g), newReportCmd(), newCompareCmd(), newMergeCmd(), newSlurmCmd(g))
	return root
}

// checkEngine runs the engine settings' declared checks: every command
// that contacts a server does it first (client, server), so a value out
// of range — from a flag, a HALU_ variable, a run file or a resumed run —
// is a usage error naming the setting before any connection.
func (g *globals) checkEngine() error {
	if err := g.eng.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// client returns the one Ollama server of --ollama, for the commands that
// manage models on a server.
func (g *globals) client() (*localmodels.Client, error) {
	if err := g.checkEngine(); err != nil {
		return nil, err
	}
	e := g.eng
	if strings.Contains(e.Ollama, ",") {
		return nil, usagef("--ollama %q: this command works on one server; name one", e.Ollama)
	}
	// The HTTP client's limit is a safety net behind the stream's own.
	c, err := localmodels.New(e.Ollama, max(e.Timeout, e.Budget+e.Idle))
	if err != nil {
		return nil, usageError{err}
	}
	return c, nil
}

// server returns the model server the engine and doctor use: the
// --backend servers, else Ollama at --ollama; several make a pool, each
// with --parallel slots.
func (g *globals) server() (localmodels.Backend, error) {
	if err := g.checkEngine(); err != nil {
		return nil, err
	}
	e := g.eng
	specs, flag := e.Backends, "--backend"
	if len(specs) == 0 {
		flag = "--ollama"
		for _, h := range strings.Split(e.Ollama, ",") {
			specs = append(specs, "ollama="+strings.TrimSpace(h))
		}
	}
	b, err := localmodels.DialAll(specs, e.Parallel, localmodels.DialOptions{
		// The HTTP client's limit is a safety net behind the stream's own.
		Timeout: max(e.Timeout, e.Budget+e.Idle),
		APIKey:  os.Getenv(engine.APIKeyEnv),
		Logf:    func(format string, args ...any) { fmt.Fprintf(g.stderr, format, args...) },
	})
	if err != nil {
		return nil, usageError{fmt.Errorf("%s: %w", flag, err)}
	}
	return b, nil
}

func (g *globals) engine() (*engine.Engine, error) {
	c, err := g.server()
	if err != nil {
		return nil, err
	}
	e, err := engine.New(g.eng, c)
	if err != nil {
		return nil, err
	}
	e.Log, e.Interactive, e.Columns = g.stderr, isTerminal(g.stderr), termWidth(g.stderr)
	e.ServerLog = os.Getenv(engine.ServerLogEnv)
	if g.build == nil {
		g.build = rundir.StartBuild(version, revision)
	}
	e.Version = g.build()
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
			fmt.Fprintf(cmd.OutOrStdout(), "halu %s\n", rundir.Build(version, revision))
			return nil
		},
	}
}
