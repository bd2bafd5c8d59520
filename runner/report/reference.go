package report

import (
	"bytes"
	"embed"
	"encoding/csv"
	"fmt"
	"slices"
	"sort"
	"strings"

	"halu/runner"
)

// Published numbers, transcribed from the papers (reference/README.md names
// each table), shown beside a run of the same suite.

//go:embed reference/*.csv
var referenceFS embed.FS

// Reference is one published table. Requires names the settings, beyond
// the paper's protocol, that the published numbers were made with (the
// December 2024 LiveIdeaBench board: the first release's scoring); Ignores
// the settings that do not bear on it (TruthHypo's Table 2 is of greedy
// hypotheses, whatever the candidates sampled beside them).
type Reference struct {
	Suite    string
	File     string
	Source   string
	Table    runner.Table
	Requires map[string]string
	Ignores  []string
	board    *boardColumns
}

// Comparable says whether the published table may be read beside a run of
// this protocol with these departures from the paper's, and why not.
func (r Reference) Comparable(protocol string, deps []runner.Departure) (bool, string) {
	if protocol == "" {
		return false, "halu does not yet check this suite's settings against the paper's protocol: the layout is the same, the method may differ"
	}
	var why []string
	for _, d := range deps {
		if slices.Contains(r.Ignores, d.Setting) {
			continue
		}
		if r.Requires[d.Setting] != d.Value {
			why = append(why, d.String())
		}
	}
	for k, v := range r.Requires {
		met := false
		for _, d := range deps {
			met = met || d.Setting == k && d.Value == v
		}
		if !met {
			why = append(why, fmt.Sprintf("the published numbers used --%s %s", k, v))
		}
	}
	if len(why) > 0 {
		sort.Strings(why)
		return false, "not comparable with this run: " + strings.Join(why, "; ")
	}
	return true, "comparable: this run used the protocol these numbers were made with (other models, same method)"
}

// boardColumns says how a published table's rows read as leaderboard
// rows: which column names the model and which the group, and which column
// holds each leaderboard metric (Figure.Metric).
type boardColumns struct {
	model, group string
	metrics      map[string]string
}

var referenceIndex = []struct {
	suite, file, source string
	requires            map[string]string
	ignores             []string
	board               *boardColumns
}{
	{"hic", "hic_table2.csv", "HIC-Bench (Yang et al.), Table 2: six LLMs under SCP, CoT, RAG and RCP; judged by the authors' panel", nil, nil,
		&boardColumns{"LLM", "P", map[string]string{"Or": "Or", "Fe": "Fe", "Va": "Va", "IH": "IH", "DH": "DH", "IFS": "IFS"}}},
	{"ideas", "LiveIdeaBench-202412.csv", "LiveIdeaBench (Ruan et al.), published leaderboard, December 2024, first-release scoring (MIT licence)", map[string]string{"scoring": "first-release"}, nil,
		&boardColumns{"Model", "", map[string]string{"Originality": "Originality", "Feasibility": "Feasibility", "Fluency": "Fluency", "Flexibility": "Flexibility", "Average": "Average"}}},
	{"hypo", "truthhypo_table2.csv", "TruthHypo (Xiong et al.), Table 2: link-level F1 and relation-level accuracy (%), four LLMs under four knowledge settings (Average Acc is over items; Average F1 is not reproduced by halu)", nil, []string{"candidates"},
		&boardColumns{"LLM", "Knowledge", map[string]string{"Acc": "Avg Acc"}}},
	{"hypo", "truthhypo_table3.csv", "TruthHypo / KnowHD (Xiong et al.), Table 3: KnowHD groundedness (%) of GPT-4o-mini's hypotheses", nil, []string{"candidates"}, nil},
	{"intent", "faithqa_table3.csv", "FaithQA (Hao, Yu and You), Table 3: Perfect and Constraint Score, GPT-4o as the constraint judge", nil, nil,
		&boardColumns{"Model", "Task", map[string]string{"CS": "CS", "Perfect": "Perfect"}}},
	{"cfaith", "cfaith_table5.csv", "C-FAITH / HaluAgent, Table 5: hallucination rate (%) per format and overall", nil, nil,
		&boardColumns{"Model", "", map[string]string{"HR generative": "Gen.", "HR choice": "Choice.", "HR true/false": "True/False.", "Overall HR": "Ova."}}},
	{"cfaith", "cfaith_table6.csv", "C-FAITH / HaluAgent, Table 6: generative QA hallucination rate (%) per hallucination type", nil, nil, nil},
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
		out = append(out, Reference{Suite: suite, File: r.file, Source: r.source, Requires: r.requires, Ignores: r.ignores, board: r.board,
			Table: runner.Table{Title: "Published: " + r.source, Columns: rows[0], Rows: rows[1:]}})
	}
	return out, nil
}

// RefView is a published table with whether a run may be read beside it.
type RefView struct {
	Reference
	Comparable bool
	Why        string
}
