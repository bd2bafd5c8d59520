package intent

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"halu/metrics"
	"halu/runner/judging"
)

// Constraint is one intent constraint (§3.1): a short statement of a single
// requirement, with its priority class and the component it constrains.
type Constraint struct {
	Priority  string `json:"priority"`  // mandatory, important, optional
	Component string `json:"component"` // Location, Time, Subject, Action, Qualifiers, Quantity, Other
	Text      string `json:"text"`
}

// Components are the categories of Table 6 step 2a, plus Other.
var Components = []string{"Location", "Time", "Subject", "Action", "Qualifiers", "Quantity", "Other"}

// Mapping is the constraint set of one query (the mapping function of
// Definition 3.1, eq. 1). Clarification is true when the mapper's
// preliminary check found content missing and asked for it instead of
// listing constraints (Table 6, step 0).
type Mapping struct {
	Constraints   []Constraint `json:"constraints"`
	Clarification bool         `json:"clarification,omitempty"`
}

// Priority converts a constraint's class name.
func (c Constraint) priority() metrics.Priority {
	switch c.Priority {
	case "mandatory":
		return metrics.Mandatory
	case "important":
		return metrics.Important
	}
	return metrics.Optional
}

var (
	startRE   = regexp.MustCompile(`(?i)\bstart\s*:`)
	modalRE   = regexp.MustCompile(`(?i)\b(?:must|should)\b`)
	bulletRE  = regexp.MustCompile(`^(?:[-*•·>#]+|\d+[.)]|\(\d+\)|[a-z][.)])\s*`)
	headingRE = regexp.MustCompile(`(?i)^\[?(mandatory|important|optional)\]?(?:\s+constraints?)?(?:\s*\([^)]*\))?\s*:?\s*$`)
	inlineRE  = regexp.MustCompile(`(?i)^\[?(mandatory|important|optional)\]?(?:\s+constraints?)?(?:\s*\([^)]*\))?\s*[:\-–—]\s*(.+)$`)
	compRE    = regexp.MustCompile(`(?i)^\[?([a-z][a-z /]{1,24}?)\]?\s*(?::\s*)?(?:must|should)\b`)
	noneRE    = regexp.MustCompile(`(?i)^(none|n/a|-|no (?:\w+ )?constraints?)\.?$`)
	clarifyRE = regexp.MustCompile(`(?i)clarif|missing|not (?:been )?provided|please provide|could you (?:please )?(?:provide|share)|no (?:article|response|query)`)
)

// ParseMapping reads a constraint-mapping reply in Table 6's format: the
// final listing after "START:", one constraint per line as
// "[Priority Level]: [Component] must/should [condition]" or grouped under
// "Mandatory:" / "Important:" / "Optional:" headings. It tolerates
// markdown, bullets, numbering and bracketed placeholders. Under a
// heading, only lines in the template's form (with "must" or "should") are
// constraints: a remark after the listing ("These cover the query.") is
// not one, and a remark between constraints makes the listing ambiguous
// (an error, never a guess). A reply whose
// preliminary check asked for missing content instead of listing
// constraints is a Clarification — acceptable only where content was
// withheld on purpose (allowClarification); otherwise, and for a listing
// with no constraint, it is an error (the judge contract retries it).
func ParseMapping(reply string, allowClarification bool) (Mapping, error) {
	loc := startRE.FindAllStringIndex(reply, -1)
	if len(loc) == 0 {
		if allowClarification && clarifyRE.MatchString(reply) {
			return Mapping{Clarification: true}, nil
		}
		return Mapping{}, errors.New(`no "START:" listing`)
	}
	listing := reply[loc[len(loc)-1][1]:]
	var out []Constraint
	seen := map[string]bool{}
	current, remark := "", ""
	for _, line := range strings.Split(listing, "\n") {
		l := cleanLine(line)
		if l == "" {
			continue
		}
		if m := headingRE.FindStringSubmatch(l); m != nil {
			current = strings.ToLower(m[1])
			continue
		}
		prio, text := current, l
		if m := inlineRE.FindStringSubmatch(l); m != nil {
			prio, text = strings.ToLower(m[1]), cleanLine(m[2])
		} else if prio != "" && !modalRE.MatchString(text) && !noneRE.MatchString(text) {
			remark = text // a remark, not a constraint
			continue
		}
		if prio == "" || noneRE.MatchString(text) {
			continue
		}
		if remark != "" && len(out) > 0 {
			return Mapping{}, fmt.Errorf("a remark inside the listing (%q): not a constraint in the template's form", remark)
		}
		remark = ""
		c := Constraint{Priority: prio, Component: component(text), Text: text}
		k := prio + "\x00" + normalize(text)
		if !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		if allowClarification && clarifyRE.MatchString(reply) {
			return Mapping{Clarification: true}, nil
		}
		return Mapping{}, errors.New(`no constraint after "START:" (want lines like "Mandatory: Subject must …")`)
	}
	return Mapping{Constraints: out}, nil
}

