package cfaith

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
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
	if ds.Generative, err = rundir.ReadJSONL[GenItem](filepath.Join(dir, genFile)); err != nil {
		return ds, info, err
	}
	if ds.Choice, err = rundir.ReadJSONL[ChoiceItem](filepath.Join(dir, choiceFile)); err != nil {
		return ds, info, err
	}
	if ds.TrueFalse, err = rundir.ReadJSONL[TFItem](filepath.Join(dir, tfFile)); err != nil {
		return ds, info, err
	}
	return ds, info, nil
}
