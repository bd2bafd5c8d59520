package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"

	"halu/runner/engine"
	"halu/runner/rundir"
	"halu/runner/setting"
	"halu/runner/summary"
)

// runControl are the settings of `halu run` that are not the suite's: the
// run file, the dry run and the quality gates.
type runControl struct {
	file      string
	dryRun    bool
	shard     string
	failUnder []string
	failOver  []string
	// maxUnscored is the largest unscored share a gated metric may have.
	maxUnscored float64
}

func (rc *runControl) bind(fs *pflag.FlagSet) {
	fs.StringVarP(&rc.file, "file", "f", "", "YAML run file: flag names as keys (flags and HALU_ environment variables override it)")
	fs.BoolVar(&rc.dryRun, "dry-run", false, "print the plan (items, calls per stage and model, estimated tokens) and stop")
	fs.StringVar(&rc.shard, "shard", "", "I/N: run the I-th of N slices of the items (item k goes to slice k mod N + 1) into its own run directory; halu merge joins the N runs")
	rc.bindGates(fs)
}

// shardSpec is --shard as a rundir.Shard (nil when not given).
func (rc *runControl) shardSpec() (*rundir.Shard, error) {
	if rc.shard == "" {
		return nil, nil
	}
	sh, err := rundir.ParseShard(rc.shard)
	if err != nil {
		return nil, usageError{err}
	}
	return sh, nil
}

// bindGates binds --fail-under and --fail-over alone (halu rerun has no
// run file or dry run).
func (rc *runControl) bindGates(fs *pflag.FlagSet) {
	fs.StringArrayVar(&rc.failUnder, "fail-under", nil, "METRIC=VALUE: exit 3 when a summary metric is below VALUE (repeatable; METRIC may omit the model)")
	fs.StringArrayVar(&rc.failOver, "fail-over", nil, "METRIC=VALUE: exit 3 when a summary metric is above VALUE (for rates where lower is better)")
	fs.Float64Var(&rc.maxUnscored, "max-unscored", summary.DefaultMaxUnscored, "a gated metric fails when more than this share of its units went unscored (gates also fail a metric with n = 0)")
}

// settle fills cmd's flags from the HALU_ environment and the run file,
// then reads the quality gates.
func (rc *runControl) settle(cmd *cobra.Command) ([]summary.Gate, error) {
	if err := applySettings(cmd, rc.file); err != nil {
		return nil, err
	}
	return rc.gates()
}

func (rc *runControl) gates() ([]summary.Gate, error) {
	var out []summary.Gate
	for _, list := range []struct {
		specs []string
		over  bool
	}{{rc.failUnder, false}, {rc.failOver, true}} {
		for _, s := range list.specs {
			g, err := summary.ParseGate(s, list.over)
			if err != nil {
				return nil, usageError{err}
			}
			if rc.maxUnscored < 0 || rc.maxUnscored > 1 {
				return nil, usagef("--max-unscored %g: want a share between 0 and 1", rc.maxUnscored)
			}
			g.MaxUnscored = rc.maxUnscored
			out = append(out, g)
		}
	}
	return out, nil
}

// allFlags are a command's own flags and those it inherits.
func allFlags(cmd *cobra.Command) []*pflag.Flag {
	var out []*pflag.Flag
	seen := map[string]bool{}
	for _, fs := range []*pflag.FlagSet{cmd.Flags(), cmd.InheritedFlags()} {
		fs.VisitAll(func(f *pflag.Flag) {
			if !seen[f.Name] {
				seen[f.Name] = true
				out = append(out, f)
			}
		})
	}
	return out
}

// applySettings fills every flag not given on the command line from its
// HALU_ environment variable, else from the run file: flags override the
// environment, which overrides the file.
func applySettings(cmd *cobra.Command, file string) error {
	fromFile := map[string][]string{}
	if file != "" {
		var err error
		if fromFile, err = readRunFile(file, cmd); err != nil {
			return err
		}
	}
	return applyTo(allFlags(cmd), fromFile, file)
}

