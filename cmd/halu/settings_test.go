package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/pflag"

	"halu/runner/engine"
	"halu/runner/judging"
	"halu/runner/registry"
	"halu/runner/rundir"
	"halu/runner/setting"
)

// sampleArgs are command-line arguments that give every setting of list
// (but those no flag sets) a value other than its default.
func sampleArgs(t *testing.T, list setting.List) []string {
	t.Helper()
	var args []string
	for _, s := range list {
		if s.Internal() {
			continue
		}
		cur := s.Value.String()
		var vals []string
		switch typ := s.Value.Type(); {
		case s.Value.Choices() != nil:
			for _, c := range s.Value.Choices() {
				if c != cur {
					vals = []string{c}
					break
				}
			}
		case typ == "int" || typ == "uint64":
			n, _ := strconv.Atoi(cur)
			vals = []string{strconv.Itoa(n + 3)}
		case typ == "float64":
			f, _ := strconv.ParseFloat(cur, 64)
			vals = []string{strconv.FormatFloat(f+0.25, 'g', -1, 64)}
		case typ == "bool":
			b, _ := strconv.ParseBool(cur)
			vals = []string{strconv.FormatBool(!b)}
		case typ == "duration":
			vals = []string{"7s"}
		case typ == "stringSlice":
			vals = []string{"a,b", "c"}
		case typ == "float64Slice":
			vals = []string{"0.5,0.25"}
		case typ == "stringArray":
			vals = []string{"k=v", "m=n"}
		case typ == "string":
			vals = []string{"0.5"}
		default:
			t.Fatalf("--%s: no sample value for type %s", s.Name, typ)
		}
		if len(vals) == 0 {
			t.Fatalf("--%s: no other value to give", s.Name)
		}
		for _, v := range vals {
			args = append(args, "--"+s.Name+"="+v)
		}
	}
	return args
}

// commandOf is the command whose flags hold a suite's settings: halu run
// SUITE, or halu build cfaith for the construction.
func commandOf(t *testing.T, d engine.Declaration) []string {
	if d.Command {
		return []string{"run", d.Name}
	}
	if d.Name == "cfaith-build" {
		return []string{"build", "cfaith"}
	}
	if d.Name == "judges" {
		return []string{"judges", "validate"}
	}
	t.Fatalf("%s: no command runs it", d.Name)
	return nil
}