// lineMarks are the emphasis marks cleanLine drops.
var lineMarks = strings.NewReplacer("**", "", "__", "", "`", "")

func cleanLine(s string) string {
	s = strings.TrimSpace(lineMarks.Replace(s))
	for {
		t := strings.TrimSpace(bulletRE.ReplaceAllString(s, ""))
		if t == s {
			break
		}
		s = t
	}
	return strings.Trim(s, `"`)
}

// component reads the [Component] of "[Component] must/should …".
func component(text string) string {
	m := compRE.FindStringSubmatch(text)
	if m == nil {
		return "Other"
	}
	w := strings.ToLower(strings.TrimSpace(m[1]))
	for _, c := range Components {
		lc := strings.ToLower(c)
		if w == lc || strings.TrimSuffix(lc, "s") == w || strings.HasPrefix(w, lc) {
			return c
		}
	}
	if w == "qualifier" {
		return "Qualifiers"
	}
	return "Other"
}

func normalize(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	return strings.TrimRight(s, ".;, ")
}

// mappingSchema is the structured form of Table 6's final listing, used
// when the judge format is json: the same content (constraints with
// priority, component and text, or a request for missing content) in a
// shape a grammar can enforce. The list is capped at maxMapped, above the
// most a query has by the paper's count (Appendix G.1: 2–6 mandatory, 0–3
// important, 0–2 optional): without a cap, a judge that never closes the
// array under the grammar loops until its reply cap. Mappings that reach
// it are counted in the summary.
// maxMapped is the structured mapping's constraint cap.
const maxMapped = 12

var mappingSchema = `{"type":"object","properties":{` +
	`"constraints":{"type":"array","maxItems":` + strconv.Itoa(maxMapped) + `,"items":{"type":"object","properties":{` +
	`"priority":{"type":"string","enum":["mandatory","important","optional"]},` +
	`"component":{"type":"string","enum":["Location","Time","Subject","Action","Qualifiers","Quantity","Other"]},` +
	`"text":{"type":"string","minLength":3,"maxLength":160}},"required":["priority","component","text"]}},` +
	`"clarification":{"type":"boolean"}},"required":["constraints","clarification"]}`

