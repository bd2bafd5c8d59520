package engine_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"halu/localmodels"
	"halu/localmodels/fakeollama"
	"halu/localmodels/fakeopenai"
	"halu/runner/engine"
	"halu/runner/judging"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// testSuite generates an answer per item and has it judged.
type testSuite struct {
	n int
}

type verdict struct {
	Score int `json:"score"`
}

func (v *verdict) Validate() error {
	if v.Score < 1 || v.Score > 5 {
		return fmt.Errorf("score %d outside 1..5", v.Score)
	}
	return nil
}

type result struct {
	Answer string `json:"answer"`
	Score  int    `json:"score"`
	Scored bool   `json:"scored"`
}

func (s *testSuite) Task() engine.Suite {
	return engine.Suite{Name: "test", Models: s.Models, Items: s.Items, Process: s.Process, Summarize: s.Summarize}
}
func (s *testSuite) Models() []string                             { return []string{"gen", "judge"} }
func (s *testSuite) Items(context.Context) ([]engine.Item, error) { return numberedItems(s.n), nil }

// numberedItems are n items item-00, item-01, …, each its number as payload.
func numberedItems(n int) []engine.Item {
	var items []engine.Item
	for i := 0; i < n; i++ {
		items = append(items, engine.Item{ID: fmt.Sprintf("item-%02d", i), Payload: i})
	}
	return items
}
func (s *testSuite) Process(ctx context.Context, c *engine.Calls, it engine.Item) (any, error) {
	gen, err := c.Chat(ctx, "generate", localmodels.ChatRequest{
		Model:    "gen",
		Messages: []localmodels.Message{{Role: "user", Content: fmt.Sprintf("question %d", it.Payload)}},
		Options:  localmodels.Options{Temperature: localmodels.Float(1), Seed: localmodels.Int(1)},
	}, 0)
	if err != nil {
		return nil, err
	}
	v, ok, err := judging.JudgeWith(ctx, c, "judge", localmodels.ChatRequest{
		Model:    "judge",
		Messages: []localmodels.Message{{Role: "user", Content: "grade: " + gen.Content}},
		Options:  localmodels.Options{Temperature: localmodels.Float(0)},
	}, json.RawMessage(`{"type":"object"}`), judging.Reader[verdict]{})
	if err != nil {
		return nil, err
	}
	return result{Answer: gen.Content, Score: v.Score, Scored: ok}, nil
}
func (s *testSuite) Summarize(all *rundir.Records) (*summary.Summary, error) {
	recs, err := all.Sorted()
	if err != nil {
		return nil, err
	}
	sum := &summary.Summary{Suite: "test", Metrics: map[string]float64{"records": float64(len(recs))}}
	return sum, nil
}

// judgeReply answers generation prompts with an echo and judge prompts with
// reply(prompt).
func server(t testing.TB, judge func(prompt string) fakeollama.Reply) *fakeollama.Server {
	t.Helper()
	s := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if r.Model == "judge" {
			return judge(r.Messages[0].Content)
		}
		return fakeollama.Reply{Content: "answer to " + r.LastUser()}
	},
		fakeollama.Model{Name: "gen:latest", Digest: "dg", Family: "llama", ParameterCount: 1e9},
		fakeollama.Model{Name: "judge:latest", Digest: "dj", Family: "qwen2", ParameterCount: 1e9},
	)
	t.Cleanup(s.Close)
	return s
}

func goodJudge(string) fakeollama.Reply { return fakeollama.Reply{Content: `{"score": 4}`} }

func newEngine(t testing.TB, host, cacheDir string) *engine.Engine {
	t.Helper()
	c, err := localmodels.New(host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := engine.OpenCache(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	return &engine.Engine{Client: c, Cache: cache, Retry: engine.Retry{Base: 10 * time.Millisecond, Max: 20 * time.Millisecond}, Config: engine.EngineConfig{Parallel: 3, ItemsInFlight: 3, JudgeRepairs: 1, Retries: 3}}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	sort.Strings(lines)
	return lines
}

func TestRunThenRerunFromCache(t *testing.T) {
	srv := server(t, goodJudge)
	cache := t.TempDir()
	dir1 := filepath.Join(t.TempDir(), "run1")
	res, err := newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 6}).Task(), engine.RunSpec{Dir: dir1, Config: map[string]int{"n": 6}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Completed != 6 || res.Counts.ModelCalls != 12 || res.Counts.CacheHits != 0 {
		t.Fatalf("first run counts = %+v", res.Counts)
	}
	m, recs, err := engine.ReadRun(dir1)
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != "complete" || len(m.Models) != 2 || m.Models[0].Digest != "dg" || m.Models[1].Digest != "dj" {
		t.Fatalf("manifest = %+v", m)
	}
	var r result
	json.Unmarshal(recs[0].Data, &r)
	if !r.Scored || r.Score != 4 || len(recs[0].Calls) != 2 || recs[0].Calls[0].Digest != "dg" {
		t.Fatalf("record = %+v", recs[0])
	}

	dir2 := filepath.Join(t.TempDir(), "run2")
	before := len(srv.Chats())
	res2, err := newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 6}).Task(), engine.RunSpec{Dir: dir2})
	if err != nil {
		t.Fatal(err)
	}
	if len(srv.Chats()) != before || res2.Counts.ModelCalls != 0 || res2.Counts.CacheHits != 12 {
		t.Fatalf("rerun made %d calls, counts %+v", len(srv.Chats())-before, res2.Counts)
	}
	a, b := readLines(t, filepath.Join(dir1, "records.jsonl")), readLines(t, filepath.Join(dir2, "records.jsonl"))
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatal("rerun wrote different records")
	}

	// A run directory is never overwritten.
	if _, err := newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 6}).Task(), engine.RunSpec{Dir: dir1}); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("rerun into the same dir: %v", err)
	}
}

// A new digest for the same tag (a re-pull) must not reuse cached replies.
func TestDigestChangeInvalidatesCache(t *testing.T) {
	srv := server(t, goodJudge)
	cache := t.TempDir()
	if _, err := newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 2}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "a")}); err != nil {
		t.Fatal(err)
	}
	srv.SetModelDigest("judge:latest", "dj2")
	res, err := newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 2}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "b")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.ModelCalls != 2 || res.Counts.CacheHits != 2 {
		t.Fatalf("after judge re-pull: counts %+v, want 2 judge calls and 2 generation hits", res.Counts)
	}
}