// applyTo fills every flag of flags not given from its HALU_ environment
// variable, else from fromFile (a run file's values, read from file).
func applyTo(flags []*pflag.Flag, fromFile map[string][]string, file string) error {
	// Two spellings of one setting (a name and its older one) share a
	// value: one given on the command line sets both.
	given := map[any]bool{}
	for _, f := range flags {
		if f.Changed && reflect.ValueOf(f.Value).Kind() == reflect.Pointer {
			given[f.Value] = true
		}
	}
	for _, f := range flags {
		if f.Changed || f.Deprecated != "" || f.Name == "file" || f.Name == "help" || f.Name == "version" {
			continue
		}
		if reflect.ValueOf(f.Value).Kind() == reflect.Pointer && given[f.Value] {
			continue
		}
		var vals []string
		source := ""
		if v, ok := os.LookupEnv(setting.EnvName(f.Name)); ok {
			vals, source = []string{v}, setting.EnvName(f.Name)
		} else if v, ok := fromFile[f.Name]; ok {
			vals, source = v, file
		} else {
			continue
		}
		for _, v := range vals {
			if err := f.Value.Set(v); err != nil {
				return usagef("%s: --%s %q: %v", source, f.Name, v, err)
			}
		}
		f.Changed = true
	}
	return nil
}

// readRunFile reads a YAML run file: a mapping from flag names to values —
// a scalar, a list (joined with commas for list flags) or, for repeatable
// flags, a list of lists. An unknown key is an error naming its line.
func readRunFile(path string, cmd *cobra.Command) (map[string][]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usageError{err}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, usagef("%s: %v", path, err)
	}
	out := map[string][]string{}
	if len(doc.Content) == 0 {
		return out, nil
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil, usagef("%s:%d: want a mapping of flag names to values", path, m.Line)
	}
	known := map[string]*pflag.Flag{}
	for _, f := range allFlags(cmd) {
		known[f.Name] = f
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		name := strings.ReplaceAll(k.Value, "_", "-")
		if name == "suite" {
			// The suite the file is for (see runFileSuite): it must be
			// the command's.
			if sub := cmd.Name(); v.Value != sub {
				return nil, usagef("%s:%d: the file is for suite %q, not %q", path, v.Line, v.Value, sub)
			}
			continue
		}
		f, ok := known[name]
		if !ok || name == "file" {
			return nil, usagef("%s:%d: %q is not a setting of `halu %s`", path, k.Line, k.Value, cmd.CommandPath()[len("halu "):])
		}
		vals, err := yamlValues(v, f.Value.Type() == "stringArray")
		if err != nil {
			return nil, usagef("%s:%d: %s: %v", path, v.Line, k.Value, err)
		}
		out[name] = vals
	}
	return out, nil
}

