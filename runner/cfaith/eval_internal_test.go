package cfaith

import (
	"testing"

	"halu/runner/setting"
)

// --limit draws a seeded sample keeping each hallucination type's share
// (a file grouped by type would give one type in its first rows); the
// paper evaluates every item, so a sample is a named departure, and the
// paper's decoding (temperature 1, top_p 0.7) is its protocol.
func TestEvalSampleAndProtocol(t *testing.T) {
	items := []GenItem{{ID: "1", HaluType: "EntErr"}, {ID: "2", HaluType: "EntErr"}, {ID: "3", HaluType: "EntErr"},
		{ID: "4", HaluType: "RelErr"}, {ID: "5", HaluType: "RelErr"}, {ID: "6", HaluType: "RelErr"}}
	cfg := DefaultConfig()
	cfg.Limit = 2
	types := map[string]int{}
	for _, it := range draw(items, cfg, func(g GenItem) string { return g.HaluType }) {
		types[it.HaluType]++
	}
	if types["EntErr"] != 1 || types["RelErr"] != 1 {
		t.Errorf("stratified sample of 2: %v, want one of each type", types)
	}
	cfg.Sample = "first"
	if got := draw(items, cfg, func(g GenItem) string { return g.HaluType }); len(got) != 2 || got[1].ID != "2" {
		t.Errorf("first 2: %v", got)
	}
	cfg = DefaultConfig()
	cfg.Data, cfg.Models = "d", []string{"m"}
	if p, d := cfg.Settings().ProtocolOf(), cfg.Settings().Departures(); p != setting.ProtocolPaper || len(d) != 0 {
		t.Errorf("default: protocol %q, departures %v", p, d)
	}
	cfg.Limit, cfg.Temperature = 5, 0
	var got []string
	for _, d := range cfg.Settings().Departures() {
		got = append(got, d.String())
	}
	if len(got) != 2 || got[0] != "--limit 5 (paper: 0)" || got[1] != "--temperature 0 (paper: 1)" {
		t.Errorf("departures %v", got)
	}
}

// The construction's verifier samples as the authors' agents do by
// default (temperature 0.7, top_p 0.7, top_k 50, frequency penalty 0.5);
// greedy is halu's choice and a named departure; a build recorded in run
// format 2 was greedy and reads as such.
func TestVerifierDecoding(t *testing.T) {
	cfg := DefaultBuildConfig()
	b := &Builder{cfg: cfg}
	o := b.opts(cfg.Seed)
	if cfg.VerifierDecoding != "sampled" || *o.Temperature != 0.7 || *o.TopP != 0.7 || *o.TopK != 50 || *o.FrequencyPenalty != 0.5 {
		t.Errorf("default verifier decoding %q, options %+v", cfg.VerifierDecoding, o)
	}
	cfg.Docs, cfg.Agent, cfg.VerifierDecoding = "d", "a", "greedy"
	if d := cfg.Settings().Departures(); len(d) != 1 || d[0].String() != "--verifier-decoding greedy (paper: sampled)" {
		t.Errorf("greedy: departures %v", d)
	}
	old, err := BuildDeclaration.Decode([]byte(`{"docs":"d","agent":"a","lang":"zh","format":"json","max_tokens":768,"responses":3,"seed":1}`), 2)
	if err != nil {
		t.Fatal(err)
	}
	if c := old.(*BuildConfig); c.VerifierDecoding != "greedy" {
		t.Errorf("format-2 build read as %q", c.VerifierDecoding)
	}
}

// The construction's agents and verifier write the authors' text formats
// by default; structured output is halu's choice and a named departure; a
// build recorded with json keeps it.
func TestBuildFormatIsThePapers(t *testing.T) {
	cfg := DefaultBuildConfig()
	cfg.Docs, cfg.Agent = "d", "a"
	if d := cfg.Settings().Departures(); cfg.Format != "text" || len(d) != 0 {
		t.Errorf("default format %q, departures %v", cfg.Format, d)
	}
	cfg.Format = "json"
	if d := cfg.Settings().Departures(); len(d) != 1 || d[0].String() != "--format json (paper: text)" {
		t.Errorf("json: departures %v", d)
	}
	old, err := BuildDeclaration.Decode([]byte(`{"docs":"d","agent":"a","lang":"zh","format":"json","max_tokens":768,"responses":3,"seed":1}`), 4)
	if err != nil {
		t.Fatal(err)
	}
	if c := old.(*BuildConfig); c.Format != "json" {
		t.Errorf("a json build read back as %q", c.Format)
	}
	// Format 4 capped the verifier as the agents (768); the authors' caps
	// (2,048 and 1,024) are the default, and whole documents.
	if c := old.(*BuildConfig); c.MaxTokens != 768 || c.VerifierMaxTokens != 768 {
		t.Errorf("a format-4 build's caps read back as %d, %d", c.MaxTokens, c.VerifierMaxTokens)
	}
	if d := DefaultBuildConfig(); d.MaxTokens != 2048 || d.VerifierMaxTokens != 1024 || d.ChunkTokens != 0 {
		t.Errorf("default caps %d, %d, chunks %d", d.MaxTokens, d.VerifierMaxTokens, d.ChunkTokens)
	}
}
