package cfaith

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"halu/runner/rundir"
)

// The released C-FAITH files (github.com/pkulcwmzx/C-FAITH, C-FAITH/) have
// their own layout, mapped here onto halu's items:
//
//   - generative_qa.jsonl {question, correct_answer, reason, halu_type, ent,
//     halu_answer}: a GenItem (reason → Evidence, ent → Doc, the Chinese
//     type name → its code), and the two true/false items §3.3 derives from
//     it (correct_answer true, halu_answer false) — the release has no
//     true/false file;
//   - single_choice_qa.jsonl {question (the full authors' prompt), answers,
//     labels, correct_option}: a ChoiceItem whose prompt is sent as given.
//
// The records carry no IDs: an item's ID is its file and line ("gen/L12").
// The release is Chinese.
const releasedSource = "released C-FAITH files (github.com/pkulcwmzx/C-FAITH)"

type releasedGen struct {
	Question      *string `json:"question"`
	CorrectAnswer *string `json:"correct_answer"`
	Reason        string  `json:"reason"`
	HaluType      *string `json:"halu_type"`
	Ent           string  `json:"ent"`
	HaluAnswer    *string `json:"halu_answer"`
}

type releasedChoice struct {
	Question      *string  `json:"question"`
	Answers       []string `json:"answers"`
	Labels        []string `json:"labels"`
	CorrectOption *string  `json:"correct_option"`
}

// typeCode maps a Chinese type name of the release to its code.
func typeCode(name string) (string, bool) {
	for code, n := range zhNames {
		if n == name {
			return code, true
		}
	}
	return "", false
}

// isReleased tells whether dir holds the released layout rather than a
// dataset halu built (which has dataset.json).
func isReleased(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, infoFile)); err == nil {
		return false
	}
	for _, f := range []string{genFile, choiceFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// readReleased reads the released layout in dir (either file may be
// absent, not both). Every record is checked before any model call: a
// missing field or an unknown type name is an error naming file and line.
func readReleased(dir string) (Dataset, DatasetInfo, error) {
	ds := Dataset{Dropped: map[string]int{}}
	info := DatasetInfo{Lang: "zh", Agent: releasedSource, Verifier: releasedSource}
	foundGen, err := scanRecords(filepath.Join(dir, genFile), func(line int, r releasedGen) error {
		if r.Question == nil || r.CorrectAnswer == nil || r.HaluType == nil || r.HaluAnswer == nil {
			return errors.New("a generative record needs question, correct_answer, halu_type and halu_answer")
		}
		code, ok := typeCode(*r.HaluType)
		if !ok {
			return fmt.Errorf("halu_type %q is not one of the seven C-FAITH types", *r.HaluType)
		}
		if err := checkTexts("question", *r.Question, "correct_answer", *r.CorrectAnswer, "halu_answer", *r.HaluAnswer); err != nil {
			return err
		}
		id := fmt.Sprintf("gen/L%d", line)
		ds.Generative = append(ds.Generative, GenItem{ID: id, Doc: r.Ent, Question: *r.Question, CorrectAnswer: *r.CorrectAnswer,
			Evidence: r.Reason, HaluType: code, HaluAnswer: *r.HaluAnswer})
		ds.TrueFalse = append(ds.TrueFalse,
			TFItem{ID: id + "/true", Doc: r.Ent, Question: *r.Question, Statement: *r.CorrectAnswer, True: true, HaluType: code},
			TFItem{ID: id + "/false", Doc: r.Ent, Question: *r.Question, Statement: *r.HaluAnswer, HaluType: code})
		return nil
	})
	if err != nil {
		return ds, info, err
	}
	foundChoice, err := scanRecords(filepath.Join(dir, choiceFile), func(line int, r releasedChoice) error {
		if r.Question == nil || r.CorrectOption == nil || len(r.Answers) != 4 || len(r.Labels) != 4 {
			return errors.New("a single-choice record needs question, correct_option and four answers and labels")
		}
		it := ChoiceItem{ID: fmt.Sprintf("choice/L%d", line), Prompt: *r.Question, CorrectOption: *r.CorrectOption}
		if len(it.CorrectOption) != 1 || it.CorrectOption[0] < 'A' || it.CorrectOption[0] > 'D' {
			return fmt.Errorf("correct_option %q is not A-D", it.CorrectOption)
		}
		for i := range 4 {
			it.Options[i] = r.Answers[i]
			l := r.Labels[i]
			if l != "correct" {
				code, ok := typeCode(l)
				if !ok {
					return fmt.Errorf("label %q is neither correct nor a C-FAITH type", l)
				}
				l = code
				if it.HaluType == "" {
					it.HaluType = code
				}
			}
			it.Labels[i] = l
		}
		correct := 0
		for i, o := range it.Options {
			if err := rundir.CheckText(fmt.Sprintf("answer %c", 'A'+i), o); err != nil {
				return err
			}
			if it.Labels[i] == "correct" {
				correct++
			}
		}
		if correct != 1 {
			return fmt.Errorf("%d answers labelled correct: want one", correct)
		}
		if err := rundir.CheckText("question", it.Prompt); err != nil {
			return err
		}
		if it.Labels[it.CorrectOption[0]-'A'] != "correct" {
			return fmt.Errorf("correct_option %s is labelled %q", it.CorrectOption, it.Labels[it.CorrectOption[0]-'A'])
		}
		ds.Choice = append(ds.Choice, it)
		return nil
	})
	if err != nil {
		return ds, info, err
	}
	if !foundGen && !foundChoice {
		return ds, info, fmt.Errorf("dataset %s: neither %s nor %s nor %s", dir, infoFile, genFile, choiceFile)
	}
	info.Counts = map[string]int{"generative": len(ds.Generative), "single_choice": len(ds.Choice), "true_false": len(ds.TrueFalse)}
	return ds, info, nil
}

// scanRecords decodes each line of the JSONL file at path into a T and hands
// it to fn; an absent file is found false, not an error.
func scanRecords[T any](path string, fn func(line int, r T) error) (found bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	return true, rundir.ScanJSONL(f, path, func(line int, raw []byte) error {
		var r T
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		return fn(line, r)
	})
}
