package hypo

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"halu/metrics"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// Summarize builds the paper's Table 2 (link-level F1 and relation-level
// accuracy per task and averaged), Table 3 (groundedness by knowledge
// setting and KnowHD source), Fig. 3 (accuracy by groundedness level, levels
// with ≥ 10 hypotheses) and Fig. 4 (greedy vs majority vote vs
// highest-groundedness selection); in open-ended mode, the most and least
// grounded hypothesis per input.
func (s *Suite) Summarize(recs *rundir.Records) (*summary.Summary, error) {
	rb, err := s.readAll(recs)
	if err != nil {
		return nil, err
	}
	var open []Result
	var groups [][]reading
	for i, rs := 0, rb.rs; i < len(rs); {
		j := i + 1
		for j < len(rs) && rs[j].group == rs[i].group {
			j++
		}
		if g := rb.groups[rs[i].group]; g.open {
			for _, r := range rs[i:j] {
				open = append(open, *r.extra.open)
			}
		} else {
			groups = append(groups, rs[i:j])
		}
		i = j
	}
	name := func(g []reading) (model, setting string) {
		k := rb.groups[g[0].group]
		return k.model, k.setting
	}
	sum := &summary.Summary{Suite: "hypo", Metrics: map[string]float64{}, Glossary: []summary.Term{
		{Abbr: "Acc", Meaning: "relation-level accuracy: the share of hypotheses whose relation is the gold one"},
		{Abbr: "F1", Meaning: "link-level F1: whether a relation exists at all, predicted against the gold"},
		{Abbr: "groundedness", Meaning: "KnowHD's share of a hypothesis's claims supported by the knowledge (eq. 3)"},
		{Abbr: "kg, lit", Meaning: "knowledge in the prompt: the knowledge graph's chains, retrieved PubMed documents (parametric: none)"},
	}}
	if len(open) > 0 {
		sum.Tables = append(sum.Tables, s.openTable(open))
	}
	t := newTables(s.cfg.unreadWrong())
	for _, g := range groups {
		m, st := name(g)
		t.accuracyBar(m, st, g)
		t.table2(sum, m, st, g)
		if cov := coverage(st, g); cov != nil {
			t.cov.Rows = append(t.cov.Rows, append([]string{m}, cov.row...))
			t.covNotes = append(t.covNotes, cov.notes...)
			sum.ContentCut += cov.cut
		}
		for i, src := range s.cfg.KnowHD {
			t.groundedness(sum, m, st, src, i, g)
		}
		if s.cfg.Candidates > 0 {
			t.f4.Rows = append(t.f4.Rows, s.selectionRow(m, st, g))
		}
	}
	t.add(sum, len(s.cfg.KnowHD) > 0)
	var conf []summary.ConfidenceGroup
	for _, g := range groups {
		m, st := name(g)
		conf = append(conf, summary.ConfidenceGroup{Model: m, Setting: st, Units: confidenceUnits(g)})
	}
	sum.AddConfidence("TruthHypo's link labels (the greedy hypothesis's relation against the gold one)", conf)
	if s.cfg.Candidates >= 2 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("semantic entropy of the candidates (discrete, and probability-weighted where every candidate's log-probabilities are known) is divided by ln k, k = %d candidates per item (--candidates); a candidate whose relation could not be read is a meaning of its own, agreeing with no other.", s.cfg.Candidates))
	}
	if len(s.cfg.KnowHD) > 0 && s.cfg.Verifier == VerifierSelf {
		sum.Notes = append(sum.Notes, "KnowHD verifier = generator (--verifier self): each generator split and checked its own claims; the authors check every generator's claims with one fixed verifier, so groundedness here also measures each model as a judge of itself.")
	}
	sum.Notes = append(sum.Notes,
		fmt.Sprintf("Knowledge below PMID %d (strictly); literature: BM25 (%s, %s) top %d for the question, %d per claim (τ = %g); KG: ≤ %d lines from chains of ≤ %d hops (%s), or the nodes' own edges when no chain links them; ≤ %d edges per claim; the last %d claims are checked. KG nodes are found by exact id, then by name.",
			s.cfg.BelowPMID, s.cfg.BM25, s.bm25(), litK, claimK, s.cfg.MinScore, maxKGEdges, maxHops, s.cfg.KGChains, edgeK, maxClaims),
		unreadableNote(s.cfg.unreadWrong()))
	return sum, nil
}