// Every setting of every registered suite and of the engine goes from the
// command line to the config, to the manifest's JSON and back, to a run
// file and back through halu's run-file reader, and arrives as given.
func TestSettingsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, d := range registry.All() {
		t.Run(d.Name, func(t *testing.T) {
			// flags → config
			cfg := d.Config()
			eng := engine.DefaultEngineConfig()
			defaults := cfg.Settings().Values()
			fs := pflag.NewFlagSet(d.Name, pflag.ContinueOnError)
			cfg.Settings().Bind(fs)
			eng.Settings().Bind(fs)
			if err := fs.Parse(append(sampleArgs(t, cfg.Settings()), sampleArgs(t, eng.Settings())...)); err != nil {
				t.Fatal(err)
			}
			for _, s := range cfg.Settings() {
				if !s.Internal() && s.Value.Same(defaults[s.Name]) {
					t.Errorf("--%s kept its default %q", s.Name, defaults[s.Name])
				}
			}
			// config → JSON → config
			raw, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			back, err := d.Decode(raw, rundir.FormatVersion)
			if err != nil {
				t.Fatal(err)
			}
			if again, _ := json.Marshal(back); !bytes.Equal(again, raw) {
				t.Fatalf("JSON round trip:\n%s\n%s", raw, again)
			}
			engRaw, _ := json.Marshal(&eng)
			var engBack engine.EngineConfig
			if err := json.Unmarshal(engRaw, &engBack); err != nil {
				t.Fatal(err)
			}
			if again, _ := json.Marshal(&engBack); !bytes.Equal(again, engRaw) {
				t.Fatalf("engine JSON round trip:\n%s\n%s", engRaw, again)
			}
			// config → run file → flags → config, through the reader halu uses
			file := filepath.Join(dir, d.Name+".yaml")
			suite := ""
			if d.Command {
				suite = d.Name
			}
			b, err := setting.RunFile(suite, back.Settings(), engBack.Settings())
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(file, b, 0o644)
			root := newRoot(&globals{eng: engine.DefaultEngineConfig()})
			cmd, _, err := root.Find(commandOf(t, d))
			if err != nil {
				t.Fatal(err)
			}
			vals, err := readRunFile(file, cmd)
			if err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			fresh, freshEng := d.Config(), engine.DefaultEngineConfig()
			fs2 := pflag.NewFlagSet(d.Name, pflag.ContinueOnError)
			fresh.Settings().Bind(fs2)
			freshEng.Settings().Bind(fs2)
			for name, vs := range vals {
				for _, v := range vs {
					if err := fs2.Set(name, v); err != nil {
						t.Fatalf("run file --%s %q: %v", name, v, err)
					}
				}
			}
			// Settings no flag sets are the command's to set.
			for _, s := range cfg.Settings() {
				if s.Internal() {
					r, _ := fresh.Settings().Lookup(s.Name)
					r.Value.Set(s.Value.String())
				}
			}
			if got, _ := json.Marshal(fresh); !bytes.Equal(got, raw) {
				t.Errorf("run file round trip:\n%s\n%s\n%s", raw, got, b)
			}
			if got, _ := json.Marshal(&freshEng); !bytes.Equal(got, engRaw) {
				t.Errorf("engine run file round trip:\n%s\n%s", engRaw, got)
			}
		})
	}
}

// A command shows the flags it uses: the index, knowledge-graph, report
// and comparison commands call no model server and take none of its
// settings; every command that calls one takes them all.
func TestCommandsShowOnlyTheirFlags(t *testing.T) {
	ec := engine.DefaultEngineConfig()
	for _, tc := range []struct {
		cmd    []string
		server bool
	}{
		{[]string{"index", "search"}, false}, {[]string{"index", "build"}, false}, {[]string{"kg", "import"}, false},
		{[]string{"report"}, false}, {[]string{"compare"}, false}, {[]string{"merge"}, false}, {[]string{"intent", "make"}, false},
		{[]string{"models", "tiny"}, false},
		{[]string{"run", "hic"}, true}, {[]string{"build", "cfaith"}, true}, {[]string{"doctor"}, true},
		{[]string{"models", "list"}, true},
	} {
		var out, errb bytes.Buffer
		code := run(append(tc.cmd, "--help"), &out, &errb)
		if code != exitOK {
			t.Fatalf("%v --help: exit %d: %s", tc.cmd, code, errb.String())
		}
		help := out.String()
		settings := ec.Settings()
		if tc.cmd[0] == "models" {
			settings = ec.ServerSettings()
		}
		for _, s := range settings {
			has := strings.Contains(help, "--"+s.Name+" ")
			if has != tc.server {
				t.Errorf("halu %s --help lists --%s: %v, want %v", strings.Join(tc.cmd, " "), s.Name, has, tc.server)
			}
		}
	}
}

