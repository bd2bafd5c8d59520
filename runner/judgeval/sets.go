package judgeval

import (
	"compress/gzip"
	"embed"
	"encoding/json"
	"fmt"
	"halu/runner/rundir"
	"io"
	"os"
	"strings"
)

// Unit is one response people labelled: the question it answers, the
// response, and whether they found it hallucinated.
type Unit struct {
	ID           string `json:"id"`
	Question     string `json:"question"`
	Response     string `json:"response"`
	Hallucinated bool   `json:"hallucinated"`
}

// Set is a labelled set as read: its units, where it came from, and the
// records left out with why.
type Set struct {
	Name, Source, Licence string
	Units                 []Unit
	// Skipped counts records left out (FELM records whose labels and
	// segments differ in number), with the reason.
	Skipped int
	Why     string
	// Renamed counts records of a published file whose id repeats an
	// earlier one's; each is kept as id@line.
	Renamed int
}

//go:embed data/halueval_general.jsonl.gz data/LICENSE.halueval
var data embed.FS

// HaluEval is the name of the shipped set.
const HaluEval = "halueval"

// LoadSet reads the set named (halueval, shipped) or the labelled JSONL
// file at that path: HaluEval's general file, a FELM file, or halu's own
// schema, one object per line:
//
//	{"id": "u1", "question": "…", "response": "…", "hallucinated": true}
//
// A FELM response is hallucinated when people marked any of its segments
// factually wrong (FELM labels segments; the response-level judge is
// measured on the response). Errors name the file and line.
func LoadSet(name string) (Set, error) {
	if name == HaluEval {
		f, err := data.Open("data/halueval_general.jsonl.gz")
		if err != nil {
			return Set{}, err
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			return Set{}, err
		}
		s, err := readSet(zr, "halueval (shipped)")
		s.Name = HaluEval
		return s, err
	}
	f, err := os.Open(name)
	if err != nil {
		return Set{}, fmt.Errorf("judge validation set %q: not a shipped set (%s) and not a readable file: %w", name, HaluEval, err)
	}
	defer f.Close()
	s, err := readSet(f, name)
	s.Name = name
	return s, err
}

// line is every field any of the three schemas uses.
type line struct {
	// halu's schema
	ID           json.RawMessage `json:"id"`
	Question     string          `json:"question"`
	Response     string          `json:"response"`
	Hallucinated *bool           `json:"hallucinated"`
	// HaluEval general
	HEID          json.RawMessage `json:"ID"`
	UserQuery     string          `json:"user_query"`
	ChatGPT       string          `json:"chatgpt_response"`
	Hallucination string          `json:"hallucination"`
	// FELM
	Index    json.RawMessage `json:"index"`
	Prompt   string          `json:"prompt"`
	Segments []string        `json:"segmented_response"`
	Labels   []bool          `json:"labels"`
}

func rawID(r json.RawMessage) string {
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(r))
}

func readSet(r io.Reader, where string) (Set, error) {
	var s Set
	seen := map[string]int{}
	err := rundir.ScanJSONL(r, where, func(n int, b []byte) error {
		var l line
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		u, kind, err := l.unit()
		if err != nil {
			return err
		}
		if kind == "felm-skip" {
			s.Skipped++
			s.Why = "FELM records whose labels and segments differ in number"
			return nil
		}
		if s.Source == "" {
			s.Source, s.Licence = sources[kind][0], sources[kind][1]
		}
		if u.ID == "" {
			u.ID = fmt.Sprint(n)
		}
		if first, dup := seen[u.ID]; dup {
			if kind == "halu" {
				return fmt.Errorf("id %q already on line %d", u.ID, first)
			}
			// A published file's own repeats (HaluEval has records whose
			// ID is the word "ID"): kept, told apart by their line.
			u.ID = fmt.Sprintf("%s@%d", u.ID, n)
			s.Renamed++
		}
		seen[u.ID] = n
		s.Units = append(s.Units, u)
		return nil
	})
	if err != nil {
		return s, err
	}
	if len(s.Units) == 0 {
		return s, fmt.Errorf("%s: no labelled unit", where)
	}
	return s, nil
}

var sources = map[string][2]string{
	"halueval": {"HaluEval general (Li et al., EMNLP 2023): ChatGPT responses to user queries, labelled by people", "MIT (data/LICENSE.halueval)"},
	"felm":     {"FELM (Chen et al., NeurIPS 2023 Datasets and Benchmarks): ChatGPT responses, segments labelled by people", "CC BY-NC-SA 4.0 (read from the user's path, not shipped)"},
	"halu":     {"a user's labelled file (halu's schema)", "the user's"},
}

// unit reads one record by its schema.
func (l line) unit() (Unit, string, error) {
	switch {
	case l.Hallucination != "" || l.ChatGPT != "":
		u := Unit{ID: rawID(l.HEID), Question: l.UserQuery, Response: l.ChatGPT}
		switch l.Hallucination {
		case "yes":
			u.Hallucinated = true
		case "no":
		default:
			return u, "", fmt.Errorf("HaluEval record %s: hallucination %q is neither yes nor no", u.ID, l.Hallucination)
		}
		return u, "halueval", u.check()
	case l.Segments != nil || l.Labels != nil:
		u := Unit{ID: rawID(l.Index), Question: l.Prompt, Response: l.Response}
		if len(l.Labels) != len(l.Segments) || len(l.Labels) == 0 {
			return u, "felm-skip", nil
		}
		for _, ok := range l.Labels {
			u.Hallucinated = u.Hallucinated || !ok
		}
		return u, "felm", u.check()
	}
	u := Unit{ID: rawID(l.ID), Question: l.Question, Response: l.Response}
	if l.Hallucinated == nil {
		return u, "", fmt.Errorf(`no label: halu's schema is {"id", "question", "response", "hallucinated": true|false} (HaluEval and FELM files are read as they are)`)
	}
	u.Hallucinated = *l.Hallucinated
	return u, "halu", u.check()
}

func (u Unit) check() error {
	if strings.TrimSpace(u.Response) == "" {
		return fmt.Errorf("unit %q: empty response", u.ID)
	}
	return nil
}