// reading is what Summarize reads of one result: its group (model and
// setting), task and gold relation, its greedy hypothesis's relation as
// read, the knowledge its prompt held, how its candidates chose, and
// (extra, when it has any) its claims' counts and groundedness per KnowHD
// source and its confidence scores. A summary holds one per record, not
// the result — its knowledge, claims and replies would make a summary's
// memory grow with the records' text — and shares their strings: one copy
// of each label, and of each item's ID past its model and setting (the
// same test item for every model and setting).
type reading struct {
	// item is the record's item past "model/setting/": within a group,
	// its order is the items' order.
	item  string
	group int32 // in readings.groups
	task  int8  // in tasks; -1: another or none
	// greedy: a greedy hypothesis was made; parsed: its relation was
	// read, as label.
	greedy, parsed bool
	// candidates: candidates were drawn; majority: their majority vote is
	// the gold relation; selected: the most grounded candidate (against
	// the selection source) was read as the gold relation.
	candidates, majority, selected bool
	// What the prompt held (coverage): knowledge dropped to fit the
	// window, a prompt over it anyway, KG lines, KG lines from chains,
	// documents, and the documents kept.
	dropped, overflow, withKG, fromChains, withDocs bool
	// isUnit: the result is a confidence unit (confidenceUnit).
	isUnit      bool
	docsKept    int32
	gold, label string
	extra       *readingExtra
}

// readingExtra is what a reading holds beyond counts and labels, when the
// run made it: an open-ended input's whole result (§5), whose table shows
// its hypotheses; the greedy hypothesis's KnowHD reading per source (in
// the order of --knowhd); its confidence scores.
type readingExtra struct {
	open      *Result
	grounding []groundReading
	scores    map[string]float64
}

// right is whether the greedy hypothesis was read as the gold relation.
func (r *reading) right() bool { return r.parsed && r.label == r.gold }

// ground is r's KnowHD reading from the i-th source.
func (r *reading) ground(i int) groundReading {
	if r.extra == nil || i >= len(r.extra.grounding) {
		return groundReading{}
	}
	return r.extra.grounding[i]
}

// groundReading is a greedy hypothesis's KnowHD verdict for one source:
// whether it was checked against it (present), its claims and those
// supported, whether its claims came from the fallback, and its
// groundedness when scored.
type groundReading struct {
	present, scored, fallback bool
	claims, supported         int
	groundedness              float64
}

// readings are a run's readings, group by group in the tables' order
// (model, then setting in the paper's order; open-ended inputs first),
// each group's in item order.
type readings struct {
	rs     []reading
	groups []groupKey
}

// groupKey is a reading's group: its model and setting, and whether its
// results are of open-ended inputs.
type groupKey struct {
	model, setting string
	open           bool
}

// readAll reads every record of recs into readings.
func (s *Suite) readAll(recs *rundir.Records) (*readings, error) {
	rb := &readings{}
	at := map[groupKey]int32{}
	rd := s.reader()
	var bad error
	for rec := range recs.All() {
		var r Result
		if err := json.Unmarshal(rec.Data, &r); err != nil {
			bad = fmt.Errorf("record %s: %w", rec.Item, err)
			break
		}
		k := groupKey{r.Model, r.Setting, r.OpenID != ""}
		gi, ok := at[k]
		if !ok {
			gi = int32(len(rb.groups))
			at[k] = gi
			rb.groups = append(rb.groups, k)
		}
		g := rd.read(&r)
		g.group = gi
		g.item = rd.share(strings.TrimPrefix(rec.Item, k.model+"/"+k.setting+"/"))
		rb.rs = append(rb.rs, g)
	}
	if err := recs.Err(); err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, bad
	}
	// The groups' order, then each group's readings in item order (those
	// of one item as read).
	order := map[string]int{"parametric": 0, "kg": 1, "lit": 2, "kg+lit": 3}
	rank := make([]int, len(rb.groups))
	byName := make([]int, len(rb.groups))
	for i := range byName {
		byName[i] = i
	}
	sort.Slice(byName, func(i, j int) bool {
		a, b := rb.groups[byName[i]], rb.groups[byName[j]]
		if a.open != b.open {
			return a.open
		}
		if a.model != b.model {
			return a.model < b.model
		}
		if order[a.setting] != order[b.setting] {
			return order[a.setting] < order[b.setting]
		}
		return a.setting < b.setting
	})
	for r, g := range byName {
		rank[g] = r
	}
	sort.SliceStable(rb.rs, func(i, j int) bool {
		a, b := &rb.rs[i], &rb.rs[j]
		if a.group != b.group {
			return rank[a.group] < rank[b.group]
		}
		return a.item < b.item
	})
	return rb, nil
}

