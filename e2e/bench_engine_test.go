//go:build e2e

package e2e

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"halu/localmodels"
	"halu/localmodels/fakeollama"
	"halu/runner/engine"
	"halu/runner/rundir"
)

// TestBenchEngine is `make bench-engine`: halu's engine measured side by
// side with what a lab would otherwise use, on private real servers (the
// cached rerun on an in-process fake, which then stops). It prints one
// line per figure ("name: value", "–" with the reason when a figure was
// not measured) and the counts behind each, for anyone to re-measure.
// Ratios come from interleaved pairs in one run: the machines are noisy.
func TestBenchEngine(t *testing.T) {
	if os.Getenv("HALU_BENCH_ENGINE") == "" {
		t.Skip("run by make bench-engine")
	}
	// Subtests, so that one figure can be re-measured alone
	// (-run 'TestBenchEngine/pool').
	t.Run("cached", benchCachedRerun)
	t.Run("pool", benchPool)
	t.Run("inflight", benchItemsInFlight)
	if os.Getenv("HALU_BENCH_LARGE") != "" {
		t.Run("inflight-1000", benchItemsInFlightLarge)
	}
	t.Run("promptfoo", func(t *testing.T) { benchPromptfoo(t, "promptfoo wall ratio") })
	// A server whose memory holds one of the two models at a time (a GPU
	// holding the judge or the generator, not both), as Ollama does with
	// OLLAMA_MAX_LOADED_MODELS=1: every change of model is a load.
	t.Run("promptfoo-one-model", func(t *testing.T) {
		benchPromptfoo(t, "promptfoo wall ratio, server holding one model at a time", "OLLAMA_MAX_LOADED_MODELS=1")
	})
	t.Run("slots", benchSlots)
}

