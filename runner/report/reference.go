package report

import (
	"bytes"
	"embed"
	"encoding/csv"
	"fmt"

	"halu/runner"
)

// Published numbers, transcribed from the papers (reference/README.md names
// each table), shown beside a run of the same suite.

//go:embed reference/*.csv
var referenceFS embed.FS

// Reference is one published table.
type Reference struct {
	Suite  string
	File   string
	Source string
	Table  runner.Table
}

var referenceIndex = []struct{ suite, file, source string }{
	{"hic", "hic_table2.csv", "HIC-Bench (Yang et al.), Table 2: six LLMs under SCP, CoT, RAG and RCP; judged by the authors' panel"},
	{"ideas", "LiveIdeaBench-202412.csv", "LiveIdeaBench (Ruan et al.), published leaderboard, December 2024 (MIT licence)"},
	{"hypo", "truthhypo_table3.csv", "TruthHypo / KnowHD (Xiong et al.), Table 3: KnowHD groundedness (%) of GPT-4o-mini's hypotheses (the paper's Table 2 is an image and is not transcribed)"},
	{"intent", "faithqa_table3.csv", "FaithQA (Hao, Yu and You), Table 3: Perfect and Constraint Score, GPT-4o as the constraint judge"},
	{"cfaith", "cfaith_table5.csv", "C-FAITH / HaluAgent, Table 5: hallucination rate (%) per format and overall"},
	{"cfaith", "cfaith_table6.csv", "C-FAITH / HaluAgent, Table 6: generative QA hallucination rate (%) per hallucination type"},
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
		out = append(out, Reference{Suite: suite, File: r.file, Source: r.source,
			Table: runner.Table{Title: "Published: " + r.source, Columns: rows[0], Rows: rows[1:]}})
	}
	return out, nil
}