// Run directories written before run formats were versioned are read
// through their migration: their settings, under today's names, are the
// ones they ran with, the report reads them, and a resume writes them in
// today's format.
func TestReadsFirstFormatRuns(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want map[string]string // setting → value, as the first format meant it
	}{
		{"smoke", map[string]string{"limit": "2", "judges": "judge", "judge-format": "json"}},
		{"hic", map[string]string{"strategy": "scp", "temperature": "0.2", "questions": "1", "answers": "2", "dhp-answers": "split"}},
		{"ideas", map[string]string{"limit": "1", "keywords": "", "fluency-pairs": "all", "organisation": "gen=Meta", "same-base": "j1,j2", "temperature": "0.5", "scoring": "first-release"}},
		{"hypo", map[string]string{"setting": "parametric", "tasks": "chem-gene", "limit": "1", "candidates": "0", "sample": "stratified"}},
		{"intent", map[string]string{"judges": "judge", "protocol": "halu", "judge-format": "json", "code-checks": "true"}},
		{"cfaith", map[string]string{"judges": "judge", "limit": "1", "top-p": "0.7"}},
		{"cfaith-build/run", map[string]string{"agent": "gen", "verifier": "judge", "types": "EntErr", "max-questions": "1"}},
	} {
		dir := filepath.Join("..", "..", "testdata", "runs-v1", tc.dir)
		m, err := rundir.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		if m.Format != 1 {
			t.Errorf("%s: format %d, want 1", tc.dir, m.Format)
		}
		d, ok := registry.Find(m.Suite)
		if !ok {
			t.Fatalf("%s: suite %s", tc.dir, m.Suite)
		}
		cfg, err := d.Decode(m.Config, m.Format)
		if err != nil {
			t.Fatalf("%s: %v", tc.dir, err)
		}
		got := cfg.Settings().Values()
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: --%s %q, want %q", tc.dir, k, got[k], v)
			}
		}
		// The engine's settings come from what the run recorded: its
		// serving section, and its command line where it has one (a
		// build recorded none: the retries take their default).
		retries := 1
		if m.Flags == nil {
			retries = 5
		}
		if ec, err := engine.Recorded(m); err != nil || ec.NumCtx != 2048 || ec.Readers != judging.ReadersPaper || ec.Retries != retries {
			t.Errorf("%s: engine %+v (%v)", tc.dir, ec, err)
		}
	}
	// The report reads them all, and its verdicts on published tables
	// rest on their migrated settings: the hypo run that a first-format
	// halu called comparable with Table 2 is reference only.
	runs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "runs-v1", "*", "manifest.json"))
	if err != nil || len(runs) != 6 {
		t.Fatalf("runs %v %v", runs, err)
	}
	args := []string{"report", "--md"}
	for _, r := range runs {
		args = append(args, filepath.Dir(r))
	}
	args = append(args, filepath.Join("..", "..", "testdata", "runs-v1", "cfaith-build", "run"))
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != exitOK {
		t.Fatalf("report: exit %d: %s", code, errb.String())
	}
	if strings.Contains(out.String(), "comparable:") && !strings.Contains(out.String(), "reference only:") {
		t.Errorf("report of first-format runs:\n%s", out.String())
	}
	if n := strings.Count(out.String(), "reference only: "); n < 7 {
		t.Errorf("%d verdicts of reference only, want one per published table and run", n)
	}
	// The cfaith run's records log a judge's repair turn, from before
	// halu counted the verdicts read from them: its verdicts name it.
	if !strings.Contains(out.String(), "repair turns asked of the judges: 1 ") {
		t.Errorf("report of first-format runs does not name the cfaith run's uncounted repair turn:\n%s", out.String())
	}

	// A resume of a first-format run (nothing left to do) writes it in
	// today's format, its config under today's names.
	f := newFake(t)
	// The runs were made with gen's weights of digest "g": a resume needs
	// the run's own weights (other digests are refused).
	f.SetModelDigest("gen:latest", "g")
	work := filepath.Join(t.TempDir(), "smoke")
	copyDir(t, filepath.Join("..", "..", "testdata", "runs-v1", "smoke"), work)
	if r := halu(t, f, t.TempDir(), "run", "--resume", work); r.code != exitOK {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	m, err := rundir.ReadManifest(work)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	json.Unmarshal(m.Config, &keys)
	if m.Format != rundir.FormatVersion || keys["limit"] == nil || keys["questions"] != nil || keys["schema"] != nil {
		t.Errorf("resumed: format %d, config %s", m.Format, m.Config)
	}
	// A resumed cfaith run still names the repair turn its first session
	// asked: today's manifest does not make it counted.
	work = filepath.Join(t.TempDir(), "cfaith")
	copyDir(t, filepath.Join("..", "..", "testdata", "runs-v1", "cfaith"), work)
	// Its judge replies were all unread: it measured nothing, and says so.
	if r := halu(t, f, t.TempDir(), "run", "--resume", work); r.code != exitNothing {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	if r := halu(t, f, t.TempDir(), "report", "--md", work); r.code != exitOK || !strings.Contains(r.stdout, "repair turns asked of the judges: 1 ") {
		t.Errorf("report of the resumed cfaith run (exit %d, %s) does not name its uncounted repair turn:\n%s", r.code, r.stderr, r.stdout)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	es, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A run directory holds run.yaml, a run file that repeats what the run
// measures: a run made from it has the same settings.
func TestRunFileRepeatsTheRun(t *testing.T) {
	f := newFake(t)
	cache, dir := t.TempDir(), t.TempDir()
	first := filepath.Join(dir, "first")
	if r := halu(t, f, cache, "run", "smoke", "--models", "gen", "--judges", "judge", "--limit", "2", "--temperature", "0.3",
		"--judge-format", "text", "--num-ctx", "2048", "--default-top-p", "0.9", "--out", first); r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	again := filepath.Join(dir, "again")
	if r := halu(t, f, cache, "run", "-f", filepath.Join(first, "run.yaml"), "--out", again); r.code != exitOK {
		t.Fatalf("run -f run.yaml: exit %d: %s\n%s", r.code, r.stderr, mustRead(t, filepath.Join(first, "run.yaml")))
	}
	a, _ := rundir.ReadManifest(first)
	b, _ := rundir.ReadManifest(again)
	if a == nil || b == nil || !bytes.Equal(a.Config, b.Config) || !bytes.Equal(a.Engine, b.Engine) {
		t.Fatalf("configs differ:\n%s\n%s\n%s\n%s", a.Config, b.Config, a.Engine, b.Engine)
	}
	if !strings.Contains(string(a.Engine), `"default_top_p": 0.9`) || !strings.Contains(string(a.Engine), `"budget": "10m0s"`) || !strings.Contains(string(a.Config), `"temperature": 0.3`) {
		t.Errorf("recorded: %s %s", a.Config, a.Engine)
	}
}

// listener is a TCP port that counts the connections made to it and
// answers none: a server address that shows whether halu contacted it.
type listener struct {
	addr string
	n    atomic.Int64
}

func newListener(t *testing.T) *listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return l
}

// validBase are arguments under which a declaration's command reads its
// settings without a usage error of their own (its required settings).
func validBase(d engine.Declaration, dir string) []string {
	switch d.Name {
	case "hic":
		return []string{"--models", "gen", "--judges", "judge", "--embed-model", "gen"}
	case "hypo":
		return []string{"--models", "gen"}
	case "cfaith":
		return []string{"--data", "../../testdata/cfaith/sample_en", "--models", "gen", "--judges", "judge"}
	case "cfaith-build":
		return []string{"--docs", "../../testdata/cfaith/docs_en.jsonl", "--agent", "gen", "--out", filepath.Join(dir, "built")}
	case "judges":
		return []string{"--judges", "judge"}
	}
	return []string{"--models", "gen", "--judges", "judge"}
}

// outOfRange finds, for each setting of list with a declared check, a value
// the setting's flag accepts but its check refuses (list bound to the
// values of base): by reflection over the declaration, so a check added
// later is tried too.
func outOfRange(t *testing.T, list setting.List, base []string) map[string]string {
	t.Helper()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.ParseErrorsWhitelist.UnknownFlags = true
	list.Bind(fs)
	fs.Parse(base)
	bad := map[string]string{}
	for _, s := range list {
		if s.Internal() || s.Value.Type() == "bool" || s.Value.Choices() != nil || s.Validate() != nil {
			continue
		}
		was := s.Value.String()
		for _, v := range []string{"-1", "-1000000", "1000000", "2", "5", "1.5", "-0.5", "0", "0.5"} {
			s.Value.Reset()
			if s.Value.Set(v) != nil {
				continue
			}
			if s.Validate() != nil {
				bad[s.Name] = v
				break
			}
		}
		s.Value.Reset()
		s.Value.Set(was)
	}
	return bad
}

// Every declared check of every setting — the engine's and each suite's —
// runs on every path a value comes by: the command line, a HALU_ variable,
// a run file and a resumed run's manifest. A value out of range exits 2
// naming the setting and its value, before any connection to the server.
func TestEveryDeclaredCheckRunsOnEveryPath(t *testing.T) {
	dir := t.TempDir()
	eng := engine.DefaultEngineConfig()
	engBad := outOfRange(t, eng.Settings(), nil)
	for _, name := range []string{"judge-repairs", "logprobs", "parallel", "retries", "judge-checks", "default-top-p"} {
		if _, ok := engBad[name]; !ok {
			t.Errorf("--%s: no out-of-range value found for a setting whose check is declared", name)
		}
	}
	type tcase struct {
		decl        engine.Declaration
		name, value string
		engine      bool
	}
	var cases []tcase
	for _, d := range registry.All() {
		base := validBase(d, dir)
		for name, v := range outOfRange(t, d.Config().Settings(), base) {
			cases = append(cases, tcase{d, name, v, false})
		}
		if d.Name == "smoke" {
			for name, v := range engBad {
				cases = append(cases, tcase{d, name, v, true})
			}
		}
	}
	if len(cases) < 20 {
		t.Fatalf("only %d declared checks found", len(cases))
	}
	for _, c := range cases {
		cmdArgs := commandOf(t, c.decl)
		base := validBase(c.decl, dir)
		root := newRoot(&globals{eng: engine.DefaultEngineConfig()})
		cmd, _, _ := root.Find(cmdArgs)
		paths := map[string]func(t *testing.T, ln *listener) result{
			"flag": func(t *testing.T, ln *listener) result {
				return haluAt(t, ln, append(append(cmdArgs, base...), "--"+c.name, c.value, "--dry-run")...)
			},
			"environment": func(t *testing.T, ln *listener) result {
				t.Setenv(setting.EnvName(c.name), c.value)
				return haluAt(t, ln, append(append(cmdArgs, base...), "--dry-run")...)
			},
		}
		has := func(flag string) bool {
			return cmd.Flags().Lookup(flag) != nil || cmd.InheritedFlags().Lookup(flag) != nil
		}
		if c.decl.Command {
			// A run handed to Slurm: refused when submitted, not by
			// every task (--print writes the scripts, submits nothing).
			paths["slurm submit"] = func(t *testing.T, ln *listener) result {
				var out, errb bytes.Buffer
				args := append(append([]string{"slurm", "submit", "--print", "--shards", "2", "--out", filepath.Join(t.TempDir(), "sub"), "--", c.decl.Name}, base...), "--"+c.name, c.value)
				code := run(args, &out, &errb)
				return result{code, out.String(), errb.String()}
			}
		}
		if has("file") {
			paths["run file"] = func(t *testing.T, ln *listener) result {
				// A HALU_ variable beats the run file (TestMain sets one).
				t.Setenv(setting.EnvName(c.name), "")
				os.Unsetenv(setting.EnvName(c.name))
				file := filepath.Join(t.TempDir(), "run.yaml")
				os.WriteFile(file, []byte(fmt.Sprintf("%s: %q\n", c.name, c.value)), 0o644)
				return haluAt(t, ln, append(append(cmdArgs, base...), "-f", file, "--dry-run")...)
			}
		}
		for path, do := range paths {
			if !has("dry-run") {
				continue
			}
			t.Run(c.decl.Name+"/"+c.name+"/"+path, func(t *testing.T) {
				ln := newListener(t)
				r := do(t, ln)
				if r.code != exitUsage || !strings.Contains(r.stderr, "--"+c.name+" ") {
					t.Errorf("--%s %s by %s: exit %d, want %d naming the setting:\n%s", c.name, c.value, path, r.code, exitUsage, r.stderr)
				}
				if n := ln.n.Load(); n > 0 {
					t.Errorf("--%s %s by %s: %d connections to the server before the refusal", c.name, c.value, path, n)
				}
			})
		}
	}
	// build cfaith has no dry run: its checks run before its first call.
	t.Run("cfaith-build", func(t *testing.T) {
		ln := newListener(t)
		r := haluAt(t, ln, "build", "cfaith", "--docs", "../../testdata/cfaith/docs_en.jsonl", "--agent", "gen", "--out", filepath.Join(dir, "b"), "--judge-repairs", "-1")
		if r.code != exitUsage || !strings.Contains(r.stderr, "--judge-repairs -1") || ln.n.Load() > 0 {
			t.Errorf("exit %d, %d connections: %s", r.code, ln.n.Load(), r.stderr)
		}
	})
}

// A resumed run's values are checked as a new run's are: the run's own
// (its manifest's, for a setting that changes what it measures) and those
// given to the resume.
func TestResumeChecksTheRunsSettings(t *testing.T) {
	f := newFake(t)
	cache, dir := t.TempDir(), t.TempDir()
	run := filepath.Join(dir, "run")
	if r := halu(t, f, cache, "run", "smoke", "--models", "gen", "--judges", "judge", "--limit", "2", "--out", run); r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	manifest := filepath.Join(run, rundir.ManifestFile)
	orig, _ := os.ReadFile(manifest)
	for _, c := range []struct{ name, section, key, value, want string }{
		{"engine section", "engine", "judge_repairs", "-1", "--judge-repairs -1"},
		{"engine section", "engine", "logprobs", "1000000", "--logprobs 1000000"},
		{"suite config", "config", "max_tokens", "-5", "--max-tokens -5"},
	} {
		t.Run(c.name+"/"+c.key, func(t *testing.T) {
			var m map[string]json.RawMessage
			json.Unmarshal(orig, &m)
			var sec map[string]json.RawMessage
			json.Unmarshal(m[c.section], &sec)
			if _, ok := sec[c.key]; !ok {
				t.Fatalf("the manifest's %s has no %s", c.section, c.key)
			}
			sec[c.key] = json.RawMessage(c.value)
			m[c.section], _ = json.Marshal(sec)
			b, _ := json.Marshal(m)
			os.WriteFile(manifest, b, 0o644)
			defer os.WriteFile(manifest, orig, 0o644)
			ln := newListener(t)
			r := haluAt(t, ln, "run", "--resume", run)
			if r.code != exitUsage || !strings.Contains(r.stderr, c.want) || ln.n.Load() > 0 {
				t.Errorf("exit %d, %d connections: %s", r.code, ln.n.Load(), r.stderr)
			}
		})
	}
	ln := newListener(t)
	if r := haluAt(t, ln, "run", "--resume", run, "--parallel", "0"); r.code != exitUsage || !strings.Contains(r.stderr, "--parallel 0") || ln.n.Load() > 0 {
		t.Errorf("resume --parallel 0: exit %d, %d connections: %s", r.code, ln.n.Load(), r.stderr)
	}
}

// haluAt runs halu with its server at ln (and no other setting given).
func haluAt(t *testing.T, ln *listener, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append(serverFlags(args, "--ollama", ln.addr, "--cache", t.TempDir()), args...), &out, &errb)
	return result{code, out.String(), errb.String()}
}