// workHalu runs a halu command whose work the bench times, not its
// readings: it must finish every item (exit 0), or finish them all and
// measure nothing (exit 4: the tiny judges' replies are read by no
// reader) — the same calls either way.
func workHalu(t *testing.T, host string, args ...string) result {
	t.Helper()
	r := halu(t, host, args...)
	if r.code != 0 && !measuredNothing(r) {
		t.Fatalf("halu %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// measuredNothing says a halu command finished its work and measured
// nothing (exit 4; a reference build older than that exit code, 1), as
// a run of the tiny judges does: their replies are read by no reader.
func measuredNothing(r result) bool {
	return (r.code == 4 || r.code == 1) && strings.Contains(r.stderr, "nothing measured")
}

// figures, when not nil, keeps each figure's value as figure prints it
// (make bench-compare reads them back).
var figures map[string]string

// figure prints a figure line and its detail lines.
func figure(name, value string, detail ...string) {
	if figures != nil {
		figures[name] = value
	}
	fmt.Printf("%s: %s\n", name, value)
	for _, d := range detail {
		fmt.Printf("    %s\n", d)
	}
}

// hypoFake is an instant in-process fake server of gens generators
// (g1 … gN, each a model of its own) that answer every TruthHypo question
// with one relation, and the generators' names.
func hypoFake(gens int) (*fakeollama.Server, []string) {
	var models []fakeollama.Model
	var names []string
	for i := 1; i <= gens; i++ {
		models = append(models, fakeollama.Model{Name: fmt.Sprintf("g%d:latest", i), Digest: fmt.Sprintf("d%d", i), ParameterCount: 1e9})
		names = append(names, fmt.Sprintf("g%d", i))
	}
	return fakeollama.New(func(fakeollama.ChatRequest) fakeollama.Reply {
		return fakeollama.Reply{Content: "Reasoning.\n```json\n{\"proposed_hypothesis\": \"positive_correlate\"}\n```"}
	}, models...), names
}

// benchCachedRerun: TruthHypo's 2,024 items for five generators (10,120
// items, one generation each) answered once by an in-process fake server,
// which then stops; the same command rerun from the cache with no server
// running, timed whole (process start to exit).
func benchCachedRerun(t *testing.T) {
	fake, names := hypoFake(5)
	host := fake.Host()
	work := t.TempDir()
	args := []string{"run", "hypo", "--models", strings.Join(names, ","), "--setting", "parametric", "--candidates", "0", "--cache", filepath.Join(work, "cache")}
	start := time.Now()
	mustHalu(t, host, append(args, "--out", filepath.Join(work, "first"))...)
	first := time.Since(start)
	fake.Close()
	var walls, cpus []time.Duration
	var items int
	for i := 0; i < 3; i++ {
		out := filepath.Join(work, fmt.Sprintf("rerun%d", i))
		start = time.Now()
		r := mustHalu(t, host, append(args, "--out", out)...)
		walls = append(walls, time.Since(start))
		cpus = append(cpus, r.cpu)
		m, recs, err := engine.ReadRun(out)
		if err != nil || !m.Server.Offline || m.Counts.ModelCalls != 0 {
			t.Fatalf("rerun %d: %v, offline %v, %d calls", i, err, m.Server.Offline, m.Counts.ModelCalls)
		}
		items = len(recs)
	}
	med := median(walls)
	figure("cached rerun 10000 s", fmt.Sprintf("%.3f", med.Seconds()),
		fmt.Sprintf("%d items, no server running, 0 model calls; median of %d reruns %s (first run against the fake: %s)", items, len(walls), durations(walls), first.Round(time.Millisecond)))
	figure("cached rerun 10000 CPU s", fmt.Sprintf("%.3f", median(cpus).Seconds()),
		fmt.Sprintf("user + system time of each rerun: %s", durations(cpus)))
}

// proxy is a logging reverse proxy in front of one server: it keeps every
// generation request's body and counts the generation requests in flight
// (n, under mu): their peak and their integral over time.
type proxy struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	// arrived is when each body came, for merging two proxies' orders.
	arrived []time.Time
	// evalTokens and promptTokens sum the tokens the server generated and
	// read for the generation requests it answered (eval_count and
	// prompt_eval_count of each reply's last line); embeds counts the
	// embedding requests.
	evalTokens, promptTokens, embeds atomic.Int64
	// embedTime sums the embedding requests' times at the server (request
	// to reply, nanoseconds).
	embedTime atomic.Int64
	// totalTime, promptTime and loadTime sum what the server said the
	// generation requests took it (total_duration, prompt_eval_duration,
	// load_duration of each reply's last line, nanoseconds): where the
	// server's time went, and with the wall time, how long it waited for
	// the next request.
	totalTime, promptTime, loadTime atomic.Int64
	// n is the requests in flight, peak the most at once; busy is the
	// integral of n over time from the first request (first) to the last
	// reply (last).
	n, peak     int
	busy        time.Duration
	first, last time.Time
	// occ is the time n was 1 or more.
	occ time.Duration
}

// change adds d to the requests in flight, integrating over time.
func (p *proxy) change(d int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.first.IsZero() {
		p.first = now
	} else {
		p.busy += time.Duration(p.n) * now.Sub(p.last)
		if p.n > 0 {
			p.occ += now.Sub(p.last)
		}
	}
	p.n += d
	p.peak = max(p.peak, p.n)
	p.last = now
}

// occupied returns the time the proxy had a generation request in flight
// (one or more) since the last take, and the span from the first request
// to the last reply.
func (p *proxy) occupied() (busy, span time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.occ, p.last.Sub(p.first)
}

// meanInFlight returns the mean requests in flight between the first
// request and the last reply, and that span; ok is false when the proxy
// saw no request since the last take (no mean to give).
func (p *proxy) meanInFlight() (mean float64, span time.Duration, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	span = p.last.Sub(p.first)
	if span <= 0 {
		return 0, 0, false
	}
	return p.busy.Seconds() / span.Seconds(), span, true
}

var (
	evalCountRE   = regexp.MustCompile(`"eval_count":\s*(\d+)`)
	promptCountRE = regexp.MustCompile(`"prompt_eval_count":\s*(\d+)`)
	totalTimeRE   = regexp.MustCompile(`"total_duration":\s*(\d+)`)
	promptTimeRE  = regexp.MustCompile(`"prompt_eval_duration":\s*(\d+)`)
	loadTimeRE    = regexp.MustCompile(`"load_duration":\s*(\d+)`)
)

// lastCount adds the number re finds last in b to n.
func lastCount(re *regexp.Regexp, b []byte, n *atomic.Int64) {
	if m := re.FindAllSubmatch(b, -1); len(m) > 0 {
		v, _ := strconv.Atoi(string(m[len(m)-1][1]))
		n.Add(int64(v))
	}
}

func newProxy(t *testing.T, target string) *proxy {
	u, _ := url.Parse("http://" + target)
	p := &proxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.URL.Path != "/api/chat" {
			return nil
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(b))
		lastCount(evalCountRE, b, &p.evalTokens)
		lastCount(promptCountRE, b, &p.promptTokens)
		lastCount(totalTimeRE, b, &p.totalTime)
		lastCount(promptTimeRE, b, &p.promptTime)
		lastCount(loadTimeRE, b, &p.loadTime)
		return err
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/embed" {
			p.embeds.Add(1)
			start := time.Now()
			defer func() { p.embedTime.Add(int64(time.Since(start))) }()
		}
		if r.URL.Path == "/api/chat" {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			p.mu.Lock()
			p.bodies = append(p.bodies, b)
			p.arrived = append(p.arrived, time.Now())
			p.mu.Unlock()
			p.change(1)
			defer p.change(-1)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *proxy) host() string { return strings.TrimPrefix(p.srv.URL, "http://") }

// take returns the bodies logged since the last take and the peak in flight.
func (p *proxy) take() ([][]byte, int) {
	b, _, peak := p.takeTimed()
	return b, peak
}

// takeTimed is take with when each body came.
func (p *proxy) takeTimed() ([][]byte, []time.Time, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, at := p.bodies, p.arrived
	p.bodies, p.arrived = nil, nil
	p.evalTokens.Store(0)
	p.promptTokens.Store(0)
	p.embeds.Store(0)
	p.embedTime.Store(0)
	p.totalTime.Store(0)
	p.promptTime.Store(0)
	p.loadTime.Store(0)
	peak := p.peak
	p.busy, p.occ, p.peak, p.first, p.last = 0, 0, p.n, time.Time{}, time.Time{}
	return b, at, peak
}

// work is what one side of a comparison had the server do: generation
// requests per model, embedding requests, tokens generated and read, and
// the runner settings its generations asked for (settings names the
// distinct ones: a server runs other settings at another speed).
type work struct {
	chats            map[string]int
	requests, embeds int
	embedTime        time.Duration // the embedding requests' time at the server
	// serverTime, promptTime and loadTime are what the server said the
	// generation requests took it in all, reading prompts and loading
	// models; busy is the time it had one in flight or more, of span
	// (from the first request to the last reply).
	serverTime, promptTime, loadTime time.Duration
	busy, span                       time.Duration
	// loads are the model loads the server's log showed (loadsCounted).
	loads                   int
	loadsCounted            bool
	generated, promptTokens int64
	settings                string
	// bodies are the generation requests, in the order they came.
	bodies [][]byte
	// promptBytes is the generation requests' messages in bytes, fresh
	// the part of them that does not begin as the model's previous
	// request did (newPromptBytes).
	promptBytes, fresh int
}

// newPromptBytes sums, over bodies in their order, the bytes of each
// request's messages and the bytes beyond the beginning it shares with the
// previous request to the same model: what a server that keeps each
// model's last prompt (one slot per model) reads anew, in bytes rather
// than tokens. Two orders of the same requests that differ here read
// different amounts of prompt.
func newPromptBytes(bodies [][]byte) (all, fresh int) {
	last := map[string]string{}
	for _, b := range bodies {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role, Content string
			} `json:"messages"`
		}
		json.Unmarshal(b, &req)
		var text strings.Builder
		for _, m := range req.Messages {
			text.WriteString(m.Role + "\x00" + m.Content + "\x00")
		}
		p := text.String()
		prev := last[req.Model]
		n := 0
		for n < min(len(p), len(prev)) && p[n] == prev[n] {
			n++
		}
		all, fresh = all+len(p), fresh+len(p)-n
		last[req.Model] = p
	}
	return all, fresh
}

// benchRunnerOptions are the options that set how the server runs a model
// (localmodels' runner options): two sides that send different ones have
// the server work at different speeds.
var benchRunnerOptions = []string{"num_ctx", "num_thread", "num_batch", "num_gpu"}

// took returns the work logged since the last take and forgets it.
func (p *proxy) took() work {
	w := work{chats: map[string]int{}, embeds: int(p.embeds.Load()), embedTime: time.Duration(p.embedTime.Load()), generated: p.evalTokens.Load(), promptTokens: p.promptTokens.Load(),
		serverTime: time.Duration(p.totalTime.Load()), promptTime: time.Duration(p.promptTime.Load()), loadTime: time.Duration(p.loadTime.Load())}
	w.busy, w.span = p.occupied()
	bodies, _ := p.take()
	seen := map[string]bool{}
	for _, b := range bodies {
		var req struct {
			Model   string         `json:"model"`
			Options map[string]any `json:"options"`
		}
		json.Unmarshal(b, &req)
		w.chats[strings.TrimSuffix(req.Model, ":latest")]++
		var set []string
		for _, k := range benchRunnerOptions {
			v, ok := req.Options[k]
			if !ok {
				v = "server default"
			}
			set = append(set, fmt.Sprintf("%s %v", k, v))
		}
		seen[strings.Join(set, ", ")] = true
	}
	w.settings = strings.Join(slices.Sorted(maps.Keys(seen)), "; ")
	w.requests, w.bodies = len(bodies), bodies
	w.promptBytes, w.fresh = newPromptBytes(bodies)
	return w
}