// runFileSuite puts the suite a run file names (its `suite:` key) into a
// command line that gives a run file but no suite (`halu run -f F.yaml
// …`), right after "run"; other command lines are returned as they are.
func runFileSuite(args []string) ([]string, error) {
	at, file := -1, ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case at < 0 && a == "run":
			at = i
		case at < 0:
			continue
		case a == "--":
			i = len(args)
		case a == "-f" || a == "--file":
			if i+1 < len(args) {
				file = args[i+1]
			}
			i++
		case strings.HasPrefix(a, "--file="):
			file = strings.TrimPrefix(a, "--file=")
		case strings.HasPrefix(a, "-f="):
			file = strings.TrimPrefix(a, "-f=")
		case !strings.HasPrefix(a, "-"):
			if _, ok := findSuite(a); ok || i == at+1 {
				return args, nil // the command names its suite
			}
		}
	}
	if at < 0 || file == "" {
		return args, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, usageError{err}
	}
	var doc struct {
		Suite string `yaml:"suite"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, usagef("%s: %v", file, err)
	}
	if doc.Suite == "" {
		return args, nil
	}
	if _, ok := findSuite(doc.Suite); !ok {
		return nil, usagef("%s: suite: %v", file, unknownSuite(doc.Suite))
	}
	out := append(append(append([]string(nil), args[:at+1]...), doc.Suite), args[at+1:]...)
	return out, nil
}

func yamlValues(v *yaml.Node, repeatable bool) ([]string, error) {
	switch v.Kind {
	case yaml.ScalarNode:
		return []string{v.Value}, nil
	case yaml.SequenceNode:
		var parts []string
		for _, e := range v.Content {
			switch {
			case e.Kind == yaml.ScalarNode:
				parts = append(parts, e.Value)
			case e.Kind == yaml.SequenceNode && repeatable:
				inner, err := yamlValues(e, false)
				if err != nil {
					return nil, err
				}
				parts = append(parts, strings.Join(inner, ","))
			default:
				return nil, fmt.Errorf("line %d: want a value or a list of values", e.Line)
			}
		}
		if repeatable {
			return parts, nil
		}
		return []string{strings.Join(parts, ",")}, nil
	}
	return nil, fmt.Errorf("want a value or a list of values")
}

// effectiveFlags are every setting's value, for the manifest.
func effectiveFlags(cmd *cobra.Command) map[string]string {
	out := map[string]string{}
	for _, f := range allFlags(cmd) {
		if f.Name != "help" {
			out[f.Name] = f.Value.String()
		}
	}
	return out
}

// checkGates applies the quality gates to a run's summary.
func checkGates(w io.Writer, sum *summary.Summary, gates []summary.Gate) error {
	if len(gates) == 0 {
		return nil
	}
	if sum == nil {
		return fmt.Errorf("%w: the run has no summary to check", errGate)
	}
	var failed []string
	for _, g := range gates {
		f, err := sum.Check(g)
		if err != nil {
			return usageError{err}
		}
		failed = append(failed, f...)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: %s", errGate, strings.Join(failed, "; "))
	}
	fmt.Fprintf(w, "quality gates passed: %d\n", len(gates))
	return nil
}

func newRerunCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rerun RUN_DIR (--stage STAGE [SUITE FLAGS…] [--out DIR] | --errors)",
		Short: "Redo one stage of a run (and what depends on it) reusing the rest, or redo only its failed items",
		Long: `halu rerun RUN_DIR --stage judge --judges a,b
    recomputes the calls of stage "judge" with the run's settings changed by the suite flags given
    (here: other judges), into a new run directory (default RUN_DIR-rerun-STAGE). The stages each
    item went through before it are read from the response cache — none is generated again; a
    reply missing from the cache is an error. Later stages are recomputed where their input changed.
halu rerun RUN_DIR --errors
    redoes, in place, the items that failed and the items with unscored judgements (asking their
    failed stages afresh), reusing every other reply from the cache.`,
		DisableFlagParsing: true,
		RunE:               func(cmd *cobra.Command, args []string) error { return rerun(cmd, g, args) },
	}
	return cmd
}

// rerun is halu rerun: a stage redone with the run's settings changed by
// the suite flags given (into a new run directory), or the failed items
// and unscored judgements redone in place (--errors).
func rerun(cmd *cobra.Command, g *globals, args []string) error {
	var stage, out string
	var errorsOnly, dry bool
	var rc runControl
	own := pflag.NewFlagSet("rerun", pflag.ContinueOnError)
	own.StringVar(&stage, "stage", "", "the stage to recompute")
	own.BoolVar(&errorsOnly, "errors", false, "redo failed items and unscored judgements, in place")
	own.StringVar(&out, "out", "", "run directory of a stage rerun")
	own.BoolVar(&dry, "dry-run", false, "print the plan of a stage rerun (calls per stage and model, those the cache answers) and stop")
	rc.bindGates(own)
	g.eng.Settings().Bind(own)
	for _, a := range args {
		if a == "-h" || a == "--help" {
			return cmd.Help()
		}
	}
	at := runDirArg(args, own)
	if at < 0 {
		return usagef("rerun: name the run directory before the suite's flags (halu rerun RUN_DIR --stage STAGE …)")
	}
	dir := args[at]
	args = append(append([]string(nil), args[:at]...), args[at+1:]...)
	m, recs, err := engine.ReadRun(dir)
	if err != nil {
		return err
	}
	def, ok := findSuite(m.Suite)
	if !ok {
		return fmt.Errorf("run %s: suite %q cannot be rerun", dir, m.Suite)
	}
	// The run's own config, changed by the suite flags given.
	cfg, err := def.Decode(m.Config, m.Format)
	if err != nil {
		return fmt.Errorf("run %s: %w", dir, err)
	}
	suiteFlags := pflag.NewFlagSet(m.Suite, pflag.ContinueOnError)
	cfg.Settings().Bind(suiteFlags)
	mine, suiteArgs, err := splitArgs(args, own, suiteFlags)
	if err != nil {
		return usagef("rerun: %v", err)
	}
	if err := own.Parse(mine); err != nil {
		return usageError{err}
	}
	if own.NArg() > 0 {
		return usagef("rerun: unexpected %v", own.Args())
	}
	var ownFlags []*pflag.Flag
	own.VisitAll(func(f *pflag.Flag) { ownFlags = append(ownFlags, f) })
	if err := applyTo(ownFlags, nil, ""); err != nil {
		return err
	}
	gates, err := rc.gates()
	if err != nil {
		return err
	}
	// The engine's settings (num_ctx, readers, …) are the run's unless
	// given: they are part of every cache key.
	if _, err := keepRunEngine(own, g, dir, m); err != nil {
		return err
	}
	switch {
	case errorsOnly && stage != "":
		return usagef("rerun: --stage or --errors, not both")
	case errorsOnly && dry:
		return usagef("rerun: --dry-run plans a --stage rerun")
	case errorsOnly:
		if len(suiteArgs) > 0 {
			return usagef("rerun --errors keeps the run's settings: %v not allowed", suiteArgs)
		}
		plan, n, err := engine.ErrorsRerun(dir)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "rerun %s: %d records with unscored judgements set aside; failed items are redone too\n", dir, n)
		return resumeRun(cmd, g, dir, m, cfg, plan, gates)
	case stage == "":
		return usagef("rerun: --stage STAGE or --errors")
	}
	plan, err := engine.StageRerun(dir, m, recs, stage)
	if err != nil {
		return usagef("rerun %s: %v", dir, err)
	}
	if err := suiteFlags.Parse(suiteArgs); err != nil {
		return usageError{err}
	}
	if suiteFlags.NArg() > 0 {
		return usagef("%s: unexpected %v", m.Suite, suiteFlags.Args())
	}
	if _, err := suiteConfig(suiteFlags, cfg); err != nil {
		return err
	}
	s, err := newSuite(def, cfg)
	if err != nil {
		return err
	}
	if out == "" {
		out = strings.TrimRight(dir, string(filepath.Separator)) + "-rerun-" + stage
	}
	flags := map[string]string{}
	for k, v := range m.Flags {
		flags[k] = v
	}
	flags["rerun"] = strings.Join(append([]string{dir, "--stage", stage}, suiteArgs...), " ")
	return execute(cmd, g, s, engine.RunSpec{Dir: out, Args: os.Args[1:], Config: cfg, Rerun: plan, Flags: flags, Invocation: os.Args[1:], DryRun: dry}, gates)
}

// runDirArg is the index of the first positional argument, skipping own's
// flags and their values; -1 when a flag own does not know comes first.
func runDirArg(args []string, own *pflag.FlagSet) int {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			return i
		}
		name, _, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := own.Lookup(name)
		if f == nil {
			return -1
		}
		if !hasVal && f.NoOptDefVal == "" {
			i++
		}
	}
	return -1
}

// splitArgs sorts arguments into those of own and those of suite (each
// flag with its value); a flag of neither is an error.
func splitArgs(args []string, own, suite *pflag.FlagSet) (mine, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			mine = append(mine, a)
			continue
		}
		long := strings.HasPrefix(a, "--")
		name, _, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		lookup := func(fs *pflag.FlagSet) *pflag.Flag {
			if long {
				return fs.Lookup(name)
			}
			if len(name) != 1 {
				return nil
			}
			return fs.ShorthandLookup(name)
		}
		f, dst := lookup(own), &mine
		if f == nil {
			f, dst = lookup(suite), &rest
		}
		if f == nil {
			return nil, nil, fmt.Errorf("unknown flag %s", a)
		}
		*dst = append(*dst, a)
		if !hasVal && f.NoOptDefVal == "" {
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("flag %s needs a value", a)
			}
			i++
			*dst = append(*dst, args[i])
		}
	}
	return mine, rest, nil
}
