package ideas

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"halu/localmodels"
	"halu/runner/engine"
)

// Panel is the judge panel (paper, "Judge LLM panel formation"): judges in
// the order given (best first), at most FamilyCap of the panel from one
// family, and for any idea model its own model and every model of the same
// base excluded.
type Panel struct {
	Members []string
	Notes   []string
	// CapNotApplied says why the organisation cap was not applied (the
	// panel too small to honour it), "" when it was or none was set: a
	// departure from the paper's panel rule every record carries.
	CapNotApplied string
	info          map[string]localmodels.ModelInfo
	same          map[string]map[string]bool // declared same-base pairs
	// declaredOnly ignores Ollama's metadata for same-base decisions.
	declaredOnly bool
	orgs         map[string]string // declared organisations
}

func (s *Suite) panelFor(ctx context.Context, e *engine.Engine) (*Panel, error) {
	s.panelMu.Lock()
	defer s.panelMu.Unlock()
	if s.panel != nil {
		return s.panel, nil
	}
	info := map[string]localmodels.ModelInfo{}
	for _, m := range append(append([]string(nil), s.cfg.Judges...), s.cfg.Models...) {
		mi, err := e.ModelInfo(ctx, m)
		if err != nil {
			return nil, err
		}
		info[m] = mi
	}
	p := FormPanel(s.cfg.Judges, info, s.cfg.FamilyCap, s.cfg.CriticsPerIdea, s.cfg.SameBase, s.cfg.Organisations)
	p.declaredOnly = s.cfg.SameBaseFrom == "declared"
	s.panel = p
	return p, nil
}

// Organisation is the organisation behind a model, for the panel's cap
// and same-base rule: a declared override (--organisation MODEL=ORG), else
// the shipped table (data/organisations.txt: the longest prefix of the
// model's base name), else Ollama's architecture family as a proxy — which
// puts every llama-architecture GGUF in one "organisation", so the summary
// notes each model found by that fallback.
func Organisation(name string, mi localmodels.ModelInfo, overrides map[string]string) (org string, known bool) {
	if o, ok := overrides[name]; ok {
		return o, true
	}
	if o, ok := overrides[localmodels.CanonicalName(name)]; ok {
		return o, true
	}
	base := strings.ToLower(name)
	if i := strings.LastIndex(base, "/"); i >= 0 {
		base = base[i+1:]
	}
	base, _, _ = strings.Cut(base, ":")
	best := ""
	for _, line := range lines("organisations.txt") {
		prefix, o, ok := strings.Cut(line, "\t")
		if ok && strings.HasPrefix(base, prefix) && len(prefix) > len(best) {
			best, org = prefix, o
		}
	}
	if best != "" {
		return org, true
	}
	if mi.Family != "" {
		return "family " + mi.Family, false
	}
	return base, false
}

// FormPanel builds the panel. cap is the largest share of one family
// (0.2: two of ten). When honouring it would leave fewer than need+1 judges
// (enough for `need` critics after excluding an idea's own model), the cap
// is not applied and a note says so.
func FormPanel(judges []string, info map[string]localmodels.ModelInfo, famCap float64, need int, sameBase [][]string, orgs map[string]string) *Panel {
	p := &Panel{info: info, same: map[string]map[string]bool{}, orgs: orgs}
	for _, group := range sameBase {
		for _, a := range group {
			for _, b := range group {
				if a != b {
					if p.same[a] == nil {
						p.same[a] = map[string]bool{}
					}
					p.same[a][b] = true
				}
			}
		}
	}
	seen := map[string]bool{}
	var uniq []string
	for _, j := range judges {
		if !seen[j] {
			seen[j] = true
			uniq = append(uniq, j)
		}
	}
	limit := int(math.Floor(famCap*float64(len(uniq)) + 1e-9))
	if limit < 1 {
		limit = 1
	}
	count := map[string]int{}
	var capped []string
	var dropped []string
	for _, j := range uniq {
		f, known := Organisation(j, info[j], orgs)
		if !known {
			p.Notes = append(p.Notes, fmt.Sprintf("organisation of judge %s unknown: its architecture family (%s) stands in for it; declare it with --organisation %s=ORG", j, f, j))
		}
		if famCap > 0 && count[f] >= limit {
			dropped = append(dropped, j)
			continue
		}
		count[f]++
		capped = append(capped, j)
	}
	if len(dropped) == 0 {
		p.Members = capped
	} else if len(capped) >= need+1 {
		p.Members = capped
		p.Notes = append(p.Notes, fmt.Sprintf("organisation cap %.0f%% (%d per organisation): left out %s", 100*famCap, limit, strings.Join(dropped, ", ")))
	} else {
		p.Members = uniq
		p.CapNotApplied = fmt.Sprintf("panel too small to honour the %.0f%% organisation cap (%d judges; honouring it leaves %d, fewer than %d critics + 1)",
			100*famCap, len(uniq), len(capped), need)
	}
	return p
}

// SameBase reports whether two models share a base: declared so, or the
// same family and parameter size in Ollama's metadata.
func (p *Panel) SameBase(a, b string) bool {
	if a == b || p.same[a][b] {
		return true
	}
	if p.declaredOnly {
		return false
	}
	ia, ok1 := p.info[a]
	ib, ok2 := p.info[b]
	if !ok1 || !ok2 || ia.Family == "" || ia.ParameterSize == "" {
		return false
	}
	// The same weights under two names are one model.
	if ia.Digest != "" && ia.Digest == ib.Digest {
		return true
	}
	// Same architecture and size from the same organisation: two builds
	// of one base (llama3.1:8b and llama3.1:8b-instruct-q8_0). Two
	// organisations' llama-architecture 8B models are not one base.
	oa, _ := Organisation(a, ia, p.orgs)
	ob, _ := Organisation(b, ib, p.orgs)
	return oa == ob && ia.Family == ib.Family && ia.ParameterSize == ib.ParameterSize
}

// Eligible lists the panel members that may judge model's ideas.
func (p *Panel) Eligible(model string) []string {
	var out []string
	for _, j := range p.Members {
		if !p.SameBase(j, model) {
			out = append(out, j)
		}
	}
	return out
}

// pickCritics samples n judges from eligible, preferring ones not yet used
// for this (keyword, model) pair (the authors' code never reuses a critic
// for a pair when it can avoid it).
func pickCritics(eligible []string, used map[string]bool, n int, rng *rand.Rand) []string {
	var fresh, old []string
	for _, j := range eligible {
		if used[j] {
			old = append(old, j)
		} else {
			fresh = append(fresh, j)
		}
	}
	sort.Strings(fresh)
	sort.Strings(old)
	rng.Shuffle(len(fresh), func(i, j int) { fresh[i], fresh[j] = fresh[j], fresh[i] })
	rng.Shuffle(len(old), func(i, j int) { old[i], old[j] = old[j], old[i] })
	out := append(fresh, old...)
	if len(out) > n {
		out = out[:n]
	}
	return out
}