func (w work) String() string {
	var per []string
	for _, m := range slices.Sorted(maps.Keys(w.chats)) {
		per = append(per, fmt.Sprintf("%s %d", m, w.chats[m]))
	}
	embeds := fmt.Sprintf("%d embedding requests", w.embeds)
	if w.embeds > 0 {
		embeds += fmt.Sprintf(" (%s at the server)", w.embedTime.Round(time.Millisecond))
	}
	if w.loadsCounted {
		embeds += fmt.Sprintf(", %d model loads", w.loads)
	}
	r := time.Millisecond
	return fmt.Sprintf("%d generation requests (%s), %s, %d tokens generated, %d prompt tokens read; runner settings %s; "+
		"the server's time on them %s (reading prompts %s, loading models %s), a request in flight %s of %s from the first to the last reply; "+
		"%d of %d prompt bytes new since the model's previous prompt",
		w.requests, strings.Join(per, ", "), embeds, w.generated, w.promptTokens, w.settings,
		w.serverTime.Round(r), w.promptTime.Round(r), w.loadTime.Round(r), w.busy.Round(r), w.span.Round(r), w.fresh, w.promptBytes)
}

// covers reports whether w asked at least all of o's work of the server —
// as many generation requests of every model, as many embeddings, as many
// tokens generated and read, under the same runner settings — and, if
// not, where it fell short. Wall time
// of work that covers another's is an upper bound for that other work:
// a ratio that favours the side doing more holds a fortiori; one that does
// not proves nothing.
func (w work) covers(o work) (bool, []string) {
	var short []string
	for m, n := range o.chats {
		if w.chats[m] < n {
			short = append(short, fmt.Sprintf("%d generation requests to %s against %d", w.chats[m], m, n))
		}
	}
	if w.embeds < o.embeds {
		short = append(short, fmt.Sprintf("%d embedding requests against %d", w.embeds, o.embeds))
	}
	if w.generated < o.generated {
		short = append(short, fmt.Sprintf("%d tokens generated against %d", w.generated, o.generated))
	}
	if w.promptTokens < o.promptTokens {
		short = append(short, fmt.Sprintf("%d prompt tokens read against %d", w.promptTokens, o.promptTokens))
	}
	if w.settings != o.settings {
		short = append(short, fmt.Sprintf("runner settings %s against %s", w.settings, o.settings))
	}
	sort.Strings(short)
	return len(short) == 0, short
}

// replay sends bodies to the server behind host with workers requests in
// flight, as a minimal direct client does: one POST each, the reply read
// whole. It returns the wall time.
func replay(t *testing.T, host string, bodies [][]byte, workers int) time.Duration {
	d, _ := replayShared(t, []string{host}, []int{workers}, bodies)
	return d
}

// post sends one generation request and reads its reply whole; false
// when it could not be sent.
func post(t *testing.T, host string, body []byte) bool {
	resp, err := http.Post("http://"+host+"/api/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("replay: %s", resp.Status)
	}
	return true
}