func TestInterruptAndResumeEachItemOnce(t *testing.T) {
	srv := server(t, goodJudge)
	dir := filepath.Join(t.TempDir(), "run")
	cacheDir := t.TempDir()
	interrupted(t, srv, cacheDir, dir, 20)
	m, _ := rundir.ReadManifest(dir)
	if m.Status != "interrupted" {
		t.Fatalf("status %q", m.Status)
	}
	// Simulate a kill -9 in the middle of a write: a torn last line.
	f, _ := os.OpenFile(filepath.Join(dir, "records.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"suite":"test","item":"item-1`)
	f.Close()

	res, err := newEngine(t, srv.Host(), cacheDir).Run(context.Background(), (&testSuite{n: 20}).Task(), engine.RunSpec{Dir: dir, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Completed != 20 || res.Manifest.Status != "complete" || len(res.Manifest.Resumed) != 1 {
		t.Fatalf("after resume: %+v", res.Counts)
	}
	_, recs, err := engine.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, r := range recs {
		seen[r.Item]++
	}
	if len(seen) != 20 {
		t.Fatalf("%d distinct items, want 20", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("item %s recorded %d times", id, n)
		}
	}
}

func TestUnparseableJudgeIsRetriedThenRecorded(t *testing.T) {
	var attempts atomic.Int32
	srv := server(t, func(prompt string) fakeollama.Reply {
		attempts.Add(1)
		if strings.Contains(prompt, "question 1") {
			return fakeollama.Reply{Content: `{"score": 9}`} // out of range: a parse failure
		}
		if strings.Contains(prompt, "question 2") {
			return fakeollama.Reply{Content: "I think it is quite good."}
		}
		return fakeollama.Reply{Content: `{"score": 2}`}
	})
	dir := filepath.Join(t.TempDir(), "run")
	res, err := newEngine(t, srv.Host(), t.TempDir()).Run(context.Background(), (&testSuite{n: 3}).Task(), engine.RunSpec{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Completed != 3 || res.Counts.JudgeFailures != 2 {
		t.Fatalf("counts = %+v, want 3 completed with 2 judge failures", res.Counts)
	}
	if attempts.Load() != 5 { // 1 good + 2 × (first try + 1 repair)
		t.Fatalf("judge asked %d times, want 5", attempts.Load())
	}
	_, recs, _ := engine.ReadRun(dir)
	f := recs[1].Failures
	if len(f) != 1 || len(f[0].Raw) != 2 || f[0].Raw[0] != `{"score": 9}` || !strings.Contains(f[0].Reason, "outside 1..5") {
		t.Fatalf("failure record = %+v", f)
	}
	var r result
	json.Unmarshal(recs[1].Data, &r)
	if r.Scored {
		t.Fatal("a failed judgement came back scored")
	}
	// The repair turn shows the judge its reply and what was wrong.
	last := srv.Chats()
	found := false
	for _, c := range last {
		if len(c.Messages) == 3 && c.Messages[1].Role == "assistant" && strings.Contains(c.Messages[2].Content, "could not be used") {
			found = true
		}
	}
	if !found {
		t.Fatal("no repair turn sent")
	}
}

// --judge-repairs sets how often a judge whose reply does not read is
// asked again; a verdict read from a repair turn is counted
// (JudgeRepaired), and with none asked each stays unscored.
func TestJudgeRepairs(t *testing.T) {
	for _, tc := range []struct {
		repairs, asked, failures, repaired int
	}{
		{0, 3, 3, 0},
		{1, 6, 0, 3},
		{2, 6, 0, 3}, // read on the first repair turn: no second
	} {
		var asked atomic.Int32
		srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
			if r.Model != "judge" {
				return fakeollama.Reply{Content: "answer to " + r.LastUser()}
			}
			asked.Add(1)
			if strings.Contains(r.LastUser(), "could not be used") {
				return fakeollama.Reply{Content: `{"score": 3}`}
			}
			return fakeollama.Reply{Content: "Quite good, I would say."}
		}, fakeollama.Model{Name: "gen:latest", Digest: "dg"}, fakeollama.Model{Name: "judge:latest", Digest: "dj"})
		t.Cleanup(srv.Close)
		e := newEngine(t, srv.Host(), t.TempDir())
		e.Config.JudgeRepairs = tc.repairs
		dir := filepath.Join(t.TempDir(), "run")
		res, err := e.Run(context.Background(), (&testSuite{n: 3}).Task(), engine.RunSpec{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		// Each repair turn's log says its verdict is counted.
		_, recs, err := engine.ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		logged := 0
		for _, r := range recs {
			for _, c := range r.Calls {
				if c.Kind == "repair" {
					logged++
					if !c.Counted {
						t.Errorf("--judge-repairs %d: %s: a repair turn logged as not counted", tc.repairs, r.Item)
					}
				}
			}
		}
		if logged != tc.asked-3 {
			t.Errorf("--judge-repairs %d: %d repair turns logged, want %d", tc.repairs, logged, tc.asked-3)
		}
		if int(asked.Load()) != tc.asked || res.Counts.JudgeFailures != tc.failures || res.Counts.JudgeRepaired != tc.repaired {
			t.Errorf("--judge-repairs %d: judge asked %d times, %d unscored, %d read from a repair turn; want %d, %d, %d",
				tc.repairs, asked.Load(), res.Counts.JudgeFailures, res.Counts.JudgeRepaired, tc.asked, tc.failures, tc.repaired)
		}
	}
}

func TestTransientErrorsAreRetried(t *testing.T) {
	var n atomic.Int32
	srv := server(t, func(string) fakeollama.Reply {
		if n.Add(1) <= 2 {
			return fakeollama.Reply{Status: 503, Error: "queue full"}
		}
		return fakeollama.Reply{Content: `{"score": 5}`}
	})
	e := newEngine(t, srv.Host(), t.TempDir())
	e.Config.Parallel = 1
	res, err := e.Run(context.Background(), (&testSuite{n: 1}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Retries != 2 || res.Counts.Completed != 1 {
		t.Fatalf("counts = %+v", res.Counts)
	}
}

// A model error that persists fails the item (errors.jsonl), the run goes on,
// and resume redoes only that item.
func TestFailedItemIsRedoneOnResume(t *testing.T) {
	broken := atomic.Bool{}
	broken.Store(true)
	srv := server(t, func(p string) fakeollama.Reply {
		if broken.Load() && strings.Contains(p, "question 3") {
			return fakeollama.Reply{Status: 500, Error: "model runner has unexpectedly stopped"}
		}
		return fakeollama.Reply{Content: `{"score": 1}`}
	})
	dir := filepath.Join(t.TempDir(), "run")
	cache := t.TempDir()
	res, err := newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 5}).Task(), engine.RunSpec{Dir: dir})
	if !errors.Is(err, engine.ErrIncomplete) || res.Counts.Completed != 4 || res.Counts.Failed != 1 {
		t.Fatalf("err %v counts %+v", err, res.Counts)
	}
	if !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("error does not say how to resume: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "errors.jsonl"))
	if !strings.Contains(string(b), "item-03") || !strings.Contains(string(b), "unexpectedly stopped") {
		t.Fatalf("errors.jsonl = %s", b)
	}
	broken.Store(false)
	first := res.Counts
	res, err = newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 5}).Task(), engine.RunSpec{Dir: dir, Resume: true})
	// The manifest's books cover both sessions: the resume's one call is
	// added to the first session's.
	if err != nil || res.Counts.Completed != 5 || res.Counts.ModelCalls != first.ModelCalls+1 || res.Counts.Retries != first.Retries {
		t.Fatalf("resume: err %v counts %+v (first session %+v)", err, res.Counts, first)
	}
	// A resume with nothing left to do changes neither the books nor the end.
	done, _ := rundir.ReadManifest(dir)
	_, err = newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 5}).Task(), engine.RunSpec{Dir: dir, Resume: true})
	again, _ := rundir.ReadManifest(dir)
	if err != nil || !reflect.DeepEqual(again.Counts, done.Counts) || !again.Ended.Equal(*done.Ended) || again.Status != "complete" {
		t.Fatalf("no-op resume: err %v counts %+v → %+v, ended %v → %v", err, done.Counts, again.Counts, done.Ended, again.Ended)
	}
	// Two sessions did work: the first (5 items) and the resume (1); the
	// no-op resume is a "checked" time only.
	if len(again.Sessions) != 2 || again.Sessions[0].Items != 5 || again.Sessions[1].Items != 1 || again.Sessions[1].Counts.ModelCalls != 1 ||
		again.Sessions[0].Counts.ModelCalls+1 != again.Counts.ModelCalls || again.Checked == nil || len(again.Resumed) != 1 {
		t.Fatalf("sessions %+v, checked %v, resumed %v", again.Sessions, again.Checked, again.Resumed)
	}
}

// A server that goes away stops the run with a clear message; nothing
// completed is lost.
func TestUnreachableServerStopsRun(t *testing.T) {
	srv := server(t, goodJudge)
	var n atomic.Int32
	var gone sync.Once
	srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
		// From the fifth call on the server is gone: it takes no new
		// connection, and drops the open one mid-reply — at once, not
		// whenever a goroutine closing it gets to run (items that complete
		// quickly could all finish first).
		if n.Add(1) >= 5 {
			gone.Do(func() { srv.Listener.Close() })
			return fakeollama.Reply{Content: "a", Cut: true}
		}
		if r.Model == "judge" {
			return fakeollama.Reply{Content: `{"score": 2}`}
		}
		return fakeollama.Reply{Content: "a"}
	})
	e := newEngine(t, srv.Host(), t.TempDir())
	e.Config.Parallel, e.Config.ItemsInFlight = 1, 1 // items one at a time: some complete before the server goes
	dir := filepath.Join(t.TempDir(), "run")
	_, err := e.Run(context.Background(), (&testSuite{n: 10}).Task(), engine.RunSpec{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("err = %v", err)
	}
	_, recs, _ := engine.ReadRun(dir)
	if len(recs) < 2 || len(recs) >= 10 {
		t.Fatalf("%d records kept", len(recs))
	}
}

func TestReadRecordsNamesDamagedLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "records.jsonl")
	os.WriteFile(p, []byte("{\"item\":\"a\"}\nnot json\n{\"item\":\"b\"}\n"), 0o644)
	_, _, err := rundir.ReadRecords(p)
	if err == nil || !strings.Contains(err.Error(), "records.jsonl:2") {
		t.Fatalf("err = %v, want it to name line 2", err)
	}
}

func TestDecodeJSON(t *testing.T) {
	type v struct {
		A int    `json:"a"`
		B string `json:"b,omitempty"`
	}
	tests := []struct {
		raw     string
		wantErr string
	}{
		{`{"a": 1}`, ""},
		{"Sure! ```json\n{\"a\": 2, \"b\": \"x\"}\n``` done", ""},
		{`{"b": "x"}`, `field "a" missing`},
		{`{"a": "one"}`, "cannot unmarshal"},
		{``, "empty reply"},
	}
	for _, tt := range tests {
		var out v
		err := judging.DecodeJSON(tt.raw, &out)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("DecodeJSON(%q) = %v, want %q", tt.raw, err, tt.wantErr)
		}
	}
}

