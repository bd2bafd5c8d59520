package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"halu/runner/engine"
	"halu/runner/registry"
	"halu/runner/rundir"
	"halu/runner/setting"
	"halu/runner/summary"
)

// bindRunOut binds a suite run's --out: halu run SUITE's, and doctor's
// when it reads such a line.
func bindRunOut(fs *pflag.FlagSet, out *string) {
	fs.StringVar(out, "out", "", "run directory (default runs/SUITE-TIME)")
}

// given reports whether fs set a setting (by flag, HALU_ variable or run
// file: applySettings marks those as set too).
func given(fs *pflag.FlagSet) func(setting.Setting) bool {
	return func(s setting.Setting) bool { return s.Given(fs) }
}

// suiteConfig is the config a suite's flags in fs describe: cfg (bound to
// fs) with, when --protocol was given, that protocol's values for the
// settings not given (so that a rerun keeps the run's values otherwise).
func suiteConfig(fs *pflag.FlagSet, cfg setting.Config) (setting.Config, error) {
	list := cfg.Settings()
	if p, ok := list.Lookup("protocol"); !ok || !p.Given(fs) {
		return cfg, nil
	}
	if err := list.ApplyProtocol(given(fs)); err != nil {
		return nil, usageError{err}
	}
	return cfg, nil
}

// newSuite makes the suite decl declares from cfg; a config that cannot
// make a suite is a usage error.
func newSuite(decl engine.Declaration, cfg setting.Config) (engine.Suite, error) {
	s, err := decl.New(cfg)
	if err != nil {
		return engine.Suite{}, usageError{err}
	}
	return s, nil
}