// benchPool: a pool of two real servers, the tiny model on both, 100
// HaluEval judgements; halu's requests, logged by a proxy in front of each
// server, sent again by minimal direct clients with the same requests in
// flight on each server. Requests per second, halu ÷ direct, over
// interleaved pairs (halu with a fresh cache each time). The figure's
// client replays each server's own requests as halu sent them there: it
// inherits halu's choices — which server took which request, a judge's
// repair turn on the server that holds its prompt — so it measures halu's
// own overhead alone (its start before the first request, its time
// between a reply and the next request, and the processor time it takes
// from servers that share its machine). Beside it, a client spreading the
// requests as a minimal pool client does (one queue in halu's order, each
// server's workers taking the next request when free), and what a user
// without a pool does: split the items by hand, one halu run a server
// (--shard 1/2 on one, 2/2 on the other, at once), timed to the later
// run's end.
// Half of the requests are judges' repair turns (the tiny judge's replies
// never read as JSON): halu sends each to the server that holds its
// judgement's prompt and reply, which begin the repair's prompt; a client
// from one queue sends it to whichever server is free, which may read that
// prompt afresh. The detail lines count those turns on each side; with
// judges whose replies read, the two clients differ only in how they
// balance the servers.
// A first halu run, not counted, loads the model on both servers and
// captures the requests; then the pairs alternate which side goes first,
// each direct run sending the requests halu sent last, so neither side has
// the cold servers or always goes second.
func benchPool(t *testing.T) {
	a, b := server(t, t.TempDir()), server(t, t.TempDir())
	importTiny(t, a.Host, "1", "ta")
	importTiny(t, b.Host, "1", "ta")
	pa, pb := newProxy(t, a.Host), newProxy(t, b.Host)
	pool := pa.host() + "," + pb.host()
	work := t.TempDir()
	type haluRun struct {
		wall, lead, tail time.Duration
		span             time.Duration
		ba, bb           [][]byte
		all              [][]byte // both servers' requests in the order they came
		peakA, peakB     int
		busy             string
		turns, moved     int // repair turns; those on another server than their judgement
	}
	runHalu := func(n int) haluRun {
		out := filepath.Join(work, fmt.Sprintf("halu%d", n))
		start := time.Now()
		// The tiny judge's replies never read: the validation measures
		// nothing and says so, exiting 4 — the requests, which are what
		// this bench times, were all made.
		if r := halu(t, pool, "--cache", filepath.Join(work, fmt.Sprintf("cache%d", n)), "judges", "validate", "--judges", "ta", "--limit", "100",
			"--judge-format", "json", "--judge-max-tokens", "16", "--judge-checks", "0", "--out", out); r.code != 0 && !measuredNothing(r) {
			t.Fatalf("judges validate through the pool: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		r := haluRun{wall: time.Since(start)}
		// halu's requests' span: its first request to its last reply.
		pa.mu.Lock()
		pb.mu.Lock()
		first, last := pa.first, pa.last
		if pb.first.Before(first) {
			first = pb.first
		}
		if pb.last.After(last) {
			last = pb.last
		}
		pb.mu.Unlock()
		pa.mu.Unlock()
		r.lead, r.tail, r.span = first.Sub(start), start.Add(r.wall).Sub(last), last.Sub(first)
		r.busy = busyOf(pa, pb)
		var ta, tb []time.Time
		r.ba, ta, r.peakA = pa.takeTimed()
		r.bb, tb, r.peakB = pb.takeTimed()
		var on []int
		r.all, on = merge(r.ba, ta, r.bb, tb)
		r.turns, r.moved = turnsMoved(t, r.all, on)
		return r
	}
	// runSplit replays each server's own requests; runShared spreads
	// them from one queue.
	runSplit := func(h haluRun) (time.Duration, string) {
		var wg sync.WaitGroup
		var da, db time.Duration
		wg.Add(2)
		go func() { defer wg.Done(); da = replay(t, pa.host(), h.ba, h.peakA) }()
		go func() { defer wg.Done(); db = replay(t, pb.host(), h.bb, h.peakB) }()
		wg.Wait()
		busy := busyOf(pa, pb)
		pa.take()
		pb.take()
		return max(da, db), busy
	}
	runShared := func(h haluRun) (time.Duration, string, string) {
		d, on := replayShared(t, []string{pa.host(), pb.host()}, []int{h.peakA, h.peakB}, h.all)
		busy := busyOf(pa, pb)
		ba, _ := pa.take()
		bb, _ := pb.take()
		turns, moved := turnsMoved(t, h.all, on)
		return d, busy, fmt.Sprintf("%d on a, %d on b; %d of %d repair turns on the other server than their judgement", len(ba), len(bb), moved, turns)
	}
	// runHand splits the units by hand: one halu run a server, at once,
	// each with its own fresh cache; the wall time is the later run's
	// end, the requests those both proxies saw.
	runHand := func(n int) (time.Duration, int) {
		start := time.Now()
		var wg sync.WaitGroup
		res := make([]result, 2)
		errs := make([]error, 2)
		for i, p := range []*proxy{pa, pb} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[i], errs[i] = execHalu(p.host(), "--cache", filepath.Join(work, fmt.Sprintf("hand%d-%d.cache", n, i)), "judges", "validate", "--judges", "ta", "--limit", "100",
					"--judge-format", "json", "--judge-max-tokens", "16", "--judge-checks", "0", "--shard", fmt.Sprintf("%d/2", i+1), "--out", filepath.Join(work, fmt.Sprintf("hand%d-%d", n, i)))
			}()
		}
		wg.Wait()
		wall := time.Since(start)
		for i, r := range res {
			if errs[i] != nil {
				t.Fatalf("judges validate, shard %d/2 by hand: %v", i+1, errs[i])
			}
			if r.code != 0 && !measuredNothing(r) {
				t.Fatalf("judges validate, shard %d/2 by hand: exit %d\n%s\n%s", i+1, r.code, r.stdout, r.stderr)
			}
		}
		ba, _ := pa.take()
		bb, _ := pb.take()
		return wall, len(ba) + len(bb)
	}
	prev := runHalu(0) // warm-up: loads the model on both servers
	var ratios, splitRatios, spanRatios, handRatios []float64
	var detail, handDetail []string
	for pair := 1; pair <= 4; pair++ {
		var h haluRun
		var shared, split time.Duration
		var sbusy, pbusy, spread string
		directs := func(h haluRun) {
			if pair%2 == 1 {
				shared, sbusy, spread = runShared(h)
				split, pbusy = runSplit(h)
			} else {
				split, pbusy = runSplit(h)
				shared, sbusy, spread = runShared(h)
			}
		}
		var hand time.Duration
		var handCalls int
		order := "halu first"
		if pair%2 == 1 {
			order = "direct first"
			directs(prev)
			hand, handCalls = runHand(pair)
			h = runHalu(pair)
		} else {
			h = runHalu(pair)
			hand, handCalls = runHand(pair)
			directs(h)
		}
		calls := len(h.ba) + len(h.bb)
		if calls == 0 || calls != len(prev.ba)+len(prev.bb) {
			figure("pool vs own-split replay req/s ratio", fmt.Sprintf("– (not measured: halu sent %d requests through the proxies, %d the time before)", calls, len(prev.ba)+len(prev.bb)))
			return
		}
		hr, dr, pr := float64(calls)/h.wall.Seconds(), float64(calls)/shared.Seconds(), float64(calls)/split.Seconds()
		ratios = append(ratios, hr/dr)
		splitRatios = append(splitRatios, hr/pr)
		spanRatios = append(spanRatios, float64(calls)/h.span.Seconds()/pr)
		// Only the same requests compare: a split that sent another number
		// (none, or fewer from a cache) is "–" for its pair.
		if handCalls == calls {
			hh := float64(handCalls) / hand.Seconds()
			handRatios = append(handRatios, hr/hh)
			handDetail = append(handDetail, fmt.Sprintf("%.3f (%d requests in %s)", hr/hh, handCalls, hand.Round(time.Millisecond)))
		} else {
			handDetail = append(handDetail, fmt.Sprintf("– (the split sent %d requests, the pool %d)", handCalls, calls))
		}
		detail = append(detail, fmt.Sprintf("pair %d (%s): halu %d requests (%d on a, %d on b; peak in flight %d, %d) in %s = %.2f/s; direct from one queue %.2f/s (%s; %s); direct replaying halu's split %.2f/s (%s); halu sent %d of %d repair turns to the other server than their judgement; halu's first request %s after its start, its last reply %s before its exit; over its requests' span %.2f/s; mean requests in flight on a, b over each one's span: halu %s, direct from one queue %s, replaying halu's split %s",
			pair, order, calls, len(h.ba), len(h.bb), h.peakA, h.peakB, h.wall.Round(time.Millisecond), hr, dr, shared.Round(time.Millisecond), spread, pr, split.Round(time.Millisecond), h.moved, h.turns,
			h.lead.Round(time.Millisecond), h.tail.Round(time.Millisecond), float64(calls)/h.span.Seconds(), h.busy, sbusy, pbusy))
		prev = h
	}
	var sp, ss, nv []string
	for i := range ratios {
		sp = append(sp, fmt.Sprintf("%.3f", splitRatios[i]))
		ss = append(ss, fmt.Sprintf("%.3f", spanRatios[i]))
		nv = append(nv, fmt.Sprintf("%.3f", ratios[i]))
	}
	detail = append(detail,
		fmt.Sprintf("halu ÷ a direct client replaying halu's own split, per pair: %s (halu's overhead alone: the direct side inherits halu's choices)", strings.Join(sp, ", ")),
		fmt.Sprintf("the same over halu's requests' span (its first request to its last reply, as the replay is timed; halu's start and exit left out): %.3f (pairs %s)", medianF(spanRatios), strings.Join(ss, ", ")),
		fmt.Sprintf("beside it, halu ÷ a naive direct client from one queue: %.3f (pairs %s; its gain is routing repair turns to the server holding their prompt)", medianF(ratios), strings.Join(nv, ", ")),
		fmt.Sprintf("and halu's pool ÷ the units split by hand, one halu run a server at once (--shard 1/2, 2/2), req/s: %s (pairs %s)", medianOrDash(handRatios), strings.Join(handDetail, ", ")))
	figure("pool vs own-split replay req/s ratio", fmt.Sprintf("%.3f (median of %d pairs)", medianF(splitRatios), len(splitRatios)), detail...)
}

