package hypo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"

	"halu/index"
	"halu/index/kg"
	"halu/localmodels"
	"halu/metrics"
	"halu/runner/engine"
	"halu/runner/judging"
)

// KnowHD (the paper's §3.3): a hypothesis split into claims, each claim's entities found in the knowledge graph and the literature, and a verifier's groundness (0/1) of each claim read; groundedness is the share of grounded claims.

// EntitySchema is the structured output of entity extraction.
const EntitySchema = `{"type":"object","properties":{"entities":{"type":"array","items":{"type":"string"}}},"required":["entities"]}`

// ClaimSchema is the structured output of claim decomposition.
const ClaimSchema = `{"type":"object","properties":{"claims":{"type":"array","items":{"type":"string"}}},"required":["claims"]}`

type entityList struct {
	Entities []string `json:"entities"`
}

type claimList struct {
	Claims []string `json:"claims"`
}

// Groundness is the KnowHD verifier's verdict on one claim (0 or 1).
type Groundness struct {
	Groundness *int `json:"groundness"`
}

// Validate requires 0 or 1.
func (g *Groundness) Validate() error {
	if g.Groundness == nil || (*g.Groundness != 0 && *g.Groundness != 1) {
		return errors.New("groundness must be 0 or 1")
	}
	return nil
}

var (
	groundLabel = judging.NewLabelled("groundness", `groundn?ess|groundedness`, `([01](?:[.,]\d+)?\b|zero\b|one\b)`).Sole()
	// groundIs is groundness stated in prose ("so groundness is 0"): it
	// must agree with the labelled statement.
	groundIs = regexp.MustCompile(`(?i)\bground(?:n?ess|edness)\s+(?:is|would be|should be|of)\s+["']?([01](?:[.,]\d+)?)\b`)
	listItem = regexp.MustCompile(`^\s*(?:[-*•]|\d+[.)])\s+(.+)$`)
)

// ParseGroundness is the text reader of a verifier reply whose JSON was not
// had: a reply that is only 0 or 1 (or whose first line is), or a labelled
// "groundness: 1" (also as a Python-style dict); every statement agrees. The authors' code counts a claim grounded when the
// character "1" appears anywhere in the reply; halu reads only the stated
// value.
func ParseGroundness(reply string) (Groundness, error) {
	s := strings.TrimSpace(judging.Plain(reply))
	if t := strings.Trim(s, " .\"'"); t == "0" || t == "1" {
		n := int(t[0] - '0')
		return Groundness{Groundness: &n}, nil
	}
	vals, _ := groundLabel.All(s)
	if first, _, _ := strings.Cut(s, "\n"); strings.Trim(first, " .\"'") == "0" || strings.Trim(first, " .\"'") == "1" {
		vals = append(vals, strings.Trim(first, " .\"'")) // "1" on a line of its own, the reasoning after it
	}
	for _, m := range groundIs.FindAllStringSubmatch(s, -1) {
		vals = append(vals, m[1])
	}
	vals = append(vals, groundLabel.Again(s)...)
	for i, v := range vals {
		switch strings.ToLower(v) {
		case "zero":
			vals[i] = "0"
		case "one":
			vals[i] = "1"
		}
	}
	if len(vals) == 0 {
		return Groundness{}, errors.New("no groundness stated")
	}
	for _, v := range vals {
		if v != "0" && v != "1" {
			return Groundness{}, fmt.Errorf("groundness %s is not 0 or 1", v)
		}
		if v != vals[0] {
			return Groundness{}, judging.TwoValues("two different groundness values (%s, %s)", vals[0], v)
		}
	}
	n := int(vals[0][0] - '0')
	return Groundness{Groundness: &n}, nil
}

