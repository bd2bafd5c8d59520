package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"halu/localmodels"
	"halu/runner/rundir"
	"halu/runner/setting"
	"halu/runner/summary"
)

// Board is one suite's leaderboard over every run given: a row per run,
// model and group, a column per headline figure of the paper (each cell
// the estimate with its 95% interval, n and unscored count), and the
// published numbers as extra rows where the runs used the paper's
// protocol.
type Board struct {
	Suite   string
	Metrics []BoardMetric
	Rows    []BoardRow
	// Sorts are the rows ordered by each metric, best first; rows with no
	// value last, in their given order.
	Sorts []BoardSort
	// Notes say which published tables are shown and why others, or some
	// runs, are not comparable with them.
	Notes []string
	// Glossary explains the columns' abbreviations (the suite's own,
	// summary.Summary.GlossaryLine), shown above the board.
	Glossary string
}

// BoardMetric is a column: the paper's name for a headline figure.
type BoardMetric struct {
	Name           string
	Lower, Percent bool
}

// BoardRow is a run's model in one group, or a published row.
type BoardRow struct {
	Run, Model, Digest, Group string
	// Published is the source of a published row; empty for a run's row.
	Published string
	// Mark is "†" on a run's row that is not comparable with the
	// published rows shown (Notes say why).
	Mark  string
	Cells []BoardCell
}

// BoardCell is one cell: its text and the value it sorts by (NaN: none).
type BoardCell struct {
	Text  string
	Value float64
	// Figure is the run's figure behind the cell (nil for published and
	// empty cells).
	Figure *summary.Figure
}

// BoardSort is an order of a board's rows.
type BoardSort struct {
	Metric string
	Rows   []int
}

// Boards makes one leaderboard per suite of runs, suites in the order they
// first appear. A suite whose runs hold no headline figure has no board.
func Boards(runs []*Run) ([]Board, error) {
	var suites []string
	bySuite := map[string][]*Run{}
	for _, r := range runs {
		s := r.Manifest.Suite
		if _, ok := bySuite[s]; !ok {
			suites = append(suites, s)
		}
		bySuite[s] = append(bySuite[s], r)
	}
	validated := validatedJudges(bySuite["judges"])
	var out []Board
	for _, s := range suites {
		b, err := board(s, bySuite[s])
		if err != nil {
			return nil, err
		}
		if s != "judges" {
			b.markUnvalidated(bySuite[s], validated)
		}
		if len(b.Rows) > 0 {
			out = append(out, b)
		}
	}
	return out, nil
}

func board(suite string, runs []*Run) (Board, error) {
	b := Board{Suite: suite}
	for _, r := range runs {
		if g := r.Summary.GlossaryLine(); g != "" {
			b.Glossary = g
			break
		}
	}
	col := map[string]int{}
	type rowKey struct{ run, model, group string }
	rowAt := map[rowKey]int{}
	var figs [][]*summary.Figure // per row, per column
	for _, r := range runs {
		for i := range r.Summary.Figures {
			f := &r.Summary.Figures[i]
			if !f.Headline {
				continue
			}
			c, ok := col[f.Metric]
			if !ok {
				c = len(b.Metrics)
				col[f.Metric] = c
				b.Metrics = append(b.Metrics, BoardMetric{Name: f.Metric, Lower: f.Lower, Percent: f.Percent})
			}
			k := rowKey{r.Name(), f.Model, f.Group}
			ri, ok := rowAt[k]
			if !ok {
				ri = len(b.Rows)
				rowAt[k] = ri
				b.Rows = append(b.Rows, BoardRow{Run: r.Name(), Model: f.Model, Digest: digestOf(r.Manifest, f.Model), Group: f.Group})
				figs = append(figs, nil)
			}
			for len(figs[ri]) <= c {
				figs[ri] = append(figs[ri], nil)
			}
			figs[ri][c] = f
		}
	}
	for i := range b.Rows {
		for c := range b.Metrics {
			var f *summary.Figure
			if c < len(figs[i]) {
				f = figs[i][c]
			}
			b.Rows[i].Cells = append(b.Rows[i].Cells, figureCell(f))
		}
	}
	if len(b.Rows) == 0 {
		return b, nil
	}
	if err := b.addPublished(suite, runs, col); err != nil {
		return b, err
	}
	for c, m := range b.Metrics {
		idx := make([]int, len(b.Rows))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(x, y int) int {
			vx, vy := b.Rows[x].Cells[c].Value, b.Rows[y].Cells[c].Value
			switch nx, ny := math.IsNaN(vx), math.IsNaN(vy); {
			case nx && ny:
				return 0
			case nx:
				return 1
			case ny:
				return -1
			}
			if m.Lower {
				return cmp.Compare(vx, vy)
			}
			return cmp.Compare(vy, vx)
		})
		b.Sorts = append(b.Sorts, BoardSort{Metric: m.Name, Rows: idx})
	}
	return b, nil
}