// unknownSuite is the usage error for a suite name halu does not have,
// with the nearest names.
func unknownSuite(name string) error {
	var names, near []string
	for _, s := range registry.All() {
		if !s.Command {
			continue
		}
		names = append(names, s.Name)
		if d := editDistance(strings.ToLower(name), s.Name); d <= 2 || strings.HasPrefix(s.Name, strings.ToLower(name)) {
			near = append(near, s.Name)
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

// repeatFile is a run file that repeats what a run of suite with cfg
// measures: the suite's settings and the engine's measuring ones (not
// where the server is, the cache or other settings of how a run is
// carried out, which belong to the machine).
func repeatFile(suite string, cfg setting.Config, eng engine.EngineConfig) ([]byte, error) {
	var measures setting.List
	for _, s := range eng.Settings() {
		if s.Effect == setting.Measures {
			measures = append(measures, s)
		}
	}
	b, err := setting.RunFile(suite, cfg.Settings(), measures)
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("# The settings of this run: `halu run -f run.yaml --out DIR` repeats it (halu %s).\n", version)
	return append([]byte(head), b...), nil
}

// findSuite is the suite `halu run NAME` runs.
func findSuite(name string) (engine.Declaration, bool) {
	d, ok := registry.Find(name)
	return d, ok && d.Command
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
			return resumeDir(cmd, g, resume, gates, nil)
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
	g.eng.Settings().Bind(cmd.PersistentFlags())
	for _, def := range registry.All() {
		if !def.Command {
			continue
		}
		cmd.AddCommand(suiteCmd(g, def, def.Name, def.Short, &rc, &resume))
	}
	return cmd
}

// suiteCmd is the command that runs the suite def (use and short its
// name and help): its settings as flags, --out, and resume through
// resume's DIR when set. `halu run SUITE` and `halu judges validate` are
// made by it.
func suiteCmd(g *globals, def engine.Declaration, use, short string, rc *runControl, resume *string) *cobra.Command {
	var out string
	sub := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
	}
	cfg := def.Config()
	cfg.Settings().Bind(sub.Flags())
	bindRunOut(sub.Flags(), &out)
	g.checks[sub] = func(cmd *cobra.Command) error {
		if _, err := rc.settle(cmd); err != nil {
			return err
		}
		c, err := suiteConfig(cmd.Flags(), cfg)
		if err != nil {
			return err
		}
		if err := c.Settings().Validate(); err != nil {
			return usagef("%s: %v", def.Name, err)
		}
		return g.checkEngine()
	}
	sub.RunE = func(cmd *cobra.Command, args []string) error {
		gates, err := rc.settle(cmd)
		if err != nil {
			return err
		}
		if *resume != "" {
			return resumeDir(cmd, g, *resume, gates, cfg.Settings())
		}
		cfg, err := suiteConfig(cmd.Flags(), cfg)
		if err != nil {
			return err
		}
		// The build's hash is made while the suite reads its data.
		g.build = rundir.StartBuild(version, revision)
		s, err := newSuite(def, cfg)
		if err != nil {
			return err
		}
		shard, err := rc.shardSpec()
		if err != nil {
			return err
		}
		if out == "" {
			out = filepath.Join("runs", def.Name+"-"+time.Now().Format("20060102-150405"))
			if shard != nil {
				out += fmt.Sprintf("-shard%dof%d", shard.I, shard.N)
			}
		}
		file, err := repeatFile(def.Name, cfg, g.eng)
		if err != nil {
			return err
		}
		return execute(cmd, g, s, engine.RunSpec{Dir: out, Args: os.Args[1:], Config: cfg, DryRun: rc.dryRun, Flags: effectiveFlags(cmd), Invocation: os.Args[1:], Shard: shard, RunFile: file}, gates)
	}
	return sub
}

// resumeDir resumes the run in dir with its own settings: every setting
// that changes what the run measures takes the run's value where it was
// not given, and one given with another value than the run's is refused
// (a resumed run that changed what it measures halfway would mix two runs
// in one).
// suite is the settings of `halu run SUITE --resume DIR` (nil for `halu
// run --resume DIR`).
func resumeDir(cmd *cobra.Command, g *globals, dir string, gates []summary.Gate, suite setting.List) error {
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		return err
	}
	_, cfg, err := runSuite(dir, m)
	if err != nil {
		return err
	}
	differ, err := keepRunEngine(cmd.Flags(), g, dir, m)
	if err != nil {
		return err
	}
	if suite != nil {
		// halu run SUITE --resume DIR: the suite's flags given must be
		// the run's too.
		if name := cmd.Name(); name != m.Suite {
			return usagef("run %s is of suite %s, not %s", dir, m.Suite, name)
		}
		differ = append(differ, keepRun(cmd.Flags(), suite, cfg.Settings(), false)...)
	}
	if len(differ) > 0 {
		return usagef("resume %s keeps the run's own settings, and these differ: %s; start a new run for other settings, or change a stage's with `halu rerun %s --stage STAGE …`",
			dir, strings.Join(differ, ", "), dir)
	}
	return resumeRun(cmd, g, dir, m, cfg, nil, gates)
}

// runSuite is the suite of the run in dir (manifest m) and the run's own
// config, decoded (an older format's migrated).
func runSuite(dir string, m *rundir.Manifest) (engine.Declaration, setting.Config, error) {
	def, ok := registry.Find(m.Suite)
	if !ok {
		return engine.Declaration{}, nil, fmt.Errorf("run %s: unknown suite %q", dir, m.Suite)
	}
	cfg, err := def.Decode(m.Config, m.Format)
	if err != nil {
		return engine.Declaration{}, nil, fmt.Errorf("run %s: %w", dir, err)
	}
	return def, cfg, nil
}

// keepRun compares the measuring settings of current (bound to fs) with
// the run's (recorded, the same declaration): one given with another value
// is a difference, "--name given (the run's: value)"; with take, one not
// given takes the run's value.
func keepRun(fs *pflag.FlagSet, current, recorded setting.List, take bool) []string {
	var differ []string
	rv := recorded.Values()
	for _, s := range current {
		if s.Effect != setting.Measures || s.Internal() {
			continue
		}
		v, ok := rv[s.Name]
		switch {
		case !ok:
		case s.Given(fs):
			if !s.Value.Same(v) {
				differ = append(differ, fmt.Sprintf("--%s %s (the run's: %s)", s.Name, s.Value, v))
			}
		case take:
			s.Value.Reset()
			if err := s.Value.Set(v); err != nil {
				differ = append(differ, fmt.Sprintf("--%s: the run's %q does not read: %v", s.Name, v, err))
			}
		}
	}
	return differ
}

// keepRunEngine gives the engine's settings not given the run's values
// (they are part of every cache key and reading) and returns those given
// with other values.
func keepRunEngine(fs *pflag.FlagSet, g *globals, dir string, m *rundir.Manifest) ([]string, error) {
	rec, err := engine.Recorded(m)
	if err != nil {
		return nil, fmt.Errorf("run %s: engine settings: %w", dir, err)
	}
	return keepRun(fs, g.eng.Settings(), rec.Settings(), true), nil
}

// resumeRun resumes the run in dir (manifest m, config cfg) with its own
// settings, redoing the calls rerun names afresh (nil: none).
func resumeRun(cmd *cobra.Command, g *globals, dir string, m *rundir.Manifest, cfg setting.Config, rerun *engine.Rerun, gates []summary.Gate) error {
	def, ok := registry.Find(m.Suite)
	if !ok {
		return fmt.Errorf("run %s: unknown suite %q", dir, m.Suite)
	}
	s, err := def.New(cfg)
	if err != nil {
		return usagef("run %s: config: %w", dir, err)
	}
	return execute(cmd, g, s, engine.RunSpec{Dir: dir, Resume: true, Args: m.Args, Config: cfg, Rerun: rerun, Flags: m.Flags, Invocation: os.Args[1:]}, gates)
}

// execute runs s and applies the quality gates to its summary: exit 1 for
// a run error, 3 for a gate that failed.
func execute(cmd *cobra.Command, g *globals, s engine.Suite, spec engine.RunSpec, gates []summary.Gate) error {
	if err := s.CheckGates(gates); err != nil {
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
	return closeRun(w, res.Summary, res.Manifest, res.Dir, gates)
}

// closeRun ends a command that made a run: its gates are read (and
// printed) either way, and a run that measured nothing, in whole or in
// part, exits as such whatever they say.
func closeRun(w io.Writer, sum *summary.Summary, m *rundir.Manifest, dir string, gates []summary.Gate) error {
	gateErr := checkGates(w, sum, gates)
	if err := measuredNothing(m, dir); err != nil {
		if gateErr != nil {
			return fmt.Errorf("%w; also %v", err, gateErr)
		}
		return err
	}
	return gateErr
}

// errNothingMeasured is a run, or a part of one, whose figures rest on no
// scored unit (rundir.Measured): it exits with its own status (4), never
// as a measurement reported as made; its records and report are kept.
var errNothingMeasured = errors.New("nothing measured")

// measuredNothing is the closing error of a run that finished but measured
// nothing, in whole or in a part (nil when it measured what it set out to).
func measuredNothing(m *rundir.Manifest, dir string) error {
	if m == nil {
		return nil
	}
	line := m.Measured.Closing()
	if line == "" {
		return nil
	}
	return fmt.Errorf("%w: %s; its records and report are kept in %s", errNothingMeasured, line, dir)
}