// ParseMappingJSON reads a structured mapping reply. Where content was
// withheld (allowClarification), a request for it is a Clarification
// mapping; elsewhere the query lacks nothing, so listed constraints are
// read whatever the flag says, and a reply with none is an error.
func ParseMappingJSON(reply string, allowClarification bool) (Mapping, error) {
	var raw struct {
		Constraints   []Constraint `json:"constraints"`
		Clarification bool         `json:"clarification"`
	}
	if err := judging.DecodeJSON(reply, &raw); err != nil {
		return Mapping{}, err
	}
	if raw.Clarification && allowClarification {
		return Mapping{Clarification: true}, nil
	}
	var out []Constraint
	seen := map[string]bool{}
	for i, c := range raw.Constraints {
		c.Priority = strings.ToLower(strings.TrimSpace(c.Priority))
		c.Text = strings.TrimSpace(c.Text)
		if c.Priority != "mandatory" && c.Priority != "important" && c.Priority != "optional" {
			return Mapping{}, fmt.Errorf("constraint %d: priority %q", i+1, c.Priority)
		}
		known := false
		for _, k := range Components {
			known = known || k == c.Component
		}
		if !known {
			c.Component = component(c.Text)
		}
		k := c.Priority + "\x00" + normalize(c.Text)
		if c.Text == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, c)
	}
	if len(out) == 0 {
		if raw.Clarification {
			return Mapping{}, errors.New("asked for clarification, but the query lacks nothing")
		}
		return Mapping{}, errors.New("no constraint and no clarification")
	}
	return Mapping{Constraints: out}, nil
}

// MajorityMapping picks, among the mapping samples that parsed (nil ones
// failed and abstain), the constraint set that occurs most often — the
// paper's self-consistency suggestion (Appendix D.2.1). Sets are compared
// as sets of (priority, normalised text); a tie goes to the earliest
// sample. It returns the chosen sample's index, or -1 when none parsed.
func MajorityMapping(samples []*Mapping) int {
	count := map[string]int{}
	keys := make([]string, len(samples))
	for i, m := range samples {
		if m == nil {
			continue
		}
		var ks []string
		for _, c := range m.Constraints {
			ks = append(ks, c.Priority+"\x00"+normalize(c.Text))
		}
		sort.Strings(ks)
		keys[i] = fmt.Sprintf("%v\x01%s", m.Clarification, strings.Join(ks, "\x01"))
		count[keys[i]]++
	}
	best := -1
	for i, m := range samples {
		if m == nil {
			continue
		}
		if best < 0 || count[keys[i]] > count[keys[best]] {
			best = i
		}
	}
	return best
}