// merge is two proxies' requests in the order they came; on[i] is 0
// when out[i] came to the first, 1 when to the second.
func merge(ba [][]byte, ta []time.Time, bb [][]byte, tb []time.Time) (out [][]byte, on []int) {
	i, j := 0, 0
	for i < len(ba) || j < len(bb) {
		if j >= len(bb) || i < len(ba) && !tb[j].Before(ta[i]) {
			out, on = append(out, ba[i]), append(on, 0)
			i++
		} else {
			out, on = append(out, bb[j]), append(on, 1)
			j++
		}
	}
	return out, on
}

// replayShared sends bodies, in order, from one queue over several
// servers: slots[i] workers send to hosts[i], each taking the next body
// when its reply is in (a minimal pool client). It returns the wall time.
// on[i] is the index of the host bodies[i] went to.
func replayShared(t *testing.T, hosts []string, slots []int, bodies [][]byte) (wall time.Duration, on []int) {
	next := atomic.Int64{}
	var wg sync.WaitGroup
	on = make([]int, len(bodies))
	start := time.Now()
	for h, host := range hosts {
		for w := 0; w < max(1, slots[h]); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1)) - 1
					if i >= len(bodies) {
						return
					}
					on[i] = h
					if !post(t, host, bodies[i]) {
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	return time.Since(start), on
}

// turnsMoved counts the follow-up turns among bodies (a request whose
// messages are an earlier request's, its reply and one more message: a
// judge's repair turn) sent to another server than the request they
// follow, where the server holds none of their prompt; on[i] is where
// bodies[i] went.
func turnsMoved(t *testing.T, bodies [][]byte, on []int) (turns, moved int) {
	type chat struct {
		Messages []json.RawMessage `json:"messages"`
	}
	where := map[string]int{}
	for i, b := range bodies {
		var c chat
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		k, _ := json.Marshal(c.Messages)
		where[string(k)] = on[i]
		if n := len(c.Messages); n > 2 {
			p, _ := json.Marshal(c.Messages[:n-2])
			if h, ok := where[string(p)]; ok {
				turns++
				if h != on[i] {
					moved++
				}
			}
		}
	}
	return turns, moved
}

// busyOf is the mean requests in flight on each proxy over its own span
// (first request to last reply), "a, b".
func busyOf(pa, pb *proxy) string {
	var out []string
	for _, p := range []*proxy{pa, pb} {
		m, _, ok := p.meanInFlight()
		if !ok {
			out = append(out, "–")
			continue
		}
		out = append(out, fmt.Sprintf("%.3f", m))
	}
	return strings.Join(out, ", ")
}

// benchItemsInFlight: hic on 30 questions for four generators (120
// items, one answer each), judged by two judges and embedded by a third
// model, on a server with four slots (OLLAMA_NUM_PARALLEL=4, halu's
// --parallel 4), with --items-in-flight unset (the default) and 4, 8, 16,
// 32, 64 — once with seven distinct sets of weights (the server holds
// three at a time: models are swapped) and once with seven aliases of one
// set (a lab that judges with the model it evaluates, or several
// system-prompt variants of one base: no swap, and the calls' prompts
// shared across models). The figure is the default's wall time ÷ the
// best fixed setting's. One untimed run first loads the models (the
// setting timed first would otherwise also pay the server's first loads).
// A sweep of sweepRounds rounds finds the best setting (the least median);
// then confirmPairs pairs time the default and that best one, each pair
// four runs in mirrored order (default, best, best, default; the next
// best first), and the figure is the median of the pairs' ratios of sums.
// The sweep alone could not give it: the least of several noisy medians is
// low by the noise, and with 32 items the default, 32 and 64 are the same
// run; the mirrored order cancels a server that speeds up or slows, and
// one whose runs alternate fast and slow.
func benchItemsInFlight(t *testing.T) {
	// Five pairs on aliases, whose runs take a third of the time and
	// whose default and best setting are often the same run: a figure of
	// noise alone, held closer by more pairs.
	pairs := map[string]int{"aliases": 5, "distinct weights": 3}
	for _, kind := range []string{"aliases", "distinct weights"} {
		t.Run(strings.ReplaceAll(kind, " ", "-"), func(t *testing.T) { itemsInFlightFigure(t, kind, 30, 2, pairs[kind]) })
	}
}

// benchItemsInFlightLarge: the same on 1,000 items (all 100 questions for
// ten generators, aliases of one set of weights): the default against the
// best fixed setting of a one-round sweep over 4, 16 and 64, in three
// pairs; 22 minutes on 2 cores, its seventeen runs 72–91 s each
// (HALU_BENCH_LARGE=1 make bench-engine).
func benchItemsInFlightLarge(t *testing.T) {
	itemsInFlightFigure(t, "aliases", 100, 1, 3, "4", "16", "64")
}