// What makes a judge validated: a validation that measured something —
// at least minValidated units scored against people's labels, at most
// maxValidationUnscored of them unscored — and whose κ interval reaches
// Landis and Koch's "moderate" (0.41): a judge measured to agree with
// people no better than that is no validated judge.
const (
	minValidated          = 50
	maxValidationUnscored = 0.2
	moderateKappa         = 0.41
)

// validation is what the validation runs say of one judge (by digest).
type validation struct {
	ok  bool
	why string // when not ok: what the best validation lacked
}

// validatedJudges are, by digest, the judges that a judge validation run
// among runs measured against people's labels, and whether that counts
// (see minValidated): a validation with every reply unscored, or too few
// units, or a κ below moderate, leaves the judge unvalidated, with why.
func validatedJudges(runs []*Run) map[string]validation {
	out := map[string]validation{}
	for _, r := range runs {
		if r.Summary == nil {
			continue
		}
		for _, j := range judgesOf(r) {
			d := digestOf(r.Manifest, j)
			if d == "" || out[d].ok {
				continue
			}
			sup := r.Summary.Support[j+".accuracy"]
			kLo, kWarn := math.NaN(), ""
			for _, f := range r.Summary.Figures {
				if f.Key == j+".kappa" {
					kLo, kWarn = float64(f.Lo), f.Warning
				}
			}
			v := validation{ok: true}
			switch share := sup.UnscoredShare(); {
			case sup.N < minValidated:
				v = validation{why: fmt.Sprintf("%s: validated on %d units scored, fewer than %d", j, sup.N, minValidated)}
			case share > maxValidationUnscored:
				v = validation{why: fmt.Sprintf("%s: %.0f%% of its validation replies unscored", j, 100*share)}
			case kWarn != "":
				v = validation{why: fmt.Sprintf("%s: %s", j, kWarn)}
			case math.IsNaN(kLo) || kLo < moderateKappa:
				// Validated only when κ is shown at least moderate: the lower
				// end of its 95% interval, so a judge whose κ is below 0.41
				// is validated at most 2.5% of the time where the interval
				// holds its coverage.
				v = validation{why: fmt.Sprintf("%s: κ with people not shown to be at least moderate (lower 95%% bound %.2f < %.2f)", j, kLo, moderateKappa)}
			}
			if _, seen := out[d]; !seen || v.ok {
				out[d] = v
			}
		}
	}
	return out
}

// judgesOf are the models a run measures with (its instrument settings
// that name models: judges, critics, verifiers — not an instrument's
// other settings, such as how ideas' same-base rule is read).
func judgesOf(r *Run) []string {
	var out []string
	for _, s := range Facts(r.Manifest, nil).Settings {
		if s.Role != setting.Instrument || !s.IsModels() || !s.Applies() {
			continue
		}
		for _, m := range strings.Split(strings.Trim(s.Value.String(), "[]"), ",") {
			if m = strings.TrimSpace(m); m != "" && m != "self" && m != "none" {
				out = append(out, m)
			}
		}
	}
	return out
}

// markUnvalidated marks "‡" the rows of runs whose judges were not all
// validated against people's labels by a judge validation run among the
// runs given, and says which.
func (b *Board) markUnvalidated(runs []*Run, validated map[string]validation) {
	var never, weak []string
	seen := map[string]bool{}
	for _, r := range runs {
		miss := false
		for _, j := range judgesOf(r) {
			d := digestOf(r.Manifest, j)
			v, measured := validated[d]
			if d != "" && v.ok {
				continue
			}
			miss = true
			if !seen[j] {
				seen[j] = true
				if measured && d != "" {
					weak = append(weak, v.why)
				} else {
					never = append(never, j)
				}
			}
		}
		if !miss {
			continue
		}
		for i := range b.Rows {
			if b.Rows[i].Run == r.Name() && b.Rows[i].Published == "" {
				b.Rows[i].Mark += "‡"
			}
		}
	}
	if len(never) > 0 {
		b.Notes = append(b.Notes, fmt.Sprintf("‡ judged by models that no judge validation run among these runs measured against people's labels (halu judges validate): %s — these figures carry their judges' unknown error.", strings.Join(never, ", ")))
	}
	if len(weak) > 0 {
		b.Notes = append(b.Notes, fmt.Sprintf("‡ judged by models whose validation does not count (a judge counts as validated on at least %d units scored, at most %.0f%% unscored, with κ's whole 95%% interval at or above moderate agreement, %.2f, and enough of each class under it): %s.",
			minValidated, 100*maxValidationUnscored, moderateKappa, strings.Join(weak, "; ")))
	}
}