func TestSamplesAreCachedSeparately(t *testing.T) {
	var n atomic.Int32
	srv := server(t, goodJudge)
	srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
		return fakeollama.Reply{Content: fmt.Sprint(n.Add(1))}
	})
	e := newEngine(t, srv.Host(), t.TempDir())
	c := e.NewCalls("x")
	req := localmodels.ChatRequest{Model: "gen", Messages: []localmodels.Message{{Role: "user", Content: "q"}}}
	var got []string
	for round := 0; round < 2; round++ {
		for s := 0; s < 3; s++ {
			r, err := c.Chat(context.Background(), "g", req, s)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r.Content)
		}
	}
	if strings.Join(got, ",") != "1,2,3,1,2,3" {
		t.Fatalf("samples = %v, want three draws then the same three from cache", got)
	}
}

func TestEmbedCachesPerText(t *testing.T) {
	srv := server(t, goodJudge)
	e := newEngine(t, srv.Host(), t.TempDir())
	c := e.NewCalls("x")
	v1, err := c.Embed(context.Background(), "s", "gen", []string{"alpha", "beta"})
	if err != nil {
		t.Fatal(err)
	}
	v2, err := c.Embed(context.Background(), "s", "gen", []string{"beta", "gamma"})
	if err != nil {
		t.Fatal(err)
	}
	calls, inputs := srv.EmbedCalls()
	if calls != 2 || inputs != 3 {
		t.Fatalf("%d embed calls with %d inputs, want 2 with 3 (beta cached)", calls, inputs)
	}
	if fmt.Sprint(v1[1]) != fmt.Sprint(v2[0]) {
		t.Fatal("cached vector differs")
	}
}

// An embedding call carries the serving settings a chat call to the same
// model carries — num_ctx, num_thread and keep_alive — so that Ollama does
// not reload the model's runner between the two kinds of call.
func TestEmbedCarriesChatServingSettings(t *testing.T) {
	srv := server(t, goodJudge)
	e := newEngine(t, srv.Host(), t.TempDir())
	e.Config.NumCtx, e.Config.NumThread, e.Config.KeepAlive = 8192, 1, 7*time.Minute
	c := e.NewCalls("x")
	if _, err := c.Chat(context.Background(), "g", localmodels.ChatRequest{Model: "gen", Messages: []localmodels.Message{{Role: "user", Content: "hi"}}}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Embed(context.Background(), "s", "gen", []string{"alpha"}); err != nil {
		t.Fatal(err)
	}
	chats, embeds := srv.Chats(), srv.EmbedRequests()
	if len(chats) != 1 || len(embeds) != 1 {
		t.Fatalf("%d chats, %d embeds", len(chats), len(embeds))
	}
	for _, k := range []string{"num_ctx", "num_thread"} {
		if fmt.Sprint(embeds[0].Options[k]) != fmt.Sprint(chats[0].Options[k]) || embeds[0].Options[k] == nil {
			t.Errorf("%s: embed %v, chat %v", k, embeds[0].Options[k], chats[0].Options[k])
		}
	}
	if fmt.Sprint(embeds[0].KeepAlive) != "7m0s" {
		t.Errorf("embed keep_alive %v, want 7m0s as the chat's", embeds[0].KeepAlive)
	}
}

// An embedding is cached under the window it was asked with: the server
// truncates a longer input to it, so another --num-ctx is another call.
func TestEmbedCacheKeyHoldsTheWindow(t *testing.T) {
	srv := server(t, goodJudge)
	cache := t.TempDir()
	for _, n := range []int{1024, 2048, 2048} {
		e := newEngine(t, srv.Host(), cache)
		e.Config.NumCtx = n
		if _, err := e.NewCalls("x").Embed(context.Background(), "s", "gen", []string{"alpha"}); err != nil {
			t.Fatal(err)
		}
	}
	if calls, _ := srv.EmbedCalls(); calls != 2 {
		t.Fatalf("%d embed calls for windows 1024, 2048, 2048; want 2 (the second 2048 cached)", calls)
	}
}

// Identical requests in flight at once make one model call; the others
// share its reply and count as cache hits.
func TestConcurrentIdenticalCallsShareOne(t *testing.T) {
	var n atomic.Int32
	srv := server(t, goodJudge)
	srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
		return fakeollama.Reply{Content: fmt.Sprint(n.Add(1)), Delay: 200 * time.Millisecond}
	})
	e := newEngine(t, srv.Host(), t.TempDir())
	e.Config.Parallel = 4
	req := localmodels.ChatRequest{Model: "gen", Messages: []localmodels.Message{{Role: "user", Content: "q"}}}
	got := make([]string, 4)
	errs := make(chan error, 4)
	for i := range got {
		go func(i int) {
			r, err := e.NewCalls(fmt.Sprint("item-", i)).Chat(context.Background(), "g", req, 0)
			got[i] = r.Content
			errs <- err
		}(i)
	}
	for range got {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n.Load() != 1 || strings.Join(got, ",") != "1,1,1,1" {
		t.Fatalf("%d calls, replies %v; want one call shared by all", n.Load(), got)
	}
	if st := e.Stats(); st.ModelCalls != 1 || st.CacheHits != 3 {
		t.Errorf("stats: %d calls, %d hits; want 1 and 3", st.ModelCalls, st.CacheHits)
	}
}