// itemsInFlightFigure prints the figure for kind ("aliases" or "distinct
// weights") on questions × the generators' items, swept over settings (the
// default and 4, 8, 16, 32, 64 unless given).
func itemsInFlightFigure(t *testing.T, kind string, questions, sweepRounds, confirmPairs int, fixed ...string) {
	srv, _ := serverWithLog(t, t.TempDir(), "OLLAMA_NUM_PARALLEL=4")
	gens := []string{"g1", "g2", "g3", "g4"}
	if questions > 30 {
		gens = append(gens, "g5", "g6", "g7", "g8", "g9", "g10")
	}
	names := append(append([]string(nil), gens...), "j1", "j2", "emb")
	if kind == "distinct weights" {
		for i, n := range names {
			importTiny(t, srv.Host, fmt.Sprint(i+1), n)
		}
	} else {
		importTiny(t, srv.Host, "1", names...)
	}
	work := t.TempDir()
	run := func(s, name string) time.Duration {
		args := []string{"--parallel", "4"}
		if s != "default" {
			args = append(args, "--items-in-flight", s)
		}
		// Each run its own fresh response cache, as a default run has one:
		// identical requests (aliases of one set of weights asked the same
		// prompt) are then made once whenever they come, as they would be;
		// under --no-cache only those in flight at the same moment are
		// shared, and how many are varies from run to run (34–45 s, 423–564
		// calls, in six runs of one setting).
		args = append(args, "run", "hic", "--cache", filepath.Join(work, name+".cache"), "--models", strings.Join(gens, ","), "--judges", "j1,j2", "--embed-model", "emb",
			"--limit", fmt.Sprint(questions), "--answers", "1", "--max-tokens", "32", "--judge-format", "json", "--judge-max-tokens", "64",
			"--judge-checks", "0", "--out", filepath.Join(work, name))
		start := time.Now()
		workHalu(t, srv.Host, args...)
		return time.Since(start)
	}
	run("default", "warm-up")
	_, recs, err := engine.ReadRun(filepath.Join(work, "warm-up"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fixed) == 0 {
		fixed = []string{"4", "8", "16", "32", "64"}
	}
	settings := append([]string{"default"}, fixed...)
	walls := map[string][]time.Duration{}
	for r := 0; r < sweepRounds; r++ {
		for i := range settings {
			s := settings[(i+r*len(settings)/max(1, sweepRounds))%len(settings)]
			walls[s] = append(walls[s], run(s, fmt.Sprintf("sweep-%s-%d", s, r)))
		}
	}
	best := fixed[0]
	for _, s := range fixed {
		if median(walls[s]) < median(walls[best]) {
			best = s
		}
	}
	var ratios []float64
	var pairs []string
	for p := 0; p < confirmPairs; p++ {
		// A pair is four runs, the default and the best setting twice each
		// in mirrored order (d b b d, then b d d b): a server that speeds
		// up or slows during the pair, and one whose runs alternate fast
		// and slow (seen: seven couples of runs of the default and 32, back
		// to back, the later of each couple the faster in all seven,
		// whichever setting it was), weigh on both sides alike.
		first, second := "default", best
		if p%2 == 1 {
			first, second = best, "default"
		}
		w := map[string]time.Duration{}
		var order []string
		for k, s := range []string{first, second, second, first} {
			d := run(s, fmt.Sprintf("pair-%d-%d-%s", p, k, s))
			w[s] += d
			order = append(order, fmt.Sprintf("%s %s", s, d.Round(time.Millisecond)))
		}
		r := w["default"].Seconds() / w[best].Seconds()
		ratios = append(ratios, r)
		pairs = append(pairs, fmt.Sprintf("%.3f (%s)", r, strings.Join(order, ", ")))
	}
	var parts []string
	for _, s := range settings {
		parts = append(parts, fmt.Sprintf("%s %.3fs (%s)", s, median(walls[s]).Seconds(), durations(walls[s])))
	}
	figure(fmt.Sprintf("items in flight default/best wall (%d items, %s)", len(recs), kind), fmt.Sprintf("%.3f (best fixed setting: %s)", medianF(ratios), best),
		fmt.Sprintf("sweep, median of %d rounds after one untimed run: ", sweepRounds)+strings.Join(parts, ", "),
		fmt.Sprintf("default ÷ %s in %d pairs (each the sum of two runs ÷ the sum of two, in mirrored order): %s", best, confirmPairs, strings.Join(pairs, "; ")))
}

// benchSlots: 100 generator models of distinct weights (tiny models of
// seeds 1–100) and one judge, smoke's 5 questions each (500 generations,
// 500 judgements), on a server with 4 parallel slots and halu's --parallel
// 4; the share of the slots halu kept busy while it worked, as the run's
// manifest counts it (calls in flight, halu's side: a call waiting on
// the server for its model to load holds a slot).
func benchSlots(t *testing.T) {
	srv, _ := serverWithLog(t, t.TempDir(), "OLLAMA_NUM_PARALLEL=4")
	var models []string
	dir := t.TempDir()
	for i := 1; i <= 100; i++ {
		name := fmt.Sprintf("m%03d", i)
		path := filepath.Join(dir, name+".gguf")
		mustHalu(t, srv.Host, "models", "tiny", "--out", path, "--seed", strconv.Itoa(i))
		mustHalu(t, srv.Host, "models", "import", path, "--name", name, "--template", localmodels.TinyTemplate)
		models = append(models, name)
	}
	importTiny(t, srv.Host, "101", "judge")
	px := newProxy(t, srv.Host)
	out := filepath.Join(t.TempDir(), "run")
	start := time.Now()
	workHalu(t, px.host(), "--parallel", "4", "--judge-checks", "0", "run", "smoke", "--no-cache", "--models", strings.Join(models, ","), "--judges", "judge",
		"--max-tokens", "24", "--out", out)
	wall := time.Since(start)
	m, err := rundir.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Counts
	atServer := "at the server (a proxy in front of it): – (no request passed it)"
	if mean, span, ok := px.meanInFlight(); ok {
		atServer = fmt.Sprintf("at the server (a proxy in front of it): %.2f requests in flight on average from the first request to the last reply (%s)",
			mean, span.Round(time.Millisecond))
	}
	use, ok := c.SlotUse()
	if !ok {
		figure("100-model slot use", "– (not measured: the run recorded no work time)", atServer, fmt.Sprintf("%s in all", wall.Round(time.Millisecond)))
		return
	}
	mean, _ := c.InFlight()
	figure("100-model slot use", fmt.Sprintf("%.3f", use),
		fmt.Sprintf("%d model calls, %.2f in flight on average of 4 slots over %.1f s of work (%s in all); %d model switches",
			c.ModelCalls, mean, c.WorkSeconds, wall.Round(time.Millisecond), c.ModelSwitches),
		atServer)
}

// median is the median of ds (of an even count, the mean of the two
// middle values).
func median(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(medianF(xs))
}

// medianF is the median of xs (of an even count, the mean of the two
// middle values).
func medianF(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// medianOrDash is medianF to three decimals, "–" of no values.
func medianOrDash(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f", medianF(xs))
}

func durations(ds []time.Duration) string {
	var p []string
	for _, d := range ds {
		p = append(p, d.Round(time.Millisecond).String())
	}
	return strings.Join(p, ", ")
}

// promptfooVersion is the newest promptfoo that runs on Node 20 (0.122 and
// later need Node 22.22).
const promptfooVersion = "0.121.20"

// promptfooBin is promptfoo installed in ~/.cache/halu (by npm, once), or
// "" with the reason it is not there.
func promptfooBin(t *testing.T) (string, string) {
	home, _ := os.UserHomeDir()
	dir := filepath.Join(home, ".cache", "halu", "promptfoo-"+promptfooVersion)
	bin := filepath.Join(dir, "node_modules", ".bin", "promptfoo")
	if _, err := os.Stat(bin); err == nil {
		return bin, ""
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", "no npm on this machine"
	}
	os.MkdirAll(dir, 0o755)
	cmd := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error", "promptfoo@"+promptfooVersion)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("npm install promptfoo@%s: %v: %s", promptfooVersion, err, lastLines(string(out), 3))
	}
	return bin, ""
}

// benchPromptfoo: 1,000 judge calls on one real server (started with env)
// — HIC-Bench's 100 questions answered once at five temperatures by one
// tiny generator (500 generations, SCP prompt) and each answer judged once
// by a tiny judge (500 judgements) — by halu (run hic, no cache, the
// judges' replies in the paper's text format, each judge asked once
// (--judge-repairs 0) as promptfoo asks it; it also embeds the answers
// for Flu, which promptfoo does not) and by promptfoo (the same prompt, questions and
// temperatures, an llm-rubric judgement each asked HIC-Bench's judge
// prompt, its cache off), both with
// one call in flight (or HALU_BENCH_IN_FLIGHT) and neither constraining
// the judge's reply to a grammar (which has the server sample every token
// against it), through one logging proxy that counts what each side had
// the server do; three pairs (promptfooPairs), the sides taking turns going first, wall
// time halu ÷ promptfoo (the median). The ratio
// is given only when one side's work covers the other's (work.covers):
// then it bounds the ratio at equal work. A direct client then replays
// promptfoo's requests in its order: the server's share of promptfoo's
// wall time (direct replay ÷ promptfoo wall), below which no client
// sending those requests one after the other gets.
func benchPromptfoo(t *testing.T, name string, env ...string) {
	bin, why := promptfooBin(t)
	if bin == "" {
		figure(name, "– (not measured: "+why+")")
		return
	}
	srv, logPath := serverWithLog(t, t.TempDir(), env...)
	// loads counts the model loads the server's log shows so far.
	loads := func() int {
		b, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		return runnerStarts(string(b))
	}
	importTiny(t, srv.Host, "1", "gen")
	importTiny(t, srv.Host, "2", "judge")
	px := newProxy(t, srv.Host)
	wdir := t.TempDir()
	f, err := os.Open(filepath.Join("..", "runner", "hic", "data", "CDID.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) != 101 {
		t.Fatalf("CDID.csv: %d rows, %v", len(rows), err)
	}
	scp, _ := os.ReadFile(filepath.Join("..", "runner", "hic", "prompts", "scp_prompt.txt"))
	prompt := strings.NewReplacer("{field}", "{{field}}", "{question}", "{{question}}").Replace(string(scp))
	temps := []string{"0.2", "0.4", "0.6", "0.8", "1.0"}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "prompts:\n  - %q\nproviders:\n", prompt)
	for _, tp := range temps {
		fmt.Fprintf(&cfg, "  - id: ollama:chat:gen\n    label: gen-T%s\n    config: {temperature: %s, seed: 1, num_predict: 48, num_ctx: 4096, num_thread: %s}\n", tp, tp, numThread())
	}
	// The runner settings halu sends (num_ctx 4096, num_thread from
	// HALU_NUM_THREAD), so the server runs both sides' models alike, and
	// halu's seed (--seed 1: answer 1 and its judge use seed 1), so both
	// sides' replies are the same.
	// promptfoo's judge is asked HIC-Bench's judge prompt (its system
	// prompt, and its user prompt with the answer in promptfoo's output),
	// so both sides' judgements are the same requests.
	system, _ := os.ReadFile(filepath.Join("..", "runner", "hic", "hicjudge", "prompts", "evaluation_system_prompt.txt"))
	user, _ := os.ReadFile(filepath.Join("..", "runner", "hic", "hicjudge", "prompts", "evaluation_user_prompt.txt"))
	if len(system) == 0 || !strings.Contains(string(user), "{answer}") {
		t.Fatalf("HIC-Bench's judge prompt: system %d bytes, user %q", len(system), user)
	}
	// halu judges an answer without its leading and trailing white space
	// (promptfoo hands a reply that reads as JSON, "4" say, as a number:
	// ~ makes it text again).
	userTmpl := strings.NewReplacer("{question}", "{{question}}", "{answer}", `{{ (output ~ "") | trim }}`).Replace(string(user))
	cfg.WriteString("defaultTest:\n  options:\n    provider: {id: 'ollama:chat:judge', config: {temperature: 0, seed: 1, num_predict: 48, num_ctx: 4096, num_thread: " + numThread() + "}}\n" +
		fmt.Sprintf("    rubricPrompt:\n      - {role: system, content: %q}\n      - {role: user, content: %q}\n", system, userTmpl) +
		"  assert:\n    - type: llm-rubric\n      value: 'The answer is grounded in current science and states no fabricated fact.'\ntests:\n")
	for _, r := range rows[1:] {
		fmt.Fprintf(&cfg, "  - vars: {field: %q, question: %q}\n", r[1], r[2])
	}
	config := filepath.Join(wdir, "promptfooconfig.yaml")
	os.WriteFile(config, []byte(cfg.String()), 0o644)
	// Both sides' calls in flight: 1, or HALU_BENCH_IN_FLIGHT.
	inFlight := "1"
	if n := os.Getenv("HALU_BENCH_IN_FLIGHT"); n != "" {
		inFlight, name = n, fmt.Sprintf("%s, %s calls in flight", name, n)
	}
	var ratios, floors []float64
	var detail []string
	var hw, pw []work
	// runHalu and runPromptfoo run one side once, through the proxy, and
	// return its wall time, the work the server did for it, and (for
	// promptfoo) how it ended.
	runHalu := func(pair int) (time.Duration, work) {
		l0, start := loads(), time.Now()
		workHalu(t, px.host(), "--parallel", inFlight, "run", "hic", "--no-cache", "--models", "gen", "--judges", "judge", "--temperature", strings.Join(temps, ","),
			"--answers", "1", "--max-tokens", "48", "--judge-max-tokens", "48", "--embed-model", "judge", "--judge-checks", "0", "--judge-repairs", "0",
			"--out", filepath.Join(wdir, fmt.Sprintf("halu%d", pair)))
		wall := time.Since(start)
		w := px.took()
		w.loads, w.loadsCounted = loads()-l0, true
		return wall, w
	}
	runPromptfoo := func(pair int) (time.Duration, work, []byte, error) {
		cmd := exec.Command(bin, "eval", "-c", config, "--no-cache", "-j", inFlight, "--no-progress-bar", "--no-table", "-o", filepath.Join(wdir, fmt.Sprintf("pf%d.json", pair)))
		cmd.Dir = wdir
		cmd.Env = append(os.Environ(), "OLLAMA_BASE_URL=http://"+px.host(), "PROMPTFOO_DISABLE_TELEMETRY=1", "PROMPTFOO_DISABLE_UPDATE=1",
			"PROMPTFOO_CONFIG_DIR="+filepath.Join(wdir, "pfhome"), "PROMPTFOO_DISABLE_SHARING=1")
		l0, start := loads(), time.Now()
		out, err := cmd.CombinedOutput()
		wall := time.Since(start)
		w := px.took()
		w.loads, w.loadsCounted = loads()-l0, true
		return wall, w, out, err
	}
	var hOver, pOver []float64
	for pair := 0; pair < promptfooPairs(t); pair++ {
		// The sides take turns going first (halu, promptfoo; promptfoo,
		// halu; …), so a server that speeds up or slows down over the
		// bench favours neither.
		var (
			hWall, pWall time.Duration
			h, p         work
			out          []byte
			err          error
		)
		if pair%2 == 0 {
			hWall, h = runHalu(pair)
			pWall, p, out, err = runPromptfoo(pair)
		} else {
			pWall, p, out, err = runPromptfoo(pair)
			hWall, h = runHalu(pair)
		}
		if p.requests == 0 || h.requests == 0 {
			figure(name, fmt.Sprintf("– (not measured: halu sent %d requests, promptfoo %d: %v: %s)", h.requests, p.requests, err, lastLines(string(out), 5)))
			return
		}
		// promptfoo's own requests, in its order, sent by a client that
		// does nothing else: what they take the server, without promptfoo.
		workers, _ := strconv.Atoi(inFlight)
		l0 := loads()
		dWall := replay(t, px.host(), p.bodies, workers)
		px.took()
		dLoads := loads() - l0
		ratios = append(ratios, hWall.Seconds()/pWall.Seconds())
		floors = append(floors, dWall.Seconds()/pWall.Seconds())
		if h.serverTime > 0 && p.serverTime > 0 { // a server that gives no durations gives no such ratio
			hOver, pOver = append(hOver, hWall.Seconds()/h.serverTime.Seconds()), append(pOver, pWall.Seconds()/p.serverTime.Seconds())
		}
		hw, pw = append(hw, h), append(pw, p)
		first := "halu first"
		if pair%2 == 1 {
			first = "promptfoo first"
		}
		detail = append(detail, fmt.Sprintf("pair %d (%s): halu in %s: %s", pair+1, first, hWall.Round(time.Millisecond), h),
			fmt.Sprintf("pair %d: promptfoo in %s: %s (exit: %v; promptfoo exits 100 when assertions fail)", pair+1, pWall.Round(time.Millisecond), p, err),
			fmt.Sprintf("pair %d: promptfoo's %d requests replayed in its order by a direct client, %s in flight: %s, %d model loads", pair+1, p.requests, inFlight, dWall.Round(time.Millisecond), dLoads))
	}
	// Each side's wall time over the time the server said its generation
	// requests took: what the side added to the server's work (halu's
	// embeddings for Flu included), apart from how fast the server ran.
	if len(hOver) > 0 {
		detail = append(detail, fmt.Sprintf("wall time ÷ the server's time on the generation requests, median of %d: halu %.3f, promptfoo %.3f", len(hOver), medianF(hOver), medianF(pOver)))
	} else {
		detail = append(detail, "wall time ÷ the server's time on the generation requests: – (the server said nothing of its time)")
	}
	figure(name, promptfooRatio(medianF(ratios), hw, pw), detail...)
	figure(strings.Replace(name, "promptfoo wall ratio", "direct replay ÷ promptfoo wall", 1), fmt.Sprintf("%.3f (median of %d pairs: promptfoo's requests in its order, sent by a client that does nothing else; what they take the server without promptfoo's own work)", medianF(floors), len(floors)))
}

// promptfooPairs is the number of pairs benchPromptfoo times: 3, or
// HALU_BENCH_PROMPTFOO_PAIRS (bench-compare's short form: 1 a build, as
// each build is measured twice).
func promptfooPairs(t *testing.T) int {
	v := os.Getenv("HALU_BENCH_PROMPTFOO_PAIRS")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("HALU_BENCH_PROMPTFOO_PAIRS=%q: a number of pairs, 1 or more", v)
	}
	return n
}