// reader makes the readings of a run's results (group and item left to
// the caller), sharing their strings.
type reader struct {
	s           *Suite
	shared      map[string]string
	src         string
	unreadWrong bool
}

func (s *Suite) reader() *reader {
	return &reader{s: s, shared: map[string]string{}, src: s.selectionSource(), unreadWrong: s.cfg.unreadWrong()}
}

// share is x, one copy of it for every reading.
func (rd *reader) share(x string) string {
	if y, ok := rd.shared[x]; ok {
		return y
	}
	rd.shared[x] = x
	return x
}

// read is the reading of r.
func (rd *reader) read(r *Result) reading {
	g := reading{task: -1}
	if r.OpenID != "" {
		dropReplies(r)
		g.extra = &readingExtra{open: r}
		return g
	}
	for i, t := range tasks {
		if r.Task == t {
			g.task = int8(i)
		}
	}
	g.gold = rd.share(r.Gold)
	var scores map[string]float64
	var unit summary.ConfidenceUnit
	unit, g.isUnit = confidenceUnit(r, rd.unreadWrong)
	scores = unit.Scores
	if r.Greedy != nil {
		g.greedy, g.parsed, g.label = true, r.Greedy.Parsed, rd.share(r.Greedy.Label)
		if len(r.Candidates) > 0 {
			g.candidates = true
			g.majority = r.Majority != "" && r.Majority == r.Gold
			if rd.src != "" {
				best := mostGrounded(r.Candidates, rd.src, true)
				g.selected = best != nil && best.Parsed && best.Label == r.Gold
			}
		}
		f := r.Knowledge.Fit
		g.docsKept, g.dropped, g.overflow = int32(f.DocsKept), f.DocsDropped+f.EdgesDropped > 0, f.Overflow
		g.withKG, g.fromChains, g.withDocs = len(r.Knowledge.Edges) > 0, r.Knowledge.KGSource != "nodes", len(r.Knowledge.PMIDs) > 0
	}
	var grounding []groundReading
	if r.Greedy != nil && len(rd.s.cfg.KnowHD) > 0 {
		for _, src := range rd.s.cfg.KnowHD {
			var gr groundReading
			if h := r.Greedy.Grounding[src]; h != nil {
				gr = groundReading{present: true, scored: h.Scored, fallback: h.ClaimsFallback, claims: len(h.Claims), groundedness: h.Groundedness}
				for _, c := range h.Claims {
					if c.Supported {
						gr.supported++
					}
				}
			}
			grounding = append(grounding, gr)
		}
	}
	if grounding != nil || scores != nil {
		g.extra = &readingExtra{grounding: grounding, scores: scores}
	}
	return g
}

// dropReplies takes each hypothesis's reply as written (Raw) out of r: no
// table reads it, and with a real model it is most of a record (a
// greedy reply and every candidate's), so a summary of a run's results
// holds what it counts rather than the run's text.
func dropReplies(r *Result) {
	if r.Greedy != nil {
		r.Greedy.Raw = ""
	}
	for i := range r.Candidates {
		r.Candidates[i].Raw = ""
	}
}

// tasks are the three TruthHypo tasks, in the paper's order.
var tasks = []string{"chem-gene", "dis-gene", "gene-gene"}

// pct prints a share as a percentage with two decimals; "–" for none.
func pct(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.2f", 100*x)
}

// tables are the summary's tables and charts as they fill, one model and
// knowledge setting at a time.
type tables struct {
	t2, tpr, cov, t3, f3, f4 summary.Table
	covNotes                 []string
	accBars, gvsa            summary.Chart
	accSeries                summary.Series
	unreadWrong              bool // --unreadable wrong
}