// TestPaperReaderReadsTheWholeReply: the authors' reading rule sees the
// reply as their code did (only reasoning removed); halu's reader sees it
// without the quoted evaluated text. Engine.Readers picks which decides.
func TestPaperReaderReadsTheWholeReply(t *testing.T) {
	const quoted = "Maglev pods float over the rails."
	srv := server(t, func(string) fakeollama.Reply {
		return fakeollama.Reply{Content: "<think>hmm</think>" + quoted + " VERDICT"}
	})
	identity := func(s string) (string, error) { return strings.Join(strings.Fields(s), " "), nil }
	for readers, want := range map[string]string{judging.ReadersPaper: quoted + " VERDICT", judging.ReadersHalu: "VERDICT"} {
		e := newEngine(t, srv.Host(), t.TempDir())
		e.Config.Readers = readers
		req := localmodels.ChatRequest{Model: "judge", Messages: []localmodels.Message{{Role: "user", Content: "judge " + readers}}}
		got, ok, err := judging.JudgeWith(context.Background(), e.NewCalls("x"), "judge", req, nil,
			judging.Reader[string]{Text: identity, Paper: identity, Quoted: []string{quoted}})
		if err != nil || !ok || got != want {
			t.Errorf("%s: %q %v %v, want %q", readers, got, ok, err, want)
		}
	}
}

// TestCutReplyLosesItsLastWord: a judge reply stopped at its length cap
// that ends in "Score: 1" may have been cut from "Score: 10": the trailing
// word is not read, so the judgement is unscored, never 1. The same reply
// finished by the judge reads 1; a cut reply whose verdict is followed by
// more text keeps it.
func TestCutReplyLosesItsLastWord(t *testing.T) {
	score := judging.NewLabelled("score", "score", judging.ScoreValue)
	read := func(s string) (int, error) { return score.Score(s, 1, 10) }
	for _, tc := range []struct {
		content, done string
		ok            bool
	}{
		{"Score: 1", "length", false},
		{"Score: 1", "stop", true},
		{"Score: 1\nThe response misses", "length", true},
	} {
		srv := server(t, func(string) fakeollama.Reply { return fakeollama.Reply{Content: tc.content, DoneReason: tc.done} })
		req := localmodels.ChatRequest{Model: "judge", Messages: []localmodels.Message{{Role: "user", Content: "rate"}}}
		got, ok, err := judging.JudgeWith(context.Background(), newEngine(t, srv.Host(), t.TempDir()).NewCalls("x"), "judge", req, nil, judging.Reader[int]{Text: read})
		if err != nil || ok != tc.ok || ok && got != 1 {
			t.Errorf("%q (%s): %d %v %v, want ok %v", tc.content, tc.done, got, ok, err, tc.ok)
		}
	}
}

// A stream cut before the server's final message is a transport error: the
// fragment is neither cached nor recorded, the call is retried, and the
// record holds the complete answer.
func TestCutStreamIsRetriedNeverCached(t *testing.T) {
	var gens atomic.Int32
	srv := server(t, goodJudge)
	srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if r.Model == "judge" {
			return goodJudge("")
		}
		if gens.Add(1) == 1 {
			return fakeollama.Reply{Chunks: []string{"answer ", "to"}, Cut: true}
		}
		return fakeollama.Reply{Chunks: []string{"answer ", "to ", r.LastUser()}}
	})
	cache := t.TempDir()
	e := newEngine(t, srv.Host(), cache)
	e.Config.Parallel, e.Config.ItemsInFlight = 1, 1
	dir := filepath.Join(t.TempDir(), "r")
	res, err := e.Run(context.Background(), (&testSuite{n: 1}).Task(), engine.RunSpec{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Retries != 1 || res.Counts.Completed != 1 || gens.Load() != 2 {
		t.Fatalf("counts %+v, %d generations; want 1 retry, 2 generations", res.Counts, gens.Load())
	}
	_, recs, err := engine.ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	var r result
	json.Unmarshal(recs[0].Data, &r)
	if r.Answer != "answer to question 0" || recs[0].Calls[0].DoneReason != "stop" {
		t.Fatalf("record = %+v", recs[0])
	}
	// A fresh run finds the complete answer in the cache, not the fragment.
	res, err = newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 1}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r2")})
	if err != nil || res.Counts.ModelCalls != 0 {
		t.Fatalf("second run: %v, counts %+v", err, res.Counts)
	}
	_, recs2, _ := engine.ReadRun(res.Dir)
	if string(recs2[0].Data) != string(recs[0].Data) {
		t.Fatalf("cached answer %s, want %s", recs2[0].Data, recs[0].Data)
	}
}

// Cache entries damaged on disk are dropped, fetched again and counted;
// the line fetched again answers from then on (a later line of a key
// before an earlier one); leftover temporary files of dead writers are
// removed on open.
func TestDamagedCacheEntriesAreRefetched(t *testing.T) {
	srv := server(t, goodJudge)
	cache := t.TempDir()
	dir1 := filepath.Join(t.TempDir(), "r1")
	if _, err := newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 5}).Task(), engine.RunSpec{Dir: dir1}); err != nil {
		t.Fatal(err)
	}
	packs, _ := filepath.Glob(filepath.Join(cache, "v3", "packs", "*.pack"))
	entries := engine.PackLines(t, cache)
	if len(packs) != 1 || len(entries) != 10 {
		t.Fatalf("%d packs of %d cache entries, want 1 of 10", len(packs), len(entries))
	}
	damage := []func(b string) string{
		func(b string) string { return b[:len(b)/2] }, // cut short
		func(b string) string { return alter(b, 0) },  // the value altered, its checksum not
		func(b string) string { return alter(b, 5) },
		func(b string) string { return strings.Replace(b, `"sha256":"`, `"sha256":"0`, 1) },
		func(b string) string { return b[:strings.Index(b, `"value":`)] + `"value":null}` },
		withoutDoneReason, // a cut-off reply with a checksum made for it
	}
	for i, f := range damage {
		entries[i] = f(entries[i])
	}
	damaged := len(damage)
	// An entry an older halu wrote, before entries carried a checksum: not
	// damaged, counted apart, and fetched again (nothing proves its value
	// is the one written).
	var oe map[string]any
	json.Unmarshal([]byte(entries[damaged]), &oe)
	delete(oe, "sha256")
	ob, _ := json.Marshal(oe)
	entries[damaged] = string(ob)
	// A line zeroed (a power cut after the write: appends are not synced)
	// names no key: its key is a miss, fetched again, not counted.
	entries[damaged+1] = strings.Repeat("\x00", len(entries[damaged+1]))
	// The last line cut short without its newline (a kill mid-write): not
	// whole, a miss likewise.
	last := entries[len(entries)-1]
	body := strings.Join(entries[:len(entries)-1], "\n") + "\n" + last[:len(last)/2]
	if err := os.WriteFile(packs[0], []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	// A temporary file of a writer that is gone (no such PID).
	tmp := filepath.Join(cache, "v3", "tmp", "999999999-123")
	if err := os.WriteFile(tmp, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir2 := filepath.Join(t.TempDir(), "r2")
	res, err := newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 5}).Task(), engine.RunSpec{Dir: dir2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("stale temporary file kept: %v", err)
	}
	if res.Counts.CacheDamaged != damaged || res.Counts.CacheUnchecked != 1 || res.Counts.ModelCalls != damaged+3 || res.Counts.CacheHits != 10-damaged-3 {
		t.Fatalf("counts %+v: want %d damaged entries and 1 unchecked refetched, 2 misses", res.Counts, damaged)
	}
	a, b := readLines(t, filepath.Join(dir1, "records.jsonl")), readLines(t, filepath.Join(dir2, "records.jsonl"))
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatal("records after refetching differ from the first run's")
	}
	// The lines fetched again answer a third run: every call a hit.
	res, err = newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 5}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r3")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.CacheHits != 10 || res.Counts.ModelCalls != 0 || res.Counts.CacheDamaged != 0 {
		t.Fatalf("third run: counts %+v, want 10 hits", res.Counts)
	}
}

