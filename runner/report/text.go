package report

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"halu/localmodels"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// Markdown writes every run's tables as Markdown pipe tables, with the
// published ones after, for papers and READMEs.
func Markdown(w io.Writer, runs []*Run) error {
	var b strings.Builder
	b.WriteString("# halu report\n")
	boards, err := Boards(runs)
	if err != nil {
		return err
	}
	for _, bd := range boards {
		fmt.Fprintf(&b, "\n## Leaderboard: %s\n", mdCell(bd.Suite))
		if bd.Glossary != "" {
			fmt.Fprintf(&b, "\nAbbreviations: %s.\n", mdCell(bd.Glossary))
		}
		writeMDTable(&b, BoardTable(bd, bd.Sorts[0]))
		for _, n := range bd.Notes {
			fmt.Fprintf(&b, "\n%s\n", mdCell(n))
		}
	}
	for _, r := range runs {
		fmt.Fprintf(&b, "\n## %s\n\n", mdCell(r.Name()))
		if r.Summary.TinyModel {
			b.WriteString("> **Warning:** a toy-sized test model produced numbers in this run: they are meaningless.\n\n")
		}
		if line := r.Manifest.Measured.Closing(); line != "" {
			fmt.Fprintf(&b, "> **Measured nothing:** %s.\n\n", mdCell(line))
		}
		if g := r.Summary.GlossaryLine(); g != "" {
			fmt.Fprintf(&b, "Abbreviations: %s.\n\n", mdCell(g))
		}
		fmt.Fprintf(&b, "Next: %s.\n\n", mdCell(NextSteps(r)))
		if p := r.Manifest.Paper; p != "" {
			fmt.Fprintf(&b, "Paper: %s.\n\n", mdCell(p))
		}
		if r.Verified != "" {
			fmt.Fprintf(&b, "Verified: %s.\n\n", mdCell(r.Verified))
		}
		fmt.Fprintf(&b, "Status %s; models:", r.Manifest.StatusText())
		for _, m := range r.Manifest.Models {
			fmt.Fprintf(&b, " %s (`%s`)", mdCell(m.Name), localmodels.ShortDigest(m.Digest))
		}
		b.WriteString(".\n")
		for _, t := range r.Summary.Tables {
			writeMDTable(&b, t)
		}
		refs, err := References(r.Manifest.Suite)
		if err != nil {
			return err
		}
		for _, ref := range refs {
			writeMDTable(&b, ref.Table)
			v := ref.Prove(r.Facts)
			fmt.Fprintf(&b, "\n%s\n", mdCell(v.Headline()))
			writeMDTable(&b, v.ProofTable())
			for _, n := range ref.Notes {
				fmt.Fprintf(&b, "\n%s\n", mdCell(n))
			}
		}
		for _, n := range r.Summary.Notes {
			fmt.Fprintf(&b, "- %s\n", mdCell(n))
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// BoardTable is a board in one order as a plain table (Markdown, console).
func BoardTable(b Board, s BoardSort) summary.Table {
	t := summary.Table{Title: fmt.Sprintf("%s, sorted by %s, best first (estimate [95%% interval] n, unscored)", b.Suite, s.Metric),
		Columns: []string{"run", "model", "digest", "group"}}
	for _, m := range b.Metrics {
		arrow := " ↑"
		if m.Lower {
			arrow = " ↓"
		}
		t.Columns = append(t.Columns, m.Name+arrow)
	}
	for _, i := range s.Rows {
		r := b.Rows[i]
		run := r.Run + r.Mark
		if r.Published != "" {
			run = "published: " + r.Published
		}
		row := []string{run, r.Model, r.Digest, r.Group}
		for _, c := range r.Cells {
			row = append(row, c.Text)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func writeMDTable(b *strings.Builder, t summary.Table) {
	if len(t.Rows) == 0 {
		fmt.Fprintf(b, "\n### %s\n\nno rows: %s\n", mdCell(t.Title), mdCell(t.WhyEmpty()))
		return
	}
	fmt.Fprintf(b, "\n### %s\n\n|", mdCell(t.Title))
	for _, c := range t.Columns {
		fmt.Fprintf(b, " %s |", mdCell(c))
	}
	b.WriteString("\n|")
	for range t.Columns {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, row := range t.Rows {
		b.WriteString("|")
		for _, c := range row {
			fmt.Fprintf(b, " %s |", mdCell(c))
		}
		b.WriteString("\n")
	}
}

// mdCell keeps a cell on one line and its pipes and HTML inert.
func mdCell(s string) string { return mdInert.Replace(s) }

// mdInert escapes what mdCell keeps inert.
var mdInert = strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ", "<", "&lt;", ">", "&gt;")

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

// slug makes a file name part from a title.
func slug(s string) string {
	s = strings.Trim(slugRE.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(s) > 60 {
		s = strings.TrimRight(s[:60], "-")
	}
	return s
}

// CSV writes one CSV file per table into dir, named
// NN-SUITE-TT-TITLE.csv (run number, suite, table number, title), and
// returns their paths.
func CSV(dir string, runs []*Run) ([]string, error) {
	// The tables are written into a directory beside dir and renamed to it
	// whole: a report that is killed leaves the previous tables or all the
	// new ones, never a mix (what a killed report left is swept first).
	dir = filepath.Clean(dir)
	if err := replaceable(dir); err != nil {
		return nil, err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	rundir.SweepTemps(parent, rundir.TempPrefix(dir))
	tmp, err := os.MkdirTemp(parent, rundir.TempPrefix(dir))
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp) // after the exchange, the previous tables
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	var names []string
	for i, r := range runs {
		refs, err := References(r.Manifest.Suite)
		if err != nil {
			return nil, err
		}
		tables := append([]summary.Table(nil), r.Summary.Tables...)
		for _, ref := range refs {
			tables = append(tables, ref.Table)
		}
		for j, t := range tables {
			name := fmt.Sprintf("%02d-%s-%02d-%s.csv", i+1, r.Manifest.Suite, j+1, slug(t.Title))
			err := rundir.WriteAtomic(filepath.Join(tmp, name), func(f io.Writer) error {
				w := csv.NewWriter(f)
				w.Write(t.Columns)
				w.WriteAll(t.Rows) // flushes
				return w.Error()
			})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
			}
			names = append(names, name)
		}
	}
	if err := rundir.ReplaceDir(tmp, dir); err != nil {
		return nil, err
	}
	var paths []string
	for _, n := range names {
		paths = append(paths, filepath.Join(dir, n))
	}
	return paths, nil
}

// replaceable refuses a --csv directory that holds anything but CSV files
// (a report's tables): the directory is replaced whole.
func replaceable(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--csv %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".csv") {
			return fmt.Errorf("--csv %s holds %s, which is not a report's table: the tables replace the directory whole, so name a new or a tables-only directory", dir, e.Name())
		}
	}
	return nil
}