func newTables(unreadWrong bool) *tables {
	unread, left := "unparseable (unscored)", "greedy unparseable (left out)"
	if unreadWrong {
		unread, left = "unparseable (counted wrong)", "greedy unparseable (counted wrong)"
	}
	return &tables{
		unreadWrong: unreadWrong,
		t2: summary.Table{Title: "TruthHypo Table 2 layout: link-level F1 and relation-level accuracy (%)",
			Columns: []string{"LLM", "Knowledge", "Chem&Gene F1", "Chem&Gene Acc", "Dis&Gene F1", "Dis&Gene Acc", "Gene&Gene F1", "Gene&Gene Acc", "Avg F1 (mean of tasks)", "Avg Acc (over items)", unread}},
		tpr: summary.Table{Title: "Link-level precision and recall (%) (paper appendix)", Columns: []string{"LLM", "Knowledge", "task", "precision", "recall", "F1", "items"}},
		cov: summary.Table{Title: "Knowledge coverage per setting: items whose prompt held any KG chain, any retrieved document",
			Columns: []string{"LLM", "Knowledge", "items", "with KG knowledge", "of which from chains", "with documents", "documents kept (mean)", "items with documents or KG lines dropped to fit the window", "prompts over the window anyway"}},
		t3:        summary.Table{Title: "TruthHypo Table 3 layout: KnowHD groundedness (%) of greedy hypotheses, per task and pooled", Columns: []string{"LLM", "Knowledge", "task", "KnowHD source", "groundedness", "hypotheses scored", "claims", "claims supported", "claim-list fallbacks"}},
		f3:        summary.Table{Title: "Fig. 3 data: accuracy by groundedness level (levels of width 0.1 holding ≥ 10 hypotheses)", Columns: []string{"LLM", "Knowledge", "source", "groundedness", "accuracy", "hypotheses"}},
		f4:        summary.Table{Title: "Fig. 4 layout: hypothesis selection accuracy (%)", Columns: []string{"LLM", "Knowledge", "greedy", "majority vote", "highest groundedness", "items", "candidates", left}},
		accBars:   summary.Chart{Kind: "bars", Title: "Relation-level accuracy of greedy hypotheses, all tasks pooled (95% Wilson CI)", Y: "accuracy"},
		accSeries: summary.Series{Name: "accuracy"},
		gvsa:      summary.Chart{Kind: "scatter", Title: "Groundedness vs accuracy (paper Fig. 3; every level of width 0.1 with ≥ 1 hypothesis)", X: "KnowHD groundedness", Y: "accuracy"},
	}
}

// add puts the tables that hold anything into sum.
func (t *tables) add(sum *summary.Summary, knowhd bool) {
	if len(t.t2.Rows) > 0 {
		sum.Tables = append(sum.Tables, t.t2, t.tpr)
	}
	if len(t.cov.Rows) > 0 {
		sum.Tables = append(sum.Tables, t.cov)
		sum.Notes = append(sum.Notes, t.covNotes...)
	}
	if len(t.accSeries.Values) > 0 {
		t.accBars.Series = []summary.Series{t.accSeries}
		sum.Charts = append(sum.Charts, t.accBars)
	}
	if len(t.gvsa.Points) > 0 {
		sum.Charts = append(sum.Charts, t.gvsa)
	}
	if knowhd && len(t.t3.Rows) > 0 {
		sum.Tables = append(sum.Tables, t.t3, t.f3)
	}
	if len(t.f4.Rows) > 0 {
		sum.Tables = append(sum.Tables, t.f4)
	}
}

// accuracyBar adds the pooled accuracy of a model's greedy hypotheses in
// one setting to the chart.
func (t *tables) accuracyBar(model, setting string, rs []reading) {
	var acc summary.Tally
	for i := range rs {
		if r := &rs[i]; r.greedy && r.gold != "" && (r.parsed || t.unreadWrong) {
			acc.Hit(r.right())
		}
	}
	if acc.N() > 0 {
		t.accBars.Groups = append(t.accBars.Groups, model+" "+setting)
		t.accSeries.AddProportion(acc.Hits(), acc.N())
	}
}