// withoutDoneReason is a cache entry whose reply lost its done reason,
// with its checksum recomputed: sound on disk, but not a whole reply.
func withoutDoneReason(b string) string {
	var e struct {
		Key   string         `json:"key"`
		Sum   string         `json:"sha256"`
		Value map[string]any `json:"value"`
	}
	if err := json.Unmarshal([]byte(b), &e); err != nil || e.Value["done_reason"] == nil {
		panic(fmt.Sprintf("not a chat entry: %s", b))
	}
	delete(e.Value, "done_reason")
	v, _ := json.Marshal(e.Value)
	sum := sha256.Sum256(v)
	out, _ := json.Marshal(map[string]any{"key": e.Key, "sha256": hex.EncodeToString(sum[:]), "value": json.RawMessage(v)})
	return string(out)
}

// A cache that cannot be written costs the caching only: every item is
// recorded, the failure is said once and counted.
func TestCacheWriteFailureIsNotFatal(t *testing.T) {
	srv := server(t, goodJudge)
	cache := t.TempDir()
	e := newEngine(t, srv.Host(), cache)
	var log strings.Builder
	e.Log = &log
	// No pack can be made where the cache makes them (this fails for
	// root too, unlike a read-only directory).
	tmp := filepath.Join(cache, "v3", "packs")
	if err := os.RemoveAll(tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tmp, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background(), (&testSuite{n: 4}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Completed != 4 || res.Counts.CacheWriteFailures != 8 || strings.Count(log.String(), "not cached") != 1 {
		t.Fatalf("counts %+v\nlog: %s", res.Counts, log.String())
	}
}

// A cache cleared while a run writes to it (its directories removed) is
// written again: a write finds its pack gone and makes the directory and
// a pack anew.
func TestCacheClearedUnderAWriter(t *testing.T) {
	dir := t.TempDir()
	c, err := engine.OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, b := engine.Key("a"), engine.Key("b")
	for _, step := range []struct {
		name  string
		key   string
		clear bool
	}{{"first", a, false}, {"after the cache was cleared", b, true}, {"again, into a directory made again", engine.Key("c"), false}} {
		if step.clear {
			if err := os.RemoveAll(filepath.Join(dir, "v3")); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Put(step.key, step.name); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		other, err := engine.OpenCache(dir)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if hit, err := other.Get(step.key, &got); !hit || err != nil || got != step.name {
			t.Fatalf("%s: hit %v, %q, %v", step.name, hit, got, err)
		}
	}
}

// An entry Put stores answers Get at once, and another reader from disk;
// a write that fails is said, and the entry answers not.
func TestPut(t *testing.T) {
	dir := t.TempDir()
	c, err := engine.OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	key := engine.Key("a request")
	if err := c.Put(key, map[string]int{"n": 7}); err != nil {
		t.Fatal(err)
	}
	var got map[string]int
	if hit, err := c.Get(key, &got); !hit || err != nil || got["n"] != 7 {
		t.Fatalf("once stored: hit %v, %v, %v", hit, got, err)
	}
	other, err := engine.OpenCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	if hit, err := other.Get(key, &got); !hit || err != nil || got["n"] != 7 {
		t.Fatalf("from disk: hit %v, %v, %v", hit, got, err)
	}

	// No pack can be made: the write fails.
	packs := filepath.Join(dir, "v3", "packs")
	if err := os.RemoveAll(packs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(packs, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := engine.Key("another request")
	if err := c.Put(bad, map[string]int{"n": 8}); err == nil {
		t.Error("a failed write was not said")
	}
	if hit, _ := c.Get(bad, &got); hit {
		t.Error("an entry whose write failed still answers")
	}
}

// alter changes one letter or digit of an entry's value, the skip-th after
// its start, leaving the rest (and the checksum) as they were.
func alter(b string, skip int) string {
	out := []byte(b)
	i := strings.Index(b, `"value":`)
	for i += len(`"value":`); i < len(out); i++ {
		c := out[i]
		if c >= 'a' && c <= 'y' || c >= '0' && c <= '8' {
			if skip == 0 {
				out[i] = c + 1
				return string(out)
			}
			skip--
		}
	}
	panic("nothing to alter")
}

// A run holds its directory: a second run or a resume on it fails at once,
// naming the holder, and the first run's directory stays valid. A manifest
// left saying "running" by a process that died reads as interrupted.
func TestRunDirectoryIsLocked(t *testing.T) {
	release := make(chan struct{})
	srv := server(t, goodJudge)
	srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if r.Model == "judge" {
			return goodJudge("")
		}
		<-release
		return fakeollama.Reply{Content: "answer to " + r.LastUser()}
	})
	dir := filepath.Join(t.TempDir(), "r")
	first := make(chan error, 1)
	go func() {
		_, err := newEngine(t, srv.Host(), t.TempDir()).Run(context.Background(), (&testSuite{n: 3}).Task(), engine.RunSpec{Dir: dir})
		first <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for len(srv.Chats()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if !rundir.Live(dir) {
		t.Fatal("a running run's directory is not live")
	}
	for _, spec := range []engine.RunSpec{{Dir: dir}, {Dir: dir, Resume: true}} {
		start := time.Now()
		_, err := newEngine(t, srv.Host(), t.TempDir()).Run(context.Background(), (&testSuite{n: 3}).Task(), spec)
		if !errors.Is(err, rundir.ErrRunLocked) || !strings.Contains(err.Error(), fmt.Sprintf("PID %d", os.Getpid())) {
			t.Errorf("second run (resume %v): %v", spec.Resume, err)
		}
		if time.Since(start) > 2*time.Second {
			t.Errorf("second run waited %s", time.Since(start))
		}
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	m, recs, err := engine.ReadRun(dir)
	if err != nil || m.Status != "complete" || len(recs) != 3 {
		t.Fatalf("after the first run: %v, status %q, %d records", err, m.Status, len(recs))
	}

	// A manifest saying "running" with no process holding the directory.
	b, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(strings.Replace(string(b), `"status": "complete"`, `"status": "running"`, 1)), 0o644)
	if m, err := rundir.ReadManifest(dir); err != nil || m.Status != "interrupted" {
		t.Fatalf("dead run's status: %v %v", m, err)
	}
}

// A resume with another config than the run's refuses, naming what differs
// (halu build cfaith resumes its build this way).
func TestResumeWithOtherConfigRefuses(t *testing.T) {
	srv := server(t, goodJudge)
	dir := filepath.Join(t.TempDir(), "r")
	cfg := map[string]any{"lang": "zh", "agent": "gen"}
	if _, err := newEngine(t, srv.Host(), t.TempDir()).Run(context.Background(), (&testSuite{n: 2}).Task(), engine.RunSpec{Dir: dir, Config: cfg}); err != nil {
		t.Fatal(err)
	}
	_, err := newEngine(t, srv.Host(), t.TempDir()).Run(context.Background(), (&testSuite{n: 2}).Task(),
		engine.RunSpec{Dir: dir, Resume: true, Config: map[string]any{"lang": "en", "agent": "gen"}})
	if !errors.Is(err, engine.ErrSettingsDiffer) || !strings.Contains(err.Error(), `lang: "zh" → "en"`) {
		t.Fatalf("resume with another language: %v", err)
	}
	if _, err := newEngine(t, srv.Host(), t.TempDir()).Run(context.Background(), (&testSuite{n: 2}).Task(),
		engine.RunSpec{Dir: dir, Resume: true, Config: cfg}); err != nil {
		t.Fatalf("resume with the run's config: %v", err)
	}
}

// A judge that can think is asked not to (think: false), so that its small
// reply cap goes to the verdict; a model that cannot is sent no think
// value; the call log and the summary say which.
func TestThinkingJudgesAskedNotToThink(t *testing.T) {
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if r.Model == "judge" {
			return goodJudge("")
		}
		return fakeollama.Reply{Content: "answer to " + r.LastUser()}
	},
		fakeollama.Model{Name: "gen:latest", Digest: "dg", Family: "llama", ParameterCount: 1e9, Capabilities: []string{"completion", "thinking"}},
		fakeollama.Model{Name: "judge:latest", Digest: "dj", Family: "qwen3", ParameterCount: 1e9, Capabilities: []string{"completion", "thinking"}},
	)
	t.Cleanup(srv.Close)
	res, err := newEngine(t, srv.Host(), t.TempDir()).Run(context.Background(), (&testSuite{n: 2}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range srv.Chats() {
		want := "null"
		if c.Model == "judge" {
			want = "false"
		}
		if got := strings.TrimSpace(string(c.Think)); got != want && !(want == "null" && got == "") {
			t.Errorf("%s call sent think %q, want %s", c.Model, got, want)
		}
	}
	if !strings.Contains(strings.Join(res.Summary.Notes, "\n"), "asked not to think (think: false)") {
		t.Errorf("notes: %v", res.Summary.Notes)
	}
}

// A judge whose every reply ends before the server's final message (a
// runner that crashes on the request) gives an unscored judgement with the
// fragment kept, not a lost item; nothing of it is cached.
func TestJudgeCutOnEveryAttemptIsUnscored(t *testing.T) {
	srv := server(t, func(string) fakeollama.Reply {
		return fakeollama.Reply{Chunks: []string{`{"sco`}, Cut: true}
	})
	cache := t.TempDir()
	res, err := newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 2}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Completed != 2 || res.Counts.JudgeFailures != 2 {
		t.Fatalf("counts %+v", res.Counts)
	}
	_, recs, _ := engine.ReadRun(res.Dir)
	f := recs[0].Failures
	if len(f) != 1 || f[0].Raw[0] != `{"sco` || !strings.Contains(f[0].Reason, "before its final message") {
		t.Fatalf("failures %+v", f)
	}
	// Only the two generations were cached.
	if n := len(engine.PackLines(t, cache)); n != 2 {
		t.Fatalf("%d cache entries, want the 2 generations", n)
	}
}

// A run whose every call is cached needs no server: with the server gone,
// the same run into a new directory works from the cache alone — the
// fingerprints the cache recorded when the server served the models —
// makes no call, records the same data, and says it was offline. A run
// that needs a call the cache lacks fails those items at once (no
// retries); with no cache record of a model it fails as before, and the
// directory it made is removed.
func TestCachedRunNeedsNoServer(t *testing.T) {
	srv := server(t, goodJudge)
	host := srv.Host()
	cache := t.TempDir()
	dir1 := filepath.Join(t.TempDir(), "r1")
	if _, err := newEngine(t, host, cache).Run(context.Background(), (&testSuite{n: 5}).Task(), engine.RunSpec{Dir: dir1}); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	var log strings.Builder
	e := newEngine(t, host, cache)
	e.Log = &log
	dir2 := filepath.Join(t.TempDir(), "r2")
	res, err := e.Run(context.Background(), (&testSuite{n: 5}).Task(), engine.RunSpec{Dir: dir2})
	if err != nil {
		t.Fatalf("offline rerun: %v\n%s", err, log.String())
	}
	if res.Counts.ModelCalls != 0 || res.Counts.Completed != 5 {
		t.Fatalf("counts %+v", res.Counts)
	}
	m, recs2, _ := engine.ReadRun(dir2)
	_, recs1, _ := engine.ReadRun(dir1)
	for i := range recs1 {
		if string(recs1[i].Data) != string(recs2[i].Data) {
			t.Errorf("record %d: %s, want %s", i, recs2[i].Data, recs1[i].Data)
		}
	}
	if !m.Server.Offline || m.Server.Seen == nil || !strings.Contains(log.String(), "working from the response cache alone") {
		t.Errorf("offline not recorded: %+v\n%s", m.Server, log.String())
	}
	if !strings.Contains(strings.Join(res.Summary.Notes, "\n"), "offline: no server was reachable") {
		t.Errorf("summary does not say it was offline: %v", res.Summary.Notes)
	}
	// More items than were cached: the new ones fail at once.
	e = newEngine(t, host, cache)
	e.Log = &log
	res, err = e.Run(context.Background(), (&testSuite{n: 7}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r3")})
	if res == nil || res.Counts.Completed != 5 || res.Counts.Failed != 2 || res.Counts.Retries != 0 {
		t.Fatalf("partly cached: %v, %+v", err, res)
	}
	// A cache that never saw the models: no server, no run, no directory.
	e = newEngine(t, host, t.TempDir())
	e.Log = &log
	dir4 := filepath.Join(t.TempDir(), "r4")
	if _, err := e.Run(context.Background(), (&testSuite{n: 1}).Task(), engine.RunSpec{Dir: dir4}); err == nil {
		t.Fatal("a run with no server and an empty cache ran")
	}
	if _, err := os.Stat(dir4); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused run left its directory: %v", err)
	}
}

// The same holds of an OpenAI-compatible server (vLLM here): its models'
// served records are kept under their own API, and a rerun with the server
// gone makes no call and records the same data.
func TestCachedRunNeedsNoServerOpenAI(t *testing.T) {
	f := fakeopenai.New("vllm")
	f.Models = []string{"gen", "judge"}
	f.ReplyFor = func(body map[string]any) string {
		if body["model"] == "judge" {
			return `{"score": 4}`
		}
		return "an answer"
	}
	cache := t.TempDir()
	run := func(dir string) (*engine.Result, string, error) {
		c, err := localmodels.NewOpenAI(f.URL, 5*time.Second, "")
		if err != nil {
			t.Fatal(err)
		}
		cc, err := engine.OpenCache(cache)
		if err != nil {
			t.Fatal(err)
		}
		var log strings.Builder
		e := &engine.Engine{Client: c, Cache: cc, Log: &log,
			Retry: engine.Retry{Base: 10 * time.Millisecond, Max: 20 * time.Millisecond}, Config: engine.EngineConfig{Parallel: 2, ItemsInFlight: 2, JudgeRepairs: 1, Retries: 2}}
		res, err := e.Run(context.Background(), (&testSuite{n: 3}).Task(), engine.RunSpec{Dir: dir})
		return res, log.String(), err
	}
	dir1, dir2 := filepath.Join(t.TempDir(), "r1"), filepath.Join(t.TempDir(), "r2")
	if _, log, err := run(dir1); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	f.Close()
	res, log, err := run(dir2)
	if err != nil {
		t.Fatalf("offline rerun: %v\n%s", err, log)
	}
	if res.Counts.ModelCalls != 0 || res.Counts.Completed != 3 || !res.Manifest.Server.Offline {
		t.Fatalf("counts %+v, server %+v\n%s", res.Counts, res.Manifest.Server, log)
	}
	_, recs1, _ := engine.ReadRun(dir1)
	_, recs2, _ := engine.ReadRun(dir2)
	for i := range recs1 {
		if string(recs1[i].Data) != string(recs2[i].Data) {
			t.Errorf("record %d: %s, want %s", i, recs2[i].Data, recs1[i].Data)
		}
	}
}

// Every generation's record says which options it sent (what the
// authors' code sends is checked against it), the machine's num_thread
// left out; an option it did not send is absent, left to the server.
func TestCallLogRecordsOptionsSent(t *testing.T) {
	srv := server(t, goodJudge)
	e := newEngine(t, srv.Host(), t.TempDir())
	e.Config.NumCtx, e.Config.NumThread = 4096, 2
	dir := filepath.Join(t.TempDir(), "r")
	if _, err := e.Run(context.Background(), (&testSuite{n: 1}).Task(), engine.RunSpec{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	_, recs, _ := engine.ReadRun(dir)
	for _, l := range recs[0].Calls {
		if l.Options["num_ctx"] != float64(4096) || l.Options["num_thread"] != nil || l.Options["top_k"] != nil {
			t.Errorf("%s %s: options %v", l.Stage, l.Kind, l.Options)
		}
	}
	if len(recs[0].Calls) == 0 {
		t.Fatal("no call logged")
	}
}

// A judge's repair turn goes to the server right after its judgement, on
// the judgement's slot, before the calls that waited for it (the server
// holds the judgement's prompt and reply, which begin the repair's): with
// one call in flight and every first judgement unreadable, each repair
// arrives next after its judgement.
func TestRepairFollowsItsJudgement(t *testing.T) {
	srv := repairingServer(t, func(r fakeollama.ChatRequest) string { return "answer to " + r.LastUser() }, 0)
	counts := runOneSlot(t, srv, 12)
	chats := srv.Chats()
	repairs := 0
	for i, c := range chats {
		if c.Model != "judge" || len(c.Messages) != 3 {
			continue
		}
		repairs++
		if prev := chats[i-1]; prev.Model != "judge" || len(prev.Messages) != 1 || prev.Messages[0].Content != c.Messages[0].Content {
			t.Errorf("repair of %q arrived after %s %q", c.Messages[0].Content, prev.Model, prev.Messages[len(prev.Messages)-1].Content)
		}
	}
	if repairs != 12 || counts.HeldSlots != 12 || counts.HoldsLapsed != 0 {
		t.Fatalf("%d repair turns, %d on their judgement's slot, %d slots held in vain; want 12, 12, 0", repairs, counts.HeldSlots, counts.HoldsLapsed)
	}
}

// repairingServer answers generations with answer(request) and judges
// with an unreadable reply first and a readable one in the repair turn,
// each after delay.
func repairingServer(t *testing.T, answer func(fakeollama.ChatRequest) string, delay time.Duration) *fakeollama.Server {
	srv := server(t, goodJudge)
	srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
		switch {
		case r.Model != "judge":
			return fakeollama.Reply{Content: answer(r), Delay: delay}
		case len(r.Messages) == 1:
			return fakeollama.Reply{Content: "I think it is quite good.", Delay: delay}
		}
		return fakeollama.Reply{Content: `{"score": 4}`, Delay: delay}
	})
	return srv
}

// runOneSlot runs n items of the test suite against srv with one call in
// flight and 8 items in progress; every item must complete and be scored.
func runOneSlot(t *testing.T, srv *fakeollama.Server, n int) rundir.Counts {
	t.Helper()
	e := newEngine(t, srv.Host(), t.TempDir())
	e.Config.Parallel, e.Config.ItemsInFlight = 1, 8
	res, err := e.Run(context.Background(), (&testSuite{n: n}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "run")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Completed != n || res.Counts.JudgeFailures != 0 {
		t.Fatalf("counts %+v", res.Counts)
	}
	return res.Counts
}

// A judge whose repair turn is the very call another item is making (the
// same judgement of the same answer) waits for that call's reply without
// keeping its slot from it: with one slot, holding it would stall the
// run until the hold lapsed.
func TestHeldSlotNotKeptFromAnIdenticalCall(t *testing.T) {
	srv := repairingServer(t, func(fakeollama.ChatRequest) string { return "the same answer" }, 5*time.Millisecond)
	lapsed := 0
	for range 5 {
		lapsed += runOneSlot(t, srv, 8).HoldsLapsed
	}
	if lapsed != 0 {
		t.Errorf("%d slots held for a repair that waited on another item's identical call, given back only when the hold lapsed", lapsed)
	}
}

// With --items-in-flight 0 (auto), a server that holds one model at a
// time — each change of model a load, reported in load_duration — has
// halu raise the items in flight, so that it serves more calls of a model
// per load: 200 items of a generation and a judgement take at most 8
// loads (6 seen), where 32 items in flight take 14. A
// server that holds both models (no load after each model's first), or
// a number given, leaves the items in flight as they are.
func TestItemsInFlightRiseWithReloads(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inFlight int
		reloads  bool
		raised   bool
		maxLoads int
	}{
		{"auto, one model at a time", 0, true, true, 8},
		{"auto, both models held", 0, false, false, 2},
		{"32 given, one model at a time", 32, true, false, 16},
	} {
		var mu sync.Mutex
		last, changes, loads := "", 0, 0
		srv := server(t, goodJudge)
		srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
			mu.Lock()
			load := time.Duration(0)
			if r.Model != last {
				if tc.reloads || changes < 2 {
					load = 300 * time.Millisecond
					loads++
				}
				last = r.Model
				changes++
			}
			mu.Unlock()
			if r.Model == "judge" {
				rep := goodJudge("")
				rep.Load = load
				return rep
			}
			return fakeollama.Reply{Content: "answer to " + r.LastUser(), Load: load}
		})
		e := newEngine(t, srv.Host(), t.TempDir())
		var log bytes.Buffer
		e.Config.Parallel, e.Config.ItemsInFlight, e.Log = 1, tc.inFlight, &log
		res, err := e.Run(context.Background(), (&testSuite{n: 200}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "run")})
		if err != nil {
			t.Fatal(err)
		}
		// The books count the loads after each model's first: reloads.
		if res.Counts.Reloads != loads-2 || math.Abs(res.Counts.ReloadSeconds-0.3*float64(loads-2)) > 1e-6 {
			t.Errorf("%s: %d reloads (%g s) counted, want %d", tc.name, res.Counts.Reloads, res.Counts.ReloadSeconds, loads-2)
		}
		raised := strings.Contains(log.String(), "items in flight raised")
		t.Logf("%s: %d model loads; %s", tc.name, loads, strings.Join(regexp.MustCompile(`items in flight raised[^\n]*`).FindAllString(log.String(), -1), "; "))
		if raised != tc.raised || loads > tc.maxLoads {
			t.Errorf("%s: raised %v, want %v; %d model loads, want at most %d\n%s", tc.name, raised, tc.raised, loads, tc.maxLoads, log.String())
		}
	}
}

// chatsSuite's item i asks models[i] one question.
type chatsSuite struct{ models []string }

func (s *chatsSuite) Task() engine.Suite {
	return engine.Suite{Name: "chats", Models: s.Models, Items: s.Items, Process: s.Process, Summarize: s.Summarize}
}
func (s *chatsSuite) Models() []string { return s.models }
func (s *chatsSuite) Items(context.Context) ([]engine.Item, error) {
	return numberedItems(len(s.models)), nil
}
func (s *chatsSuite) Process(ctx context.Context, c *engine.Calls, it engine.Item) (any, error) {
	resp, err := c.Chat(ctx, "generate", localmodels.ChatRequest{Model: s.models[it.Payload.(int)],
		Messages: []localmodels.Message{{Role: "user", Content: fmt.Sprint("question ", it.Payload)}}}, 0)
	return resp.Content, err
}
func (s *chatsSuite) Summarize(*rundir.Records) (*summary.Summary, error) {
	return &summary.Summary{Suite: "chats"}, nil
}

// A reload is a load of weights (with their runner settings) that had
// answered before, under whichever name: a and b are one file, c another,
// and a server holding one runner loads at every call of a, b, c, a — the
// loads of b and of a again are reloads (2), c's and a's first are not.
func TestReloadsCountedPerLoad(t *testing.T) {
	srv := fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		return fakeollama.Reply{Content: "answer", Load: 300 * time.Millisecond}
	},
		fakeollama.Model{Name: "a:latest", Digest: "da", Blob: "sha256:w"},
		fakeollama.Model{Name: "b:latest", Digest: "db", Blob: "sha256:w"},
		fakeollama.Model{Name: "c:latest", Digest: "dc", Blob: "sha256:x"},
	)
	t.Cleanup(srv.Close)
	e := newEngine(t, srv.Host(), t.TempDir())
	e.Config.Parallel, e.Config.ItemsInFlight = 1, 1
	res, err := e.Run(context.Background(), (&chatsSuite{models: []string{"a", "b", "c", "a"}}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "run")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Reloads != 2 || math.Abs(res.Counts.ReloadSeconds-0.6) > 1e-6 {
		t.Errorf("%d reloads (%g s) counted, want 2 (0.6 s)", res.Counts.Reloads, res.Counts.ReloadSeconds)
	}
}

// twoCallSuite makes two calls of one model an item, the second asking the
// same prompt again (a second judge of one answer, aliases of one set of
// weights).
type twoCallSuite struct{ n int }

func (s *twoCallSuite) Task() engine.Suite {
	return engine.Suite{Name: "two", Models: s.Models, Items: s.Items, Process: s.Process, Summarize: s.Summarize}
}
func (s *twoCallSuite) Models() []string                             { return []string{"gen"} }
func (s *twoCallSuite) Items(context.Context) ([]engine.Item, error) { return numberedItems(s.n), nil }
func (s *twoCallSuite) Process(ctx context.Context, c *engine.Calls, it engine.Item) (any, error) {
	for i := range 2 {
		if _, err := c.Chat(ctx, fmt.Sprint("call-", i), localmodels.ChatRequest{Model: "gen",
			Messages: []localmodels.Message{{Role: "user", Content: fmt.Sprintf("item %d: a long shared prompt", it.Payload)}},
			Options:  localmodels.Options{Seed: localmodels.Int(i)}}, 0); err != nil {
			return nil, err
		}
	}
	return it.Payload, nil
}
func (s *twoCallSuite) Summarize(*rundir.Records) (*summary.Summary, error) {
	return &summary.Summary{Suite: "two", Metrics: map[string]float64{}}, nil
}

// With more items in flight than slots, an item's next call takes the
// slot its last call freed, before the calls of other items that wait for
// one (the server still holds the prompt they share there); with as many
// items as slots nothing waits and nothing is held.
func TestItemsNextCallTakesItsSlot(t *testing.T) {
	for _, tc := range []struct {
		items int
		held  bool
	}{{8, true}, {1, false}} {
		srv := server(t, goodJudge)
		srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
			return fakeollama.Reply{Content: "ok", Delay: 2 * time.Millisecond}
		})
		e := newEngine(t, srv.Host(), t.TempDir())
		e.Config.Parallel, e.Config.ItemsInFlight = 1, tc.items
		res, err := e.Run(context.Background(), (&twoCallSuite{n: 8}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "run")})
		if err != nil {
			t.Fatal(err)
		}
		chats := srv.Chats()
		apart := 0
		for i := 0; i+1 < len(chats); i += 2 {
			if chats[i].Messages[0].Content != chats[i+1].Messages[0].Content {
				apart++
			}
		}
		if apart != 0 {
			t.Errorf("%d items in flight: %d of 8 items' two calls were not sent one after the other", tc.items, apart)
		}
		if held := res.Counts.HeldSlots > 0; held != tc.held {
			t.Errorf("%d items in flight: %d slots taken by the item's next call, want some: %v", tc.items, res.Counts.HeldSlots, tc.held)
		}
	}
}

