package report

import (
	"bytes"
	"embed"
	"encoding/csv"
	"fmt"
	"strings"

	"halu/runner/summary"
)

// Published numbers, transcribed from the papers (reference/README.md names
// each table), shown beside a run of the same suite.

//go:embed reference/*.csv reference/*.yaml
var referenceFS embed.FS

// Reference is one published table, with what it was made with
// (Published; nil when halu does not know).
type Reference struct {
	Suite     string
	File      string
	Source    string
	Table     summary.Table
	Published *Published
	board     *boardColumns
	// Notes flag what the printed numbers say about their own
	// consistency (transcriptionChecks).
	Notes []string
}

// boardColumns says how a published table's rows read as leaderboard
// rows: which column names the model and which the group, and which column
// holds each leaderboard metric (Figure.Metric).
type boardColumns struct {
	model, group string
	metrics      map[string]string
}

// referenceIndex lists the transcribed tables; each FILE.csv has its
// configuration in FILE.yaml (Published).
var referenceIndex = []struct {
	suite, file, source string
	board               *boardColumns
}{
	{"hic", "hic_table2.csv", "HIC-Bench (Yang et al.), Table 2: six LLMs under SCP, CoT, RAG and RCP; judged by the authors' panel",
		&boardColumns{"LLM", "P", map[string]string{"Or": "Or", "Fe": "Fe", "Va": "Va", "IH": "IH", "DH": "DH", "IFS": "IFS"}}},
	{"ideas", "LiveIdeaBench-202412.csv", "LiveIdeaBench (Ruan et al.), published leaderboard, December 2024, first-release scoring (MIT licence)",
		&boardColumns{"Model", "", map[string]string{"Originality": "Originality", "Feasibility": "Feasibility", "Fluency": "Fluency", "Flexibility": "Flexibility", "Average": "Average"}}},
	{"hypo", "truthhypo_table2.csv", "TruthHypo (Xiong et al.), Table 2: link-level F1 and relation-level accuracy (%), four LLMs under four knowledge settings (Average Acc is over items; Average F1 is not reproduced by halu)",
		&boardColumns{"LLM", "Knowledge", map[string]string{"Acc": "Avg Acc"}}},
	{"hypo", "truthhypo_table3.csv", "TruthHypo / KnowHD (Xiong et al.), Table 3: KnowHD groundedness (%) of GPT-4o-mini's hypotheses", nil},
	{"intent", "faithqa_table3.csv", "FaithQA (Hao, Yu and You), Table 3: Perfect and Constraint Score, GPT-4o as the constraint judge",
		&boardColumns{"Model", "Task", map[string]string{"CS": "CS", "Perfect": "Perfect"}}},
	{"cfaith", "cfaith_table5.csv", "C-FAITH / HaluAgent, Table 5: hallucination rate (%) per format and overall",
		&boardColumns{"Model", "", map[string]string{"HR generative": "Gen.", "HR choice": "Choice.", "HR true/false": "True/False.", "Overall HR": "Ova."}}},
	{"cfaith", "cfaith_table6.csv", "C-FAITH / HaluAgent, Table 6: generative QA hallucination rate (%) per hallucination type", nil},
}

// References returns the published tables for suite, in a fixed order.
func References(suite string) ([]Reference, error) {
	var out []Reference
	for _, r := range referenceIndex {
		if r.suite != suite {
			continue
		}
		b, err := referenceFS.ReadFile("reference/" + r.file)
		if err != nil {
			return nil, err
		}
		rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			return nil, fmt.Errorf("reference %s: %w", r.file, err)
		}
		if len(rows) < 2 {
			return nil, fmt.Errorf("reference %s: no rows", r.file)
		}
		pub, err := loadPublished(strings.TrimSuffix(r.file, ".csv") + ".yaml")
		if err != nil {
			return nil, err
		}
		out = append(out, Reference{Suite: suite, File: r.file, Source: r.source, Published: pub, board: r.board,
			Table: summary.Table{Title: "Published: " + r.source, Columns: rows[0], Rows: rows[1:]}})
	}
	for i := range out {
		if check := transcriptionChecks[out[i].File]; check != nil {
			out[i].Notes = check(out[i], out)
		}
	}
	return out, nil
}

// RefView is a published table with how a run may be read beside it.
type RefView struct {
	Reference
	Verdict
	// Why is the verdict's headline, Proof its reasons as a table.
	Why   string
	Proof summary.Table
}