// table2 adds a model's Table 2 row in one knowledge setting: per task,
// link-level F1 and accuracy over the hypotheses whose label was read (an
// unread one is unscored: counted, left out, never read as wrong or as
// "no link"), then their averages.
func (t *tables) table2(sum *summary.Summary, model, setting string, rs []reading) {
	row := []string{model, setting}
	var f1s []float64
	var pooled summary.Tally
	allUnread := 0
	for ti, task := range tasks {
		var pred, gold []string
		var acc summary.Tally
		unread := 0
		for i := range rs {
			r := &rs[i]
			if int(r.task) != ti || !r.greedy {
				continue
			}
			if !r.parsed {
				unread++
				if !t.unreadWrong {
					acc.Skip()
					continue
				}
				// The paper's measures are over every item: no label
				// read matches none and predicts no link.
				pred, gold = append(pred, ""), append(gold, r.gold)
				acc.Hit(false)
				continue
			}
			pred, gold = append(pred, r.label), append(gold, r.gold)
			acc.Hit(r.label == r.gold)
		}
		pooled.Merge(acc)
		allUnread += unread
		key := fmt.Sprintf("%s/%s/%s.", model, setting, task)
		if len(pred) == unreadIn(t.unreadWrong, unread) {
			// Nothing read (under --unreadable wrong too: a figure of
			// hypotheses all counted wrong rests on no reply): no figure,
			// and a gate on it fails as unmeasured.
			row = append(row, "–", "–")
			if unread > 0 {
				sum.SetSupport(key+"f1", 0, unread)
				sum.SetSupport(key+"accuracy", 0, unread)
			}
			continue
		}
		// Support: the hypotheses read, and the unreadable ones (left out,
		// or counted wrong under --unreadable wrong): a gate sees their share
		// either way.
		read := len(pred)
		if t.unreadWrong {
			read -= unread
		}
		ls, _ := metrics.LinkLevel(pred, gold)
		a, _ := metrics.Accuracy(pred, gold)
		f1s = append(f1s, ls.F1)
		row = append(row, pct(ls.F1), pct(a))
		t.tpr.Rows = append(t.tpr.Rows, []string{model, setting, task, pct(ls.Precision), pct(ls.Recall), pct(ls.F1), fmt.Sprint(len(pred))})
		sum.Metrics[key+"f1"] = ls.F1
		sum.Metrics[key+"accuracy"] = a
		sum.SetSupport(key+"f1", read, unread)
		sum.SetSupport(key+"accuracy", read, unread)
	}
	// Table 2's Average Acc is over items (the tasks weighted by their
	// sizes: every published row matches); its Average F1 is not the mean
	// of the task F1s, nor their weighted mean, and is not reproduced:
	// halu prints the mean of the task F1s, labelled so.
	if pooled.N() == unreadIn(t.unreadWrong, allUnread) {
		// No hypothesis read in any task: "–", and no headline figure.
		pooled = summary.Tally{Unscored: allUnread}
	}
	row = append(row, pct(metrics.Mean(f1s)), pct(metrics.Ratio(pooled.Hits(), pooled.N())), fmt.Sprint(allUnread))
	sum.Metrics[fmt.Sprintf("%s/%s.avg_f1", model, setting)] = metrics.Mean(f1s)
	accFig := pooled.Share(model, setting, "Acc", fmt.Sprintf("%s/%s.avg_accuracy", model, setting))
	accFig.Headline = true
	sum.AddFigure(accFig)
	t.t2.Rows = append(t.t2.Rows, row)
}

// unreadIn is how many of a tally's units are unread hypotheses counted
// wrong (--unreadable wrong), none when they are left out.
func unreadIn(wrong bool, unread int) int {
	if wrong {
		return unread
	}
	return 0
}

// groundedness adds a model's KnowHD groundedness in one setting against
// source src (the i-th of --knowhd): Table 3 per task, then pooled, its
// figure, and Fig. 3's accuracy by groundedness level.
func (t *tables) groundedness(sum *summary.Summary, model, setting, src string, i int, rs []reading) {
	var gs, bgs []float64
	var correct []bool
	for ti, task := range append(append([]string(nil), tasks...), "") {
		var tgs []float64
		claims, supported, fallbacks := 0, 0, 0
		for j := range rs {
			r := &rs[j]
			g := r.ground(i)
			if !r.greedy || !g.present || task != "" && int(r.task) != ti {
				continue
			}
			claims += g.claims
			supported += g.supported
			if g.fallback {
				fallbacks++
			}
			if g.scored {
				tgs = append(tgs, g.groundedness)
				if task == "" {
					gs = append(gs, g.groundedness)
					if r.parsed { // accuracy by level: scored hypotheses only
						bgs, correct = append(bgs, g.groundedness), append(correct, r.label == r.gold)
					}
				}
			}
		}
		name := task
		if task == "" {
			name = "all tasks"
		} else if len(tgs) == 0 && claims == 0 {
			continue
		}
		t.t3.Rows = append(t.t3.Rows, []string{model, setting, name, src, pct(metrics.Mean(tgs)), fmt.Sprint(len(tgs)), fmt.Sprint(claims), fmt.Sprint(supported), fmt.Sprint(fallbacks)})
	}
	gf := summary.MeanFigure(model, setting, "groundedness ("+src+")", fmt.Sprintf("%s/%s.groundedness_%s", model, setting, src), gs, ungrounded(rs, i))
	gf = gf.Clip(0, 1)
	gf.Percent, gf.Headline = true, true
	sum.AddFigure(gf)
	bins, _ := metrics.AccuracyByGroundedness(bgs, correct, 0.1, 10)
	for _, b := range bins {
		t.f3.Rows = append(t.f3.Rows, []string{model, setting, src, fmt.Sprintf("%.1f", b.Groundedness), pct(b.Accuracy), fmt.Sprint(b.N)})
	}
	all, _ := metrics.AccuracyByGroundedness(bgs, correct, 0.1, 1)
	for _, b := range all {
		t.gvsa.Points = append(t.gvsa.Points, summary.Point{Label: fmt.Sprintf("%s %s %s (n=%d)", model, setting, src, b.N),
			X: summary.Num(b.Groundedness), Y: summary.Num(b.Accuracy)})
	}
}