// Every call that finished before an interrupt is kept: a resume asks the
// server only for the calls that did not. The judge is slow, so the
// interrupt (at the fourth judgement) finds items whose generation is done
// and whose judgement is under way; their generations are cache hits on
// resume, and the total of calls made over both sessions is the run's
// calls, each made once.
func TestInterruptKeepsEveryFinishedCall(t *testing.T) {
	srv := server(t, goodJudge)
	dir, cacheDir := filepath.Join(t.TempDir(), "run"), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var judged atomic.Int32
	made := map[string]int{}
	var mu sync.Mutex
	srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
		mu.Lock()
		made[r.Model+" "+r.LastUser()]++
		mu.Unlock()
		if r.Model == "judge" {
			if judged.Add(1) == 4 {
				cancel()
			}
			return fakeollama.Reply{Content: `{"score": 4}`, Delay: 20 * time.Millisecond}
		}
		return fakeollama.Reply{Content: "answer to " + r.LastUser()}
	})
	e := newEngine(t, srv.Host(), cacheDir)
	e.Config.Parallel, e.Config.ItemsInFlight = 4, 8
	if _, err := e.Run(ctx, (&testSuite{n: 12}).Task(), engine.RunSpec{Dir: dir}); !errors.Is(err, engine.ErrInterrupted) {
		t.Fatalf("err = %v, want interrupted", err)
	}
	first := len(srv.Chats())
	res, err := newEngine(t, srv.Host(), cacheDir).Run(context.Background(), (&testSuite{n: 12}).Task(), engine.RunSpec{Dir: dir, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	again := 0
	for _, n := range made {
		if n > 1 {
			again += n - 1
		}
	}
	// Only the calls cut by the interrupt (at most one a slot: 4) are
	// asked again: their replies never reached the engine — mostly the
	// judgements (20 ms each), and now and then a generation the server
	// received as the interrupt landed (the server counts what it
	// received, not what the engine finished). Every finished call was
	// kept, and the resume's hits are those calls of the items the
	// interrupt left unrecorded.
	if res.Manifest.Counts.Completed != 12 || again > e.Config.Parallel || res.Counts.CacheHits == 0 {
		t.Errorf("calls asked again on resume: %d (of %d before the interrupt); resume cache hits %d", again, first, res.Counts.CacheHits)
	}
}
