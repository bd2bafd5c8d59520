package engine

import (
	"encoding/json"
	"fmt"

	"halu/runner/rundir"
	"halu/runner/setting"
)

// Declaration is a suite declared once: its name and summary, a config
// holding its defaults (whose settings — setting.List — make the command's
// flags, the manifest's config, the resume check, the departures and what
// the report compares with published tables), how a config becomes the
// suite, and how a config written by an older run format is brought up
// to date. The registry of suites (package registry) lists declarations;
// nothing else names a suite's settings.
type Declaration struct {
	Name  string
	Short string
	// Command is false for a suite run by a command of its own rather
	// than `halu run NAME` (cfaith-build, run by `halu build cfaith`).
	Command bool
	config  func() setting.Config
	build   func(setting.Config) (Suite, error)
	migrate func(format int, cfg map[string]json.RawMessage) error
}

// Tasker is a built suite: Task is the suite as the engine runs it, every
// part it has named in that one place.
type Tasker interface {
	Task() Suite
}

// Declare declares a suite whose config type is C (with settings on *C):
// defaults gives its defaults, build makes the suite (and validates what
// the settings' own checks cannot), migrate upgrades a config of an older
// run format (nil: none is needed). The suite's name is name: its Task
// may leave Name empty, and one naming another suite is refused.
func Declare[C any, PC interface {
	*C
	setting.Config
}, S Tasker](name, short string, defaults func() C, build func(C) (S, error), migrate func(format int, cfg map[string]json.RawMessage) error) Declaration {
	return Declaration{
		Name: name, Short: short, Command: true, migrate: migrate,
		config: func() setting.Config {
			c := defaults()
			return PC(&c)
		},
		build: func(cfg setting.Config) (Suite, error) {
			pc, ok := cfg.(PC)
			if !ok {
				return Suite{}, fmt.Errorf("%s: config of type %T", name, cfg)
			}
			b, err := build(*pc)
			if err != nil {
				return Suite{}, err
			}
			t := b.Task()
			if t.Name != "" && t.Name != name {
				return Suite{}, fmt.Errorf("suite %s: its Task is named %q", name, t.Name)
			}
			t.Name = name
			return t, nil
		},
	}
}

// NotRun marks a suite that a command of its own runs (Command false).
func (d Declaration) NotRun() Declaration { d.Command = false; return d }

// Config is a new config holding the suite's defaults.
func (d Declaration) Config() setting.Config { return d.config() }

// New makes the suite from cfg (one of d's configs).
func (d Declaration) New(cfg setting.Config) (Suite, error) { return d.build(cfg) }

// Decode reads a config as a manifest of run format format holds it,
// migrating an older format's first.
func (d Declaration) Decode(raw json.RawMessage, format int) (setting.Config, error) {
	cfg := d.config()
	if format < rundir.FormatVersion {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s config: %w", d.Name, err)
		}
		if d.migrate != nil {
			if err := d.migrate(format, m); err != nil {
				return nil, fmt.Errorf("%s config of run format %d: %w", d.Name, format, err)
			}
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	if err := json.Unmarshal(raw, cfg); err != nil {
		return nil, fmt.Errorf("%s config: %w", d.Name, err)
	}
	return cfg, nil
}

// Build makes the suite from a config as a manifest holds it.
func (d Declaration) Build(raw json.RawMessage, format int) (Suite, error) {
	cfg, err := d.Decode(raw, format)
	if err != nil {
		return Suite{}, err
	}
	return d.New(cfg)
}

// Rename moves a config's key old to new (a migration step); a key not
// there is left alone.
func Rename(cfg map[string]json.RawMessage, old, new string) {
	if v, ok := cfg[old]; ok {
		cfg[new] = v
		delete(cfg, old)
	}
}

// DefaultTo sets key to v (JSON) where a config lacks it or holds an empty
// string: a run made before the setting existed did as v says.
func DefaultTo(cfg map[string]json.RawMessage, key, v string) {
	if x, ok := cfg[key]; !ok || string(x) == `""` || string(x) == "null" {
		cfg[key] = json.RawMessage(v)
	}
}