// countsCaveat says what the counts behind a bound do not show: the
// server counts a prompt's tokens whole, the part it held from an earlier
// prompt included, so equal prompt tokens need not be equal reading.
const countsCaveat = "; prompt tokens as the server counts them, the part it held from an earlier prompt included"

// promptfooRatio labels the median wall ratio halu ÷ promptfoo by what
// the pairs prove: when halu's work covered promptfoo's in every pair, the
// ratio at equal work is at most r (an upper bound); when promptfoo's
// covered halu's, at least r; when both, the work was the same; otherwise
// the two did different work and no ratio is given.
func promptfooRatio(r float64, halu, pf []work) string {
	hc, pc := true, true
	var short []string
	for i := range halu {
		ok, s := halu[i].covers(pf[i])
		hc = hc && ok
		for _, x := range s {
			if !slices.Contains(short, x) { // pairs short alike say it once
				short = append(short, x)
			}
		}
		ok, _ = pf[i].covers(halu[i])
		pc = pc && ok
	}
	switch {
	case hc && pc:
		return fmt.Sprintf("%.3f (the same counts in every pair%s)", r, countsCaveat)
	case hc:
		return fmt.Sprintf("%.3f (an upper bound by counts: halu sent at least promptfoo's requests and tokens in every pair%s)", r, countsCaveat)
	case pc:
		return fmt.Sprintf("%.3f (a lower bound by counts: promptfoo sent at least halu's requests and tokens in every pair%s)", r, countsCaveat)
	}
	return fmt.Sprintf("– (not comparable: neither side's work covers the other's; halu had %s; the wall ratio, %.3f, compares different work)", strings.Join(short, "; "), r)
}