// selectionRow is a model's Fig. 4 row in one setting: the accuracy of the
// greedy hypothesis, of the majority vote and of the most grounded
// candidate, over the items whose greedy hypothesis was read.
func (s *Suite) selectionRow(model, setting string, rs []reading) []string {
	src := s.selectionSource()
	var greedy, major, grounded []bool
	unread := 0
	for i := range rs {
		r := &rs[i]
		if !r.greedy || !r.candidates {
			continue
		}
		if !r.parsed {
			unread++
			if !s.cfg.unreadWrong() {
				continue // unscored: the item leaves the comparison
			}
		}
		greedy = append(greedy, r.right())
		major = append(major, r.majority)
		if src != "" {
			grounded = append(grounded, r.selected)
		}
	}
	gsel := "n/a (no --knowhd)"
	if src != "" {
		gsel = pct(share(grounded))
	}
	g, m := pct(share(greedy)), pct(share(major))
	if read := len(greedy) - unread; s.cfg.unreadWrong() && read <= 0 && unread > 0 {
		// Every greedy hypothesis unread and counted wrong: as Table 2,
		// no figure rests on no reply.
		g, m = "–", "–"
		if src != "" {
			gsel = "–"
		}
	}
	return []string{model, setting, g, m, gsel, fmt.Sprint(len(greedy)), fmt.Sprint(s.cfg.Candidates), fmt.Sprint(unread)}
}

func share(b []bool) float64 {
	if len(b) == 0 {
		return math.NaN()
	}
	n := 0
	for _, x := range b {
		if x {
			n++
		}
	}
	return float64(n) / float64(len(b))
}

func (s *Suite) selectionSource() string {
	for _, src := range s.cfg.KnowHD {
		if src == "kg+lit" {
			return src
		}
	}
	if len(s.cfg.KnowHD) > 0 {
		return s.cfg.KnowHD[0]
	}
	return ""
}

// mostGrounded picks the candidate with the highest (or lowest) scored
// groundedness for src; ties go to the earliest sample.
func mostGrounded(cs []Hypothesis, src string, highest bool) *Hypothesis {
	var best *Hypothesis
	for i := range cs {
		g := cs[i].Grounding[src]
		if g == nil || !g.Scored {
			continue
		}
		if best == nil || (highest && g.Groundedness > best.Grounding[src].Groundedness) || (!highest && g.Groundedness < best.Grounding[src].Groundedness) {
			best = &cs[i]
		}
	}
	return best
}

func (s *Suite) openTable(rs []Result) summary.Table {
	src := s.selectionSource()
	t := summary.Table{Title: "Open-ended hypotheses (§5): most and least grounded per input (source " + src + ")",
		Columns: []string{"LLM", "Knowledge", "input", "most grounded", "groundedness", "least grounded", "groundedness", "gap ≥ 0.3"}}
	sort.Slice(rs, func(i, j int) bool {
		return rs[i].Model+rs[i].Setting+rs[i].OpenID < rs[j].Model+rs[j].Setting+rs[j].OpenID
	})
	for _, r := range rs {
		hi, lo := mostGrounded(r.Candidates, src, true), mostGrounded(r.Candidates, src, false)
		if hi == nil || lo == nil {
			t.Rows = append(t.Rows, []string{r.Model, r.Setting, r.OpenID, "(no scored hypothesis)", "", "", "", ""})
			continue
		}
		gh, gl := hi.Grounding[src].Groundedness, lo.Grounding[src].Groundedness
		t.Rows = append(t.Rows, []string{r.Model, r.Setting, r.OpenID, hi.Statement, fmt.Sprintf("%.2f", gh), lo.Statement, fmt.Sprintf("%.2f", gl), fmt.Sprint(gh-gl >= 0.3)})
	}
	return t
}

// coverageRow is one setting's knowledge coverage and its warnings.
type coverageRow struct {
	row   []string
	notes []string
	// cut counts the items whose prompt lost retrieved knowledge to fit
	// the window, or was longer than it anyway.
	cut int
}

// lowCoverage is the share of items with knowledge below which a setting's
// row is flagged: it measures the model with almost no added knowledge.
const lowCoverage = 0.5