// ParseList is the text reader of a list the verifier was asked to give as
// JSON (claims, entities): its bulleted or numbered lines, in order.
func ParseList(reply string) ([]string, error) {
	var out []string
	for _, l := range strings.Split(reply, "\n") {
		if m := listItem.FindStringSubmatch(l); m != nil {
			out = append(out, strings.TrimSpace(strings.ReplaceAll(m[1], "**", "")))
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no bulleted or numbered list")
	}
	return out, nil
}

// ParseGroundnessPaper is the authors' reading of a support verdict: the
// claim is grounded when the character "1" appears anywhere in the reply
// (their code), else not. It reads every reply.
func ParseGroundnessPaper(reply string) (Groundness, error) {
	n := 0
	if strings.Contains(reply, "1") {
		n = 1
	}
	return Groundness{Groundness: &n}, nil
}

// GroundSchema is the verifier's structured output.
const GroundSchema = `{"type":"object","properties":{"groundness":{"type":"integer","enum":[0,1]}},"required":["groundness"]}`

// unreadWrong: an unreadable hypothesis counts as wrong (the paper).
func (c *Config) unreadWrong() bool { return c.Unreadable != "unscored" }

// VerifierSelf as --verifier lets each generator check its own claims
// (the authors fix one verifier for every generator; a run that does not
// says so in its notes).
const VerifierSelf = "self"

func (s *Suite) verifier(model string) string {
	if s.cfg.Verifier != "" && s.cfg.Verifier != VerifierSelf {
		return s.cfg.Verifier
	}
	return model
}

func (s *Suite) entities(ctx context.Context, c *engine.Calls, model, user string) ([]string, error) {
	v, ok, err := judging.JudgeAs(ctx, c, "entities", localmodels.ChatRequest{
		Model: model, Messages: []localmodels.Message{{Role: "user", Content: user}},
		Options: localmodels.Options{Temperature: localmodels.Float(0), Seed: localmodels.Int(s.cfg.Seed), NumPredict: localmodels.Int(s.cfg.VerifierMaxTokens)},
	}, json.RawMessage(EntitySchema), func(raw string) (entityList, error) {
		l, err := ParseList(raw)
		return entityList{Entities: l}, err
	})
	if err != nil || !ok {
		return nil, err
	}
	return v.Entities, nil
}

var parenID = regexp.MustCompile(`\(([^()]+)\)\s*$`)

// nodes finds the graph nodes entity strings name. The authors' format is
// "entity_type entity_name (entity_id if presented)": an id in parentheses is
// tried first (with the type), then the name without the type word.
func (s *Suite) nodes(ents []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, e := range ents {
		e = strings.TrimSpace(e)
		typ, rest, _ := strings.Cut(e, " ")
		if m := parenID.FindStringSubmatch(e); m != nil {
			id := kg.NormalizeID(typ, m[1])
			if _, ok := s.kg.Node(id); ok {
				add(id)
				continue
			}
			for _, n := range s.kg.Lookup(m[1]) {
				add(n.ID)
			}
			rest = strings.TrimSpace(parenID.ReplaceAllString(rest, ""))
		}
		found := false
		for _, cand := range []string{rest, e} {
			if cand == "" || found {
				continue
			}
			for _, n := range s.kg.Lookup(cand) {
				add(n.ID)
				found = true
			}
		}
	}
	return out
}

// claimNodes are the graph nodes of a claim's extracted entities (eq. 2's
// V(p)): under --claim-nodes bm25 (the authors' code) the top node_k = 100
// nodes of each entity string by BM25, under exact the nodes its id or
// names name (nodes).
func (s *Suite) claimNodes(ents []string) ([]string, error) {
	if s.cfg.ClaimNodes != "bm25" {
		return s.nodes(ents), nil
	}
	var out []string
	seen := map[string]bool{}
	for _, e := range ents {
		hits, err := s.kg.SearchNodes(e, nodeK, s.bm25())
		if err != nil {
			return nil, err
		}
		for _, h := range hits {
			if !seen[h.ID] {
				seen[h.ID] = true
				out = append(out, h.ID)
			}
		}
	}
	return out, nil
}

// EdgeSentence renders an edge as the authors do:
// {x type} {x mention} ({x id}) has the relation "{relation}" with {y type} {y mention} ({y id}).
func EdgeSentence(kg *kg.KG, e kg.Edge) string {
	part := func(id string) (string, string, string) {
		typ, cid, _ := strings.Cut(id, "|")
		name := cid
		if kg != nil {
			if n, ok := kg.Node(id); ok && n.Name != "" {
				name = n.Name
			}
		}
		return typ, name, cid
	}
	xt, xn, xi := part(e.Head)
	yt, yn, yi := part(e.Tail)
	return fmt.Sprintf("%s %s (%s) has the relation %q with %s %s (%s)", xt, xn, xi, e.Relation, yt, yn, yi)
}

// ChainSentence renders a chain on one line: its edges' sentences
// (EdgeSentence) joined by "; ". The authors' code that writes a chain is
// not published; this rendering is halu's (named in every run that shows
// chains).
func ChainSentence(g *kg.KG, c kg.Chain) string {
	parts := make([]string, len(c.Edges))
	for i, e := range c.Edges {
		parts[i] = EdgeSentence(g, e)
	}
	return strings.Join(parts, "; ")
}

// kgKnowledge renders the KG knowledge shown for nodes (the authors'
// max_n_edges 32, max_depth 2), at most 32 lines: under --kg-context chains
// (the authors'), the chains of at most 2 edges followed x → y from any
// node to any other, one per line; under edges, the edges of the chains
// walked either way between any two nodes, each edge once. When no chain
// links any two, the nodes' own edges (the authors' per-node fallback).
// Chains and fallback edges are taken in a random order seeded by the
// run's seed and key (kg-chains sampled, as the authors' code) or by
// supporting articles (ranked). It returns the lines and their source
// ("chains", "nodes", or "" for none).
func (s *Suite) kgKnowledge(nodes []string, key string) ([]string, string, error) {
	rng := rand.New(rand.NewPCG(uint64(s.cfg.Seed), fnv64(key)))
	limit := maxKGEdges
	if s.cfg.KGChains == "sampled" {
		limit = 0 // all, to sample from
	}
	directed := s.cfg.KGContext == "chains"
	var chains []kg.Chain
	for i := range nodes {
		for j := range nodes {
			var cs []kg.Chain
			var err error
			switch {
			case directed && i != j:
				cs, err = s.kg.ForwardChains(nodes[i], nodes[j], maxHops, limit, s.cfg.BelowPMID)
			case !directed && i < j:
				cs, err = s.kg.Chains(nodes[i], nodes[j], maxHops, limit, s.cfg.BelowPMID)
			}
			if err != nil {
				return nil, "", err
			}
			chains = append(chains, cs...)
		}
	}
	var out []string
	seen := map[string]bool{}
	addLine := func(line string) {
		if !seen[line] && len(out) < maxKGEdges {
			seen[line] = true
			out = append(out, line)
		}
	}
	add := func(es []kg.Edge) {
		for _, e := range es {
			addLine(EdgeSentence(s.kg, e))
		}
	}
	if len(chains) > 0 {
		if s.cfg.KGChains == "sampled" {
			rng.Shuffle(len(chains), func(a, b int) { chains[a], chains[b] = chains[b], chains[a] })
		} else {
			sort.SliceStable(chains, func(a, b int) bool { return chains[a].Support > chains[b].Support })
		}
		for _, ch := range chains {
			if directed {
				addLine(ChainSentence(s.kg, ch))
			} else {
				add(ch.Edges)
			}
		}
		return out, "chains", nil
	}
	var own []kg.Edge
	for _, n := range nodes {
		es, err := s.kg.Incident(n, s.cfg.BelowPMID, 0)
		if err != nil {
			return nil, "", err
		}
		own = append(own, es...)
	}
	if len(own) == 0 {
		return nil, "", nil
	}
	if s.cfg.KGChains == "sampled" {
		rng.Shuffle(len(own), func(a, b int) { own[a], own[b] = own[b], own[a] })
	} else {
		sort.SliceStable(own, func(a, b int) bool { return len(own[a].PMIDs) > len(own[b].PMIDs) })
	}
	add(own)
	return out, "nodes", nil
}

func fnv64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

var (
	sentenceRE = regexp.MustCompile(`[^.!?\n]+[.!?]?`)
	jsonFence  = regexp.MustCompile("(?s)```json\\s*(\\{.*?\\})\\s*```")
)

// SplitLines is KnowHD's fallback in the authors' code when the claim
// list cannot be had: the statement's lines, blank ones left out.
func SplitLines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// SplitSentences is halu's KnowHD fallback when the claim JSON cannot be had:
// the statement's sentences (at least 3 words each) as claims.
func SplitSentences(text string) []string {
	text = jsonFence.ReplaceAllString(text, " ")
	var out []string
	for _, m := range sentenceRE.FindAllString(text, -1) {
		m = strings.TrimSpace(strings.Trim(strings.TrimSpace(m), "#*-"))
		if len(strings.Fields(m)) >= 3 {
			out = append(out, m)
		}
	}
	return out
}

// knowHD computes the groundedness of one hypothesis output (its reasoning
// and structured hypothesis) against one knowledge source.
func (s *Suite) knowHD(ctx context.Context, c *engine.Calls, model, output, src string) (*Grounding, error) {
	vm := s.verifier(model)
	g := &Grounding{}
	v, ok, err := judging.JudgeAs(ctx, c, "decompose", localmodels.ChatRequest{
		Model: vm, Messages: []localmodels.Message{{Role: "user", Content: fill(s.prompts.Decompose, map[string]string{"claims": output})}},
		Options: localmodels.Options{Temperature: localmodels.Float(0), Seed: localmodels.Int(s.cfg.Seed), NumPredict: localmodels.Int(s.cfg.VerifierMaxTokens)},
	}, json.RawMessage(ClaimSchema), func(raw string) (claimList, error) {
		l, err := ParseList(raw)
		return claimList{Claims: l}, err
	})
	if err != nil {
		return nil, err
	}
	claims := v.Claims
	if !ok || len(claims) == 0 {
		claims, g.ClaimsFallback = SplitSentences(output), true
		if s.cfg.ClaimFallback == "lines" {
			claims = SplitLines(output)
		}
	}
	if c.Planning() && len(claims) == 0 {
		// A dry run has no claims: plan the per-claim calls at the cap,
		// an upper bound for calls not yet cached (the plan says so).
		c.PlanAssumes("hypo: per-claim calls (verify; entities for KG sources) are planned at %d claims per statement, the authors' cap; the run makes one per claim the decomposer lists", maxClaims)
		claims = make([]string, maxClaims)
		for i := range claims {
			claims[i] = fmt.Sprintf("planned claim %d", i+1)
		}
	}
	if len(claims) > maxClaims {
		claims = claims[len(claims)-maxClaims:] // the authors' code keeps the last ten
	}
	var entailed []bool
	var retrieved [][]index.Hit // every claim's documents, from one snapshot of the index
	if strings.Contains(src, "lit") {
		if retrieved, err = s.lit.SearchBatch(ctx, claims, index.SearchOptions{K: claimK, MinScore: s.cfg.MinScore, BelowPMID: s.cfg.BelowPMID, BM25: s.bm25()}); err != nil {
			return nil, err
		}
	}
	for i, claim := range claims {
		cc := ClaimCheck{Claim: claim}
		vals := map[string]string{"claim": claim}
		var hits []index.Hit
		if retrieved != nil {
			hits = retrieved[i]
		}
		var lines []string
		if strings.Contains(src, "kg") {
			ents, err := s.entities(ctx, c, vm, fill(s.prompts.ClaimEntity, map[string]string{"claim": claim}))
			if err != nil {
				return nil, err
			}
			nodes, err := s.claimNodes(ents)
			if err != nil {
				return nil, err
			}
			edges, err := s.kg.EdgesAmong(nodes, s.cfg.BelowPMID)
			if err != nil {
				return nil, err
			}
			if len(edges) > edgeK {
				rng := rand.New(rand.NewPCG(uint64(s.cfg.Seed), uint64(i)))
				rng.Shuffle(len(edges), func(a, b int) { edges[a], edges[b] = edges[b], edges[a] })
				edges = edges[:edgeK]
			}
			for _, e := range edges {
				lines = append(lines, EdgeSentence(s.kg, e))
			}
		}
		replyCap, schema := verifyMaxTokens, json.RawMessage(GroundSchema)
		if s.cfg.VerdictFormat == "text" {
			replyCap, schema = s.cfg.VerifierMaxTokens, nil
		}
		lines, hits, fit, err := s.fitKnowledge(ctx, c, vm, []string{s.prompts.VerifySys[src]}, s.prompts.Verify[src], vals,
			"edge_text", lines, "document_text", hits, replyCap)
		if err != nil {
			return nil, err
		}
		cc.Edges, cc.Fit = len(lines), fit
		for _, h := range hits {
			cc.PMIDs = append(cc.PMIDs, h.PMID)
		}
		gv, ok, err := judging.JudgeWith(ctx, c, "verify", localmodels.ChatRequest{
			Model: vm,
			Messages: []localmodels.Message{{Role: "system", Content: s.prompts.VerifySys[src]},
				{Role: "user", Content: fill(s.prompts.Verify[src], vals)}},
			Options: localmodels.Options{Temperature: localmodels.Float(0), Seed: localmodels.Int(s.cfg.Seed), NumPredict: localmodels.Int(replyCap)},
		}, schema, func() judging.Reader[Groundness] {
			r := GroundnessReader(claim)
			r.Subject = model
			r.Other = func(o Groundness, unread bool) {
				if cc.OtherUnread = unread; !unread && o.Groundness != nil {
					v := *o.Groundness == 1
					cc.Other = &v
				}
			}
			return r
		}())
		if err != nil {
			return nil, err
		}
		if ok && gv.Groundness != nil && (*gv.Groundness == 0 || *gv.Groundness == 1) {
			cc.Scored, cc.Supported = true, *gv.Groundness == 1
			entailed = append(entailed, cc.Supported)
		}
		g.Claims = append(g.Claims, cc)
	}
	g.Groundedness, g.Scored = metrics.Groundedness(entailed)
	return g, nil
}

// GroundnessReader is how a verifier's reply about claim is read (halu's
// reader, the authors' rule beside), in a run and in the reply corpus.
func GroundnessReader(claim string) judging.Reader[Groundness] {
	return judging.Reader[Groundness]{Text: ParseGroundness, Paper: ParseGroundnessPaper, Quoted: []string{claim}, Check: true, Schema: json.RawMessage(GroundSchema)}
}