// TestPromptfooRatio: the bench's ratio is labelled by what the work
// proves, and withheld when neither side's work covers the other's.
func TestPromptfooRatio(t *testing.T) {
	w := func(gen, judge, embeds int, generated, read int64) work {
		return work{chats: map[string]int{"gen": gen, "judge": judge}, requests: gen + judge, embeds: embeds, generated: generated, promptTokens: read}
	}
	pf := []work{w(500, 500, 0, 40000, 300000)}
	for _, c := range []struct {
		name string
		halu work
		want string
	}{
		{"same", w(500, 500, 0, 40000, 300000), "0.900 (the same counts in every pair; prompt tokens as the server counts them"},
		{"halu more", w(500, 1000, 500, 65000, 600000), "0.900 (an upper bound by counts"},
		{"halu less", w(500, 400, 0, 30000, 200000), "0.900 (a lower bound by counts"},
		{"different", w(500, 1000, 500, 30000, 600000), "– (not comparable: neither side's work covers the other's; halu had 30000 tokens generated against 40000;"},
		{"other settings", func() work { x := w(500, 1000, 500, 65000, 600000); x.settings = "num_thread 1"; return x }(),
			"– (not comparable: neither side's work covers the other's; halu had runner settings num_thread 1 against ;"},
	} {
		if got := promptfooRatio(0.9, []work{c.halu}, pf); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want it to start %q", c.name, got, c.want)
		}
	}
}