// figureCell is a run's cell: "–" with the reason when nothing was
// measured, else the estimate, interval, n and unscored count.
func figureCell(f *summary.Figure) BoardCell {
	if f == nil {
		return BoardCell{Text: "", Value: math.NaN()}
	}
	c := BoardCell{Text: f.Cell(), Value: math.NaN(), Figure: f}
	if f.Measured() {
		c.Value = float64(f.Estimate)
	}
	return c
}

// addPublished appends the published rows of every reference with a
// leaderboard layout that at least one run may be read beside; runs that
// may not get a mark and a note, and a reference no run may be read beside
// gets a note alone.
func (b *Board) addPublished(suite string, runs []*Run, col map[string]int) error {
	refs, err := References(suite)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		if ref.board == nil {
			continue
		}
		var ok []bool
		var whyNot []string
		some := false
		var otherJudges bool
		for _, r := range runs {
			v := ref.Prove(r.Facts)
			c := v.Label != LabelReference
			ok = append(ok, c)
			some = some || c
			otherJudges = otherJudges || v.Label == LabelOtherJudges
			if !c {
				whyNot = append(whyNot, r.Name()+": "+v.Why())
			}
		}
		short := shortSource(ref.Source)
		if !some {
			b.Notes = append(b.Notes, fmt.Sprintf("Published numbers of %s are not shown: %s.", short, strings.Join(whyNot, "; ")))
			continue
		}
		for i, r := range runs {
			if ok[i] {
				continue
			}
			for j := range b.Rows {
				if b.Rows[j].Run == r.Name() && b.Rows[j].Published == "" {
					b.Rows[j].Mark = "†"
				}
			}
		}
		if len(whyNot) > 0 {
			b.Notes = append(b.Notes, fmt.Sprintf("† %s only beside the published rows of %s: %s.", LabelReference, short, strings.Join(whyNot, "; ")))
		}
		same := "the same method and judges"
		if otherJudges {
			same = "the same method, other judges"
		}
		b.Notes = append(b.Notes, fmt.Sprintf("Rows marked “published” are %s (other models, %s).", ref.Source, same))
		head := map[string]int{}
		for i, h := range ref.Table.Columns {
			head[h] = i
		}
		for _, row := range ref.Table.Rows {
			pr := BoardRow{Run: "published", Published: short, Model: cell(row, head, ref.board.model), Group: cell(row, head, ref.board.group)}
			has := false
			for _, m := range b.Metrics {
				name, ok := ref.board.metrics[m.Name]
				text := ""
				if ok {
					text = cell(row, head, name)
				}
				v := publishedValue(text, m.Percent)
				has = has || !math.IsNaN(v)
				pr.Cells = append(pr.Cells, BoardCell{Text: text, Value: v})
			}
			if has {
				b.Rows = append(b.Rows, pr)
			}
		}
	}
	return nil
}

func cell(row []string, head map[string]int, name string) string {
	if i, ok := head[name]; ok && name != "" && i < len(row) {
		return row[i]
	}
	return ""
}

// publishedValue reads a published cell on the scale of halu's figures:
// a percentage ("13.40%", or "43.23" in a table of percentages) of a
// Percent figure is divided by 100. Unreadable text is NaN.
func publishedValue(s string, percent bool) float64 {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	if percent {
		v /= 100
	}
	return v
}

func digestOf(m *rundir.Manifest, model string) string {
	for _, mi := range m.Models {
		if mi.Name == model || mi.Name == localmodels.CanonicalName(model) {
			return localmodels.ShortDigest(mi.Digest)
		}
	}
	return ""
}

// shortSource is a published table's source up to its authors ("HIC-Bench
// (Yang et al.)") or, without them, up to its colon.
func shortSource(s string) string {
	colon, paren := strings.Index(s, ":"), strings.Index(s, ")")
	switch {
	case paren > 0 && (colon < 0 || paren < colon):
		return s[:paren+1]
	case colon > 0:
		return s[:colon]
	}
	return s
}