// coverage counts the items of a knowledge setting whose prompt held any KG
// knowledge and any document (nil for the parametric setting). An offline
// KG that links few test entities makes "+KG" rows a measurement of the
// parametric model; the note says so.
func coverage(setting string, rs []reading) *coverageRow {
	kg, lit := strings.Contains(setting, "kg"), strings.Contains(setting, "lit")
	if !kg && !lit {
		return nil
	}
	n, withKG, withChains, withDocs, dropped, overflow := 0, 0, 0, 0, 0, 0
	var kept []float64
	for i := range rs {
		r := &rs[i]
		if !r.greedy {
			continue
		}
		n++
		kept = append(kept, float64(r.docsKept))
		if r.dropped {
			dropped++
		}
		if r.overflow {
			overflow++
		}
		if r.withKG {
			withKG++
			if r.fromChains {
				withChains++
			}
		}
		if r.withDocs {
			withDocs++
		}
	}
	cell := func(on bool, k int) string {
		if !on || n == 0 {
			return "–"
		}
		return fmt.Sprintf("%d (%.0f%%)", k, 100*metrics.Ratio(k, n))
	}
	meanKept := "–"
	if lit && n > 0 {
		meanKept = fmt.Sprintf("%.1f of up to %d", metrics.Mean(kept), litK)
	}
	c := &coverageRow{row: []string{setting, fmt.Sprint(n), cell(kg, withKG), cell(kg, withChains), cell(lit, withDocs), meanKept, fmt.Sprint(dropped), fmt.Sprint(overflow)},
		cut: dropped + overflow}
	if dropped > 0 {
		c.notes = append(c.notes, fmt.Sprintf("setting %s: %d of %d items had retrieved knowledge left out to fit the model's context window (the paper shows %d documents); raise --num-ctx to keep it", setting, dropped, n, litK))
	}
	if overflow > 0 {
		c.notes = append(c.notes, fmt.Sprintf("setting %s: %d prompts were longer than the context window even without knowledge: the server cut their beginning", setting, overflow))
	}
	for _, x := range []struct {
		on   bool
		k    int
		what string
	}{{kg, withKG, "KG knowledge (a chain or the nodes' own edges)"}, {lit, withDocs, "a retrieved document"}} {
		if x.on && n > 0 && metrics.Ratio(x.k, n) < lowCoverage {
			c.notes = append(c.notes, fmt.Sprintf("setting %s: only %d of %d items had %s in the prompt; its row mostly measures the model without that knowledge, not the knowledge's help", setting, x.k, n, x.what))
		}
	}
	return c
}

// ungrounded counts greedy hypotheses whose KnowHD score from the i-th
// source was not computed (its claims or verdicts never read).
func ungrounded(rs []reading, i int) int {
	n := 0
	for j := range rs {
		if r := &rs[j]; r.greedy && r.ground(i).present && !r.ground(i).scored {
			n++
		}
	}
	return n
}

// Flag marks a record for the sample browser: a greedy hypothesis with a
// claim KnowHD found unsupported (or a wrong relation), judges' verdicts
// not read.
func (s *Suite) Flag(rec rundir.Record) (summary.Flags, error) {
	var f summary.Flags
	r, err := rundir.Decode[Result](rec)
	if err != nil || r.Greedy == nil {
		return f, err
	}
	f.Hallucinated = r.Greedy.Parsed && r.Gold != "" && r.Greedy.Label != r.Gold
	f.Unscored = !r.Greedy.Parsed
	for _, g := range r.Greedy.Grounding {
		if g == nil {
			continue
		}
		f.Unscored = f.Unscored || !g.Scored
		for _, c := range g.Claims {
			f.Hallucinated = f.Hallucinated || c.Scored && !c.Supported
		}
	}
	return f, nil
}

// unreadableNote says how unparseable hypotheses count (--unreadable).
func unreadableNote(wrong bool) string {
	const what = "An answer whose hypothesis names none or several of the task's labels (or negates its relation) is unparseable"
	if wrong {
		return what + ": counted in its column and, as the paper's measures are over every item, counted wrong in accuracy and as predicting no link in F1 (--unreadable wrong; --unreadable unscored leaves them out). Majority vote ties go to the label listed first in the question."
	}
	return what + ": unscored — counted in its column, left out of F1 and accuracy, never read as wrong or as \"no link\" (--unreadable unscored, halu's choice: the paper's measures are over every item). Majority vote ties go to the label listed first in the question."
}

