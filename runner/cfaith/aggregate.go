package cfaith

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"halu/runner/rundir"
)

// GenItem is a generative QA item (§3.3): the question, its correct answer
// and the question's hallucination label.
type GenItem struct {
	ID            string `json:"id"`
	Doc           string `json:"doc"`
	Question      string `json:"question"`
	CorrectAnswer string `json:"correct_answer"`
	Evidence      string `json:"evidence"`
	HaluType      string `json:"halu_type"`
	HaluAnswer    string `json:"halu_answer"`
}

// ChoiceItem is a single-choice item: the correct answer and three verified
// hallucinated responses, shuffled with the seed.
type ChoiceItem struct {
	ID       string `json:"id"`
	Doc      string `json:"doc"`
	Question string `json:"question"`
	// Prompt, when set, is the whole prompt as the released files give it
	// (sent as is instead of the template filled with Question and
	// Options).
	Prompt        string    `json:"prompt,omitempty"`
	Options       [4]string `json:"options"`
	Labels        [4]string `json:"labels"` // "correct" or the response's type
	CorrectOption string    `json:"correct_option"`
	HaluType      string    `json:"halu_type"`
}

// TFItem is a true/false item: the correct answer (true) or a verified
// hallucinated response (false) as the statement to judge.
type TFItem struct {
	ID        string `json:"id"`
	Doc       string `json:"doc"`
	Question  string `json:"question"`
	Statement string `json:"statement"`
	True      bool   `json:"true"`
	HaluType  string `json:"halu_type"`
}

// Dataset is a built benchmark.
type Dataset struct {
	Generative []GenItem    `json:"-"`
	Choice     []ChoiceItem `json:"-"`
	TrueFalse  []TFItem     `json:"-"`
	// Dropped counts single-choice items left out, by reason.
	Dropped map[string]int `json:"dropped_single_choice"`
}

