package setting

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

type cfg struct {
	N      int
	F      float64
	S      string
	C      string
	B      bool
	L      []string
	Fs     []float64
	O      *float64
	P      map[string]string
	G      [][]string
	Prot   string
	Ignore string
}

func (c *cfg) Settings() List {
	return List{
		Int("n", &c.N, "").Paper("10").Min(1),
		Float("f", &c.F, ""),
		String("s", &c.S, "").Path(),
		Choice("c", &c.C, "", "text", "json").Paper("text").Halu("json"),
		Bool("b", &c.B, ""),
		Strings("l", &c.L, "").Models().Deprecated("ll"),
		Floats("fs", &c.Fs, ""),
		OptFloat("o", &c.O, "", "none").Paper("none").Halu("0.8").Assumed("unsaid"),
		Pairs("p", &c.P, ""),
		Groups("g", &c.G, ""),
		Protocol(&c.Prot, "halu's"),
		String("ignore", &c.Ignore, "").Paper("x").When(func() bool { return c.N > 100 }),
	}
}

func parse(t *testing.T, args ...string) (*cfg, *pflag.FlagSet) {
	t.Helper()
	c := &cfg{N: 10, C: "text", Prot: ProtocolPaper, Ignore: "x"}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	c.Settings().Bind(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return c, fs
}

// Each kind of value reads flag syntax, says itself back in flag syntax
// (so that the text sets the same value again), and encodes to JSON and
// back; a list given twice on one command line grows, and a map and groups
// are given one part per flag.
func TestValues(t *testing.T) {
	c, _ := parse(t, "--n", "7", "--f=1.50", "--s", "a b", "--c", "json", "--b", "--l", "x,y", "--ll", "z", "--fs", "1.0,0.4",
		"--o", "0.25", "--p", "m=o", "--p", "k=v,q=r", "--g", "a,b", "--g", "c")
	want := map[string]string{"n": "7", "f": "1.5", "s": "a b", "c": "json", "b": "true", "l": "x,y,z", "fs": "1,0.4", "o": "0.25",
		"p": "k=v,m=o,q=r", "g": "a,b;c", "protocol": "paper", "ignore": "x"}
	got := c.Settings().Values()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("--%s: %q, want %q", k, got[k], v)
		}
	}
	for _, s := range c.Settings() {
		if !s.Value.Same(s.Value.String()) {
			t.Errorf("--%s: %q is not the same as itself", s.Name, s.Value)
		}
	}
	b, err := c.Settings().MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"n":7,"f":1.5,"s":"a b","c":"json","b":true,"l":["x","y","z"],"fs":[1,0.4],"o":0.25,"p":{"k":"v","m":"o","q":"r"},"g":[["a","b"],["c"]]`) {
		t.Errorf("JSON %s", b)
	}
	var d cfg
	if err := d.Settings().UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if b2, _ := d.Settings().MarshalJSON(); string(b2) != string(b) {
		t.Errorf("JSON round trip:\n%s\n%s", b, b2)
	}
	if err := d.Settings().UnmarshalJSON([]byte(`{"nn": 1}`)); err == nil || !strings.Contains(err.Error(), `unknown setting "nn"`) {
		t.Errorf("unknown key: %v", err)
	}
	if err := d.Settings().UnmarshalJSON([]byte(`{"c": "yaml"}`)); err == nil {
		t.Error("a choice outside its words read from JSON")
	}
	// Same reads the text as the type does: 1 and 1.0 are one number,
	// none is no number.
	if s, _ := c.Settings().Lookup("fs"); !s.Value.Same("1.00, 0.40") {
		t.Error("1.00,0.40 differs from 1,0.4")
	}
	c.O = nil
	if s, _ := c.Settings().Lookup("o"); !s.Value.Same("none") || s.Value.Same("0") || s.Value.String() != "none" {
		t.Errorf("none: %q", s.Value)
	}
	if got, _ := json.Marshal(c.O); string(got) != "null" {
		t.Errorf("none in JSON: %s", got)
	}
}

// Bad values are refused when read, naming the setting; Validate checks
// bounds, required values and checks.
func TestValidation(t *testing.T) {
	c := &cfg{N: 10}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	c.Settings().Bind(fs)
	for _, args := range [][]string{{"--c", "yaml"}, {"--n", "x"}, {"--o", "hot"}, {"--p", "novalue"}, {"--fs", "1,a"}} {
		if err := fs.Parse(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	c.N = 0
	if err := c.Settings().Validate(); err == nil || err.Error() != "--n 0: want at least 1" {
		t.Errorf("validate: %v", err)
	}
	l := List{String("m", new(string), "").Required()}
	if err := l.Validate(); err == nil || err.Error() != "--m is required" {
		t.Errorf("required: %v", err)
	}
}

// Departures are the measuring settings that bear on the run and differ
// from the paper's value; a protocol given sets what the protocols differ
// on, except what was given; assumptions name halu's choices.
func TestProtocolsAndDepartures(t *testing.T) {
	c, fs := parse(t, "--n", "12", "--ignore", "y")
	deps := c.Settings().Departures()
	if len(deps) != 1 || deps[0].String() != "--n 12 (paper: 10)" {
		t.Errorf("departures %v", deps)
	}
	c.N = 200 // now --ignore bears on the run
	if deps := c.Settings().Departures(); len(deps) != 2 || deps[1].String() != "--ignore y (paper: x)" {
		t.Errorf("departures %v", deps)
	}
	c, fs = parse(t, "--protocol", "halu", "--c", "text", "--n", "3")
	if err := c.Settings().ApplyProtocol(func(s Setting) bool { return s.Given(fs) }); err != nil {
		t.Fatal(err)
	}
	if c.C != "text" || c.O == nil || *c.O != 0.8 || c.N != 3 {
		t.Errorf("halu: c %s, o %v, n %d", c.C, c.O, c.N)
	}
	as := c.Settings().Assumptions()
	if len(as) != 1 || as[0].String() != "--o 0.8 (unsaid)" {
		t.Errorf("assumptions %v", as)
	}
	if ms := c.Settings().Models(); len(ms) != 0 {
		t.Errorf("models %v", ms)
	}
	c.L, c.S = []string{"a", "b"}, "f.txt"
	if ms, ps := c.Settings().Models(), c.Settings().Paths(); strings.Join(ms, ",") != "a,b" || ps["--s"] != "f.txt" {
		t.Errorf("models %v, paths %v", ms, ps)
	}
	// The old name is read too, and Given knows it.
	c, fs = parse(t, "--ll", "q")
	if s, _ := c.Settings().Lookup("l"); !s.Given(fs) || strings.Join(c.L, ",") != "q" {
		t.Errorf("deprecated name: %v", c.L)
	}
}
