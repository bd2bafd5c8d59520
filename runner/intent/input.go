package intent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	"halu/runner/rundir"
)

// Tasks are FaithQA's six task types (Table 1): the omission tasks (Fact QA,
// Creative Writing story and poem) and the misinterpretation tasks
// (Response Evaluation, Content Analysis relationship and summary).
var Tasks = []string{"factqa", "story", "poem", "response_eval", "relationship", "summary"}

func knownTask(t string) bool {
	for _, x := range Tasks {
		if x == t {
			return true
		}
	}
	return false
}

// Misinterpretation reports whether task withholds one piece of content
// on purpose (§5.2).
func Misinterpretation(task string) bool {
	return task == "response_eval" || task == "relationship" || task == "summary"
}

// Input is one FaithQA item, one line of the input JSONL:
//
//	{"id": "…", "task": "factqa|story|poem|response_eval|relationship|summary",
//	 "difficulty": "easy|hard", "topic": "culture", "query": "…",
//	 "articles": [{"label": "Article 1", "text": "…"}, {"label": "Article 2", "missing": true}, …],
//	 "human_score": 7.5}
//
// articles hold the external content a query needs, each under the label
// the model sees ("Article 1", or "Query" / "Article" / "Response" for
// Response Evaluation). Misinterpretation items mark exactly one part
// missing: it is left out of what the model sees. human_score (0–10) is an
// optional human Constraint Score for the §7 comparison.
type Input struct {
	ID         string   `json:"id"`
	Task       string   `json:"task"`
	Difficulty string   `json:"difficulty,omitempty"`
	Topic      string   `json:"topic,omitempty"`
	Query      string   `json:"query"`
	Articles   []Part   `json:"articles,omitempty"`
	HumanScore *float64 `json:"human_score,omitempty"`
	Source     string   `json:"source,omitempty"`
}

// Part is one piece of external content.
type Part struct {
	Label   string `json:"label"`
	Text    string `json:"text,omitempty"`
	Missing bool   `json:"missing,omitempty"`
}

// MissingPart is the label of the withheld part, "" if none.
func (in Input) MissingPart() string {
	for _, p := range in.Articles {
		if p.Missing {
			return p.Label
		}
	}
	return ""
}

var trailingNum = regexp.MustCompile(`\s*\d+$`)

// MissingKind is what kind of content was withheld — Query, Response or
// Article (Appendix F.1's columns) — the label without its number.
func (in Input) MissingKind() string {
	return trailingNum.ReplaceAllString(in.MissingPart(), "")
}

// Prompt is what the model under test sees: the query, then each provided
// part as "Label: text". The missing part is left out entirely.
func (in Input) Prompt() string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(in.Query))
	for _, p := range in.Articles {
		if p.Missing {
			continue
		}
		fmt.Fprintf(&b, "\n\n%s: %s", p.Label, strings.TrimSpace(p.Text))
	}
	return b.String()
}

// TaskPrompt is the task as it would read with nothing withheld: the
// prompt with the missing part in its place (its text, or a placeholder
// naming it when the data does not hold it). Misinterpretation items map
// their constraints from it — the constraints of the task the model was
// set — since the prompt the model saw lacks a part by design, and Table 6
// then asks for that part instead of listing constraints.
func (in Input) TaskPrompt() string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(in.Query))
	for _, p := range in.Articles {
		text := strings.TrimSpace(p.Text)
		if p.Missing && text == "" {
			text = "(the text of " + p.Label + ")"
		}
		fmt.Fprintf(&b, "\n\n%s: %s", p.Label, text)
	}
	return b.String()
}

func (in Input) validate() error {
	if strings.TrimSpace(in.ID) == "" {
		return fmt.Errorf("no id")
	}
	if !knownTask(in.Task) {
		return fmt.Errorf("task %q (want one of %s)", in.Task, strings.Join(Tasks, ", "))
	}
	if d := in.Difficulty; d != "" && d != "easy" && d != "hard" {
		return fmt.Errorf("difficulty %q (want easy, hard or none)", d)
	}
	if err := rundir.CheckText("query", in.Query); err != nil {
		return err
	}
	missing := 0
	for i, p := range in.Articles {
		if strings.TrimSpace(p.Label) == "" {
			return fmt.Errorf("articles[%d]: no label", i)
		}
		if p.Missing {
			missing++
		} else if strings.TrimSpace(p.Text) == "" {
			return fmt.Errorf("articles[%d] (%s): no text and not marked missing", i, p.Label)
		} else if err := rundir.CheckText(fmt.Sprintf("articles[%d] (%s)", i, p.Label), p.Text); err != nil {
			return err
		}
	}
	if Misinterpretation(in.Task) && missing != 1 {
		return fmt.Errorf("task %s needs exactly one article marked missing, has %d", in.Task, missing)
	}
	if !Misinterpretation(in.Task) && missing != 0 {
		return fmt.Errorf("task %s is an omission task: no article may be marked missing", in.Task)
	}
	if h := in.HumanScore; h != nil && (*h < 0 || *h > 10) {
		return fmt.Errorf("human_score %g outside 0..10", *h)
	}
	return nil
}

// ParseInputs reads FaithQA-format JSONL; name is used in errors, which
// give the line and item.
func ParseInputs(b []byte, name string) ([]Input, error) {
	var out []Input
	seen := map[string]int{}
	err := rundir.ScanJSONL(bytes.NewReader(b), name, func(line int, l []byte) error {
		var in Input
		dec := json.NewDecoder(bytes.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			return err
		}
		if err := in.validate(); err != nil {
			return fmt.Errorf("item %q: %v", in.ID, err)
		}
		if prev, ok := seen[in.ID]; ok {
			return fmt.Errorf("item %q: id already used on line %d", in.ID, prev)
		}
		seen[in.ID] = line
		out = append(out, in)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, rundir.BadInput(name, 0, "no items")
	}
	return out, nil
}

// LoadInputs reads a FaithQA-format JSONL file; path "" reads the bundled
// sample.
func LoadInputs(path string) ([]Input, error) {
	if path == "" {
		b, err := assets.ReadFile("data/sample.jsonl")
		if err != nil {
			return nil, err
		}
		return ParseInputs(b, "sample.jsonl (bundled)")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("intent data: %w", err)
	}
	return ParseInputs(b, path)
}