func normText(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

// Aggregate turns verified questions into the three formats (§3.3). Every
// question that passed its correctness check and has a verified response
// gives a generative item and two true/false items (its correct answer,
// true; its first verified response, false) — the paper's 2:1 ratio. A
// question with three verified responses also gives a single-choice item,
// unless two of its options are near-duplicates: the same text after
// normalising case and spaces, or an embedding similarity ≥ threshold.
// Options are shuffled by a generator seeded with seed and the item ID, so
// a rebuild gives the same order.
func Aggregate(docs []DocResult, seed uint64, threshold float64) Dataset {
	ds := Dataset{Dropped: map[string]int{}}
	for _, d := range docs {
		for qi, q := range d.Questions {
			if q.Drop != "" {
				continue
			}
			id := fmt.Sprintf("%s/q%d", d.Doc, qi+1)
			var passed []Response
			for _, r := range q.Responses {
				if r.Passed() {
					passed = append(passed, r)
				}
			}
			ds.Generative = append(ds.Generative, GenItem{ID: id, Doc: d.Doc, Question: q.QA.Question, CorrectAnswer: q.QA.Answer,
				Evidence: q.QA.Evidence, HaluType: q.Label, HaluAnswer: passed[0].Text})
			ds.TrueFalse = append(ds.TrueFalse,
				TFItem{ID: id + "/true", Doc: d.Doc, Question: q.QA.Question, Statement: q.QA.Answer, True: true, HaluType: q.Label},
				TFItem{ID: id + "/false", Doc: d.Doc, Question: q.QA.Question, Statement: passed[0].Text, HaluType: q.Label})
			if len(passed) < 3 {
				ds.Dropped["fewer than three verified responses"]++
				continue
			}
			opts := []string{q.QA.Answer, passed[0].Text, passed[1].Text, passed[2].Text}
			labels := []string{"correct", passed[0].Label, passed[1].Label, passed[2].Label}
			if dup := duplicateText(opts); dup {
				ds.Dropped["duplicate options (same text)"]++
				continue
			}
			if q.MaxOptionSimilarity != nil && *q.MaxOptionSimilarity >= threshold {
				ds.Dropped[fmt.Sprintf("near-duplicate options (similarity ≥ %g)", threshold)]++
				continue
			}
			h := fnv.New64a()
			h.Write([]byte(id))
			perm := rand.New(rand.NewPCG(seed, h.Sum64())).Perm(4)
			it := ChoiceItem{ID: id, Doc: d.Doc, Question: q.QA.Question, HaluType: q.Label}
			for slot, src := range perm {
				it.Options[slot], it.Labels[slot] = opts[src], labels[src]
				if src == 0 {
					it.CorrectOption = string(rune('A' + slot))
				}
			}
			ds.Choice = append(ds.Choice, it)
		}
	}
	return ds
}

func duplicateText(opts []string) bool {
	seen := map[string]bool{}
	for _, o := range opts {
		n := normText(o)
		if seen[n] {
			return true
		}
		seen[n] = true
	}
	return false
}

// DatasetInfo is the dataset's manifest: how it was built.
type DatasetInfo struct {
	Lang       string            `json:"lang"`
	Agent      string            `json:"agent"`
	Verifier   string            `json:"verifier"`
	Digests    map[string]string `json:"digests"`
	Rules      RuleSet           `json:"rules"`
	Seed       int               `json:"seed"`
	Threshold  float64           `json:"dedup_threshold"`
	EmbedModel string            `json:"embed_model,omitempty"`
	BuildRun   string            `json:"build_run"`
	Counts     map[string]int    `json:"counts"`
	Dropped    map[string]int    `json:"dropped_single_choice"`
	Prompts    map[string]string `json:"prompt_sha256"`
}

const (
	genFile    = "generative_qa.jsonl"
	choiceFile = "single_choice_qa.jsonl"
	tfFile     = "true_false_qa.jsonl"
	infoFile   = "dataset.json"
)

// WriteDataset writes the three JSONL files and the manifest into dir.
func WriteDataset(dir string, ds Dataset, info DatasetInfo) error {
	info.Counts = map[string]int{"generative": len(ds.Generative), "single_choice": len(ds.Choice), "true_false": len(ds.TrueFalse)}
	info.Dropped = ds.Dropped
	if err := rundir.WriteJSONL(filepath.Join(dir, genFile), ds.Generative); err != nil {
		return err
	}
	if err := rundir.WriteJSONL(filepath.Join(dir, choiceFile), ds.Choice); err != nil {
		return err
	}
	if err := rundir.WriteJSONL(filepath.Join(dir, tfFile), ds.TrueFalse); err != nil {
		return err
	}
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	return rundir.WriteFileAtomic(filepath.Join(dir, infoFile), append(b, '\n'))
}

// ReadDataset reads a dataset directory written by WriteDataset, or one
// holding the released C-FAITH files (see readReleased).
func ReadDataset(dir string) (Dataset, DatasetInfo, error) {
	if isReleased(dir) {
		return readReleased(dir)
	}
	var ds Dataset
	var info DatasetInfo
	b, err := os.ReadFile(filepath.Join(dir, infoFile))
	if err != nil {
		return ds, info, fmt.Errorf("dataset %s: %w", dir, err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return ds, info, fmt.Errorf("%s: %w", filepath.Join(dir, infoFile), err)
	}
	if ds, err = readItems(dir); err != nil {
		return ds, info, err
	}
	return ds, info, nil
}

// readItems reads a built dataset's three files, checking every value the
// scores rest on before any model call (an rundir.InputError naming file
// and line): texts that are text, hallucination types C-FAITH has, four
// options with four labels, one of them "correct" and the correct option
// that one, every ID once per file. A dataset without items is refused.
func readItems(dir string) (Dataset, error) {
	var ds Dataset
	ids := rundir.IDs{}
	p := filepath.Join(dir, genFile)
	err := scanItems(p, func(line int, it GenItem) error {
		ds.Generative = append(ds.Generative, it)
		return firstErr(ids.Add(p, line, "id", "gen/"+it.ID), checkTexts("question", it.Question, "correct_answer", it.CorrectAnswer, "halu_answer", it.HaluAnswer), checkType(it.HaluType))
	})
	if err != nil {
		return ds, err
	}
	p = filepath.Join(dir, choiceFile)
	err = scanItems(p, func(line int, raw choiceLine) error {
		it, err := raw.item()
		ds.Choice = append(ds.Choice, it)
		return firstErr(ids.Add(p, line, "id", "choice/"+it.ID), err)
	})
	if err != nil {
		return ds, err
	}
	p = filepath.Join(dir, tfFile)
	err = scanItems(p, func(line int, it TFItem) error {
		ds.TrueFalse = append(ds.TrueFalse, it)
		return firstErr(ids.Add(p, line, "id", "tf/"+it.ID), checkTexts("question", it.Question, "statement", it.Statement), checkType(it.HaluType))
	})
	if err != nil {
		return ds, err
	}
	if len(ds.Generative)+len(ds.Choice)+len(ds.TrueFalse) == 0 {
		return ds, rundir.BadInput(dir, 0, "no items in %s, %s or %s", genFile, choiceFile, tfFile)
	}
	return ds, nil
}

// scanItems decodes each line of the JSONL file at path into a T, its
// fields as named (an unknown field is a misspelt one), and hands it to fn.
func scanItems[T any](path string, fn func(line int, it T) error) error {
	f, err := os.Open(path)
	if err != nil {
		return rundir.BadInput(path, 0, "%v", err)
	}
	defer f.Close()
	return rundir.ScanJSONL(f, path, func(line int, b []byte) error {
		var it T
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&it); err != nil {
			return err
		}
		return fn(line, it)
	})
}

// choiceLine is a single-choice item as its file holds it: options and
// labels as lists, so that a count other than four is seen.
type choiceLine struct {
	ID            string   `json:"id"`
	Doc           string   `json:"doc"`
	Question      string   `json:"question"`
	Prompt        string   `json:"prompt,omitempty"`
	Options       []string `json:"options"`
	Labels        []string `json:"labels"`
	CorrectOption string   `json:"correct_option"`
	HaluType      string   `json:"halu_type"`
}

// item checks a single-choice line and makes it an item.
func (c choiceLine) item() (ChoiceItem, error) {
	it := ChoiceItem{ID: c.ID, Doc: c.Doc, Question: c.Question, Prompt: c.Prompt, CorrectOption: c.CorrectOption, HaluType: c.HaluType}
	if len(c.Options) != 4 || len(c.Labels) != 4 {
		return it, fmt.Errorf("%d options and %d labels: want four of each", len(c.Options), len(c.Labels))
	}
	copy(it.Options[:], c.Options)
	copy(it.Labels[:], c.Labels)
	if err := checkTexts("question", cmp.Or(c.Prompt, c.Question)); err != nil {
		return it, err
	}
	correct := 0
	for i, o := range c.Options {
		if err := rundir.CheckText(fmt.Sprintf("option %c", 'A'+i), o); err != nil {
			return it, err
		}
		if c.Labels[i] == "correct" {
			correct++
		} else if err := checkType(c.Labels[i]); err != nil {
			return it, fmt.Errorf("label of option %c: %w", 'A'+i, err)
		}
	}
	switch {
	case correct != 1:
		return it, fmt.Errorf("%d options labelled correct: want one", correct)
	case len(c.CorrectOption) != 1 || c.CorrectOption[0] < 'A' || c.CorrectOption[0] > 'D':
		return it, fmt.Errorf("correct_option %q is not one of A, B, C, D", c.CorrectOption)
	case c.Labels[c.CorrectOption[0]-'A'] != "correct":
		return it, fmt.Errorf("correct_option %s is labelled %q, not correct", c.CorrectOption, c.Labels[c.CorrectOption[0]-'A'])
	}
	return it, checkType(c.HaluType)
}

// checkType refuses a hallucination type C-FAITH does not have.
func checkType(code string) error {
	if !slices.Contains(Types, code) {
		return fmt.Errorf("halu_type %q is not a C-FAITH type (%s)", code, strings.Join(Types, ", "))
	}
	return nil
}

// checkTexts checks name/value pairs with rundir.CheckText.
func checkTexts(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := rundir.CheckText(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// firstErr is the first non-nil error of errs.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