// MethodDepartures are where KnowHD as halu runs it is not the authors'
// whatever the settings (engine.Suite.Departures); none without --knowhd.
func (s *Suite) MethodDepartures() []string {
	var out []string
	if s.cfg.ClaimNodes == "bm25" && s.cfg.knowhdUses("kg") {
		out = append(out, "claim → KG nodes: halu's node index is its own, not the authors' (their code, src/KGR.py, builds theirs from the published nodes.tsv: each node's mentions repeated in proportion to their counts, written '{Type} {mention} ({ConceptID})', under BM25); halu's BM25 (top 100 per entity, node_k) reads each node as its type, concept id and every name it was mentioned by, cut into lower-cased runs of letters and digits")
	}
	if s.cfg.KGContext == "chains" && s.cfg.agentsUse("kg") {
		out = append(out, "KG chains: the authors' rendering of a chain is not published; halu writes each chain on one line as its edges in the authors' edge sentence, joined by \"; \"")
	}
	return out
}

// OtherReading puts in place, in each claim check whose verifier reply the
// two readers read differently, the verdict of the reader that did not
// decide, and recomputes each groundedness (engine.Suite.OtherReading).
func (s *Suite) OtherReading(recs *rundir.Records) *rundir.Records {
	swap := func(h *Hypothesis) {
		for _, g := range h.Grounding {
			var entailed []bool
			for i, cc := range g.Claims {
				if cc.Other != nil || cc.OtherUnread {
					o := cc
					o.Scored, o.OtherUnread = !cc.OtherUnread, !cc.Scored
					o.Supported, o.Other = cc.Other != nil && *cc.Other, nil
					if cc.Scored {
						v := cc.Supported
						o.Other = &v
					}
					g.Claims[i] = o
				}
				if g.Claims[i].Scored {
					entailed = append(entailed, g.Claims[i].Supported)
				}
			}
			g.Groundedness, g.Scored = metrics.Groundedness(entailed)
		}
	}
	return rundir.MapRecords(recs, func(r *Result) {
		if r.Greedy != nil {
			swap(r.Greedy)
		}
		for i := range r.Candidates {
			swap(&r.Candidates[i])
		}
	})
}

// confidenceUnits are the confidence units of a group's readings, in item
// order.
func confidenceUnits(rs []reading) []summary.ConfidenceUnit {
	var units []summary.ConfidenceUnit
	for i := range rs {
		if r := &rs[i]; r.isUnit {
			u := summary.ConfidenceUnit{Correct: r.right()}
			if r.extra != nil {
				u.Scores = r.extra.scores
			}
			units = append(units, u)
		}
	}
	return units
}

// confidenceUnit is the confidence unit of a result with a gold relation,
// its greedy hypothesis checked against it — an unreadable one wrong when
// unreadWrong (--unreadable wrong, as accuracy counts it), else none —
// with the model-side confidence scores it has: its tokens' (--logprobs)
// and, with two or more candidates, the candidates' semantic entropy (both
// forms, ÷ ln k, k the candidates drawn) and their agreement with it.
// Relations are labels, so a semantic set is one label (exact equality, no
// entailment call); a candidate whose relation could not be read is a
// meaning of its own — it agrees with no other, and k stays the samples
// drawn — rather than dropped, which would make k, and so the bounds,
// differ between items.
func confidenceUnit(r *Result, unreadWrong bool) (summary.ConfidenceUnit, bool) {
	if r.Greedy == nil || r.Gold == "" || !r.Greedy.Parsed && !unreadWrong {
		return summary.ConfidenceUnit{}, false
	}
	u := summary.ConfidenceUnit{Correct: r.Greedy.Parsed && r.Greedy.Label == r.Gold, Scores: summary.TokenScores(r.Greedy.Confidence)}
	if cs := r.Candidates; len(cs) >= 2 {
		if u.Scores == nil {
			u.Scores = map[string]float64{}
		}
		same := func(i, j int) bool { return cs[i].Parsed && cs[j].Parsed && cs[i].Label == cs[j].Label }
		sets := metrics.SemanticSets(len(cs), same)
		lps := make([]float64, len(cs))
		for i, c := range cs {
			lps[i] = summary.MeanLogprob(c.Confidence)
		}
		u.Scores[summary.ScoreNegSemanticEntropy.Key] = -metrics.NormalizedSemanticEntropy(sets)
		if w := metrics.WeightedSemanticEntropy(sets, lps); !math.IsNaN(w) {
			u.Scores[summary.ScoreNegWeightedSemanticEntropy.Key] = -w
		}
		if r.Greedy.Parsed {
			// An unread hypothesis has no meaning to agree with: no
			// agreement score, not a zero.
			agree := 0
			for _, c := range cs {
				if c.Parsed && c.Label == r.Greedy.Label {
					agree++
				}
			}
			u.Scores[summary.ScoreAgreement.Key] = float64(agree) / float64(len(cs))
		}
	}
	return u, true
}