// ListConstraints renders a constraint set for the scoring prompt, numbered
// from 1 so structured verdicts can refer to them.
func ListConstraints(cs []Constraint) string {
	var b strings.Builder
	for i, c := range cs {
		fmt.Fprintf(&b, "[%d] %s: %s\n", i+1, titleCase(c.Priority), c.Text)
	}
	return strings.TrimRight(b.String(), "\n")
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// ScoreVerdicts is the scoring judge's structured output: one satisfaction
// verdict s(c, r) ∈ {0, 1} per constraint (§4.2), keyed "constraint_i" for
// constraint i (1-based). Keys rather than a list let the schema demand
// exactly one verdict for each constraint.
type ScoreVerdicts map[string]bool

func verdictKey(i int) string { return "constraint_" + strconv.Itoa(i) }

// scoreSchema constrains the scoring reply to one boolean per constraint.
func scoreSchema(n int) string {
	props := make([]string, n)
	req := make([]string, n)
	for i := range props {
		props[i] = fmt.Sprintf(`"%s":{"type":"boolean"}`, verdictKey(i+1))
		req[i] = `"` + verdictKey(i+1) + `"`
	}
	return fmt.Sprintf(`{"type":"object","properties":{%s},"required":[%s]}`, strings.Join(props, ","), strings.Join(req, ","))
}

var satisfiedValue = `(yes|no|true|false|satisfied|not\s+satisfied|unsatisfied|met|not\s+met)\b`

// ParseScoreText is the text reader of a scoring reply whose JSON was not
// had: "Constraint 1: Yes", "constraint_2: not satisfied", one per
// constraint, each stated once (or consistently).
func ParseScoreText(reply string, n int) ([]bool, error) {
	s := judging.Plain(reply)
	out := make([]bool, n)
	for i := range out {
		l := judging.NewLabelled(fmt.Sprintf("constraint %d", i+1), fmt.Sprintf(`constraint[\s_]*%d`, i+1), satisfiedValue)
		v, err := l.One(s)
		if err != nil {
			return nil, err
		}
		switch strings.Join(strings.Fields(strings.ToLower(v)), " ") {
		case "yes", "true", "satisfied", "met":
			out[i] = true
		}
	}
	return out, nil
}

// Satisfied returns the verdicts in constraint order; a missing or unknown
// key is an error.
func (v ScoreVerdicts) Satisfied(n int) ([]bool, error) {
	out := make([]bool, n)
	for i := range out {
		x, ok := v[verdictKey(i+1)]
		if !ok {
			return nil, fmt.Errorf("no verdict for constraint %d", i+1)
		}
		out[i] = x
	}
	if len(v) != n {
		for k := range v {
			if j, err := strconv.Atoi(strings.TrimPrefix(k, "constraint_")); err != nil || j < 1 || j > n {
				return nil, fmt.Errorf("verdict %q: there are %d constraints", k, n)
			}
		}
	}
	return out, nil
}

// Ratios are Table 7's text output: satisfied/total per priority class.
type Ratios map[string][2]int

var (
	ratioRE = regexp.MustCompile(`(?i)\b(mandatory|important|optional)\b[^0-9\n]{0,30}?(\d+)\s*/\s*(\d+)`)
	// ratioLineRE is a line that is only a ratio ("Mandatory: 1/2").
	ratioLineRE = regexp.MustCompile(`(?i)^\[?(?:mandatory|important|optional)\]?(?:\s+constraints?)?\s*[:\-–—]?\s*\d+\s*/\s*\d+\.?$`)
)

// ParseRatios reads Table 7's final listing ("[Priority Level]: X/Y" after
// "START:"). Each class that has constraints must appear with Y equal to
// its size and 0 ≤ X ≤ Y; a class with none may be left out or given 0/0.
// Without "START:", only a reply that is nothing but the listing is read:
// ratios in reasoning ("mandatory looks 1/1 at first") are not a verdict.
func ParseRatios(reply string, cs []Constraint) (Ratios, error) {
	want := map[string]int{}
	for _, c := range cs {
		want[c.Priority]++
	}
	s := reply
	if loc := startRE.FindAllStringIndex(reply, -1); len(loc) > 0 {
		s = reply[loc[len(loc)-1][1]:]
	} else {
		for _, l := range strings.Split(reply, "\n") {
			if l = cleanLine(l); l != "" && !ratioLineRE.MatchString(l) {
				return nil, fmt.Errorf(`no "START:" listing, and %q is not a ratio line`, l)
			}
		}
	}
	got := Ratios{}
	for _, m := range ratioRE.FindAllStringSubmatch(s, -1) {
		p := strings.ToLower(m[1])
		x, _ := strconv.Atoi(m[2])
		y, _ := strconv.Atoi(m[3])
		if prev, ok := got[p]; ok && prev != [2]int{x, y} {
			return nil, judging.TwoValues("two different %s ratios", p)
		}
		if y != want[p] {
			return nil, fmt.Errorf("%s: %d/%d, but there are %d %s constraints", p, x, y, want[p], p)
		}
		if x > y {
			return nil, fmt.Errorf("%s: %d/%d satisfies more than there are", p, x, y)
		}
		got[p] = [2]int{x, y}
	}
	for p, n := range want {
		if _, ok := got[p]; !ok && n > 0 {
			return nil, fmt.Errorf("no %s ratio", p)
		}
	}
	return got, nil
}

// ScoreFromRatios is eq. 5–7 from per-class counts: the satisfied weight of
// a class is its weight times the number satisfied.
func ScoreFromRatios(r Ratios, w metrics.Weights) (float64, error) {
	var vs []metrics.Verdict
	for p, xy := range r {
		pr := Constraint{Priority: p}.priority()
		for i := 0; i < xy[1]; i++ {
			vs = append(vs, metrics.Verdict{Priority: pr, Satisfied: i < xy[0]})
		}
	}
	return metrics.ConstraintScore(vs, w)
}
