package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/runner/engine"
	"halu/runner/rundir"
)

// interrupted runs testSuite{n} into dir and stops it after the judge's
// fourth call: some items recorded, the rest left for a resume.
func interrupted(t *testing.T, srv *fakeollama.Server, cache, dir string, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var judged atomic.Int32
	srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if r.Model == "judge" {
			if judged.Add(1) == 4 {
				cancel()
			}
			return fakeollama.Reply{Content: `{"score": 4}`}
		}
		return fakeollama.Reply{Content: "answer to " + r.LastUser()}
	})
	if _, err := newEngine(t, srv.Host(), cache).Run(ctx, (&testSuite{n: n}).Task(), engine.RunSpec{Dir: dir}); !errors.Is(err, engine.ErrInterrupted) {
		t.Fatalf("err = %v, want interrupted", err)
	}
}

// A resume against a server whose models keep their names but serve other
// weights (other digests) is refused before its first model call, naming
// each model and both digests: the items done and the items left would be
// two models' under one name. With the run's own weights back, it resumes.
func TestResumeRefusesOtherWeights(t *testing.T) {
	srv := server(t, goodJudge)
	cache, dir := t.TempDir(), filepath.Join(t.TempDir(), "run")
	interrupted(t, srv, cache, dir, 20)
	_, before, _ := engine.ReadRun(dir)
	srv.SetModelDigest("judge:latest", "dj-new")
	srv.SetModelDigest("gen:latest", "dg-new")
	calls := len(srv.Chats())
	_, err := newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 20}).Task(), engine.RunSpec{Dir: dir, Resume: true})
	if !errors.Is(err, engine.ErrNotTheSameRun) {
		t.Fatalf("resume against other weights: %v", err)
	}
	for _, want := range []string{"judge:latest", "dj → dj-new", "gen:latest", "dg → dg-new"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	if n := len(srv.Chats()); n != calls {
		t.Errorf("%d model calls made by a refused resume", n-calls)
	}
	if _, after, _ := engine.ReadRun(dir); len(after) != len(before) {
		t.Errorf("records %d → %d", len(before), len(after))
	}
	srv.SetModelDigest("judge:latest", "dj")
	srv.SetModelDigest("gen:latest", "dg")
	res, err := newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 20}).Task(), engine.RunSpec{Dir: dir, Resume: true})
	if err != nil || res.Counts.Completed != 20 {
		t.Fatalf("resume with the run's own weights: %v", err)
	}
}

// With no server, a resume goes on with the fingerprints the run recorded,
// never those of another build the cache saw later: a cache that also
// served other weights under the judge's name (which graded differently)
// lends none of their replies to the run.
func TestOfflineResumeUsesTheRunsOwnFingerprints(t *testing.T) {
	srv := server(t, goodJudge)
	cache, dir := t.TempDir(), filepath.Join(t.TempDir(), "run")
	interrupted(t, srv, cache, dir, 10)
	// Other weights under the same name grade 2, in a run of their own
	// that fills the cache (and its record of the judge as last served).
	srv.SetModelDigest("judge:latest", "dj-new")
	srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if r.Model == "judge" {
			return fakeollama.Reply{Content: `{"score": 2}`}
		}
		return fakeollama.Reply{Content: "answer to " + r.LastUser()}
	})
	if _, err := newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 10}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "b")}); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	var log strings.Builder
	e := newEngine(t, srv.Host(), cache)
	e.Log = &log
	res, _ := e.Run(context.Background(), (&testSuite{n: 10}).Task(), engine.RunSpec{Dir: dir, Resume: true})
	if res == nil {
		t.Fatalf("offline resume refused\n%s", log.String())
	}
	m, recs, _ := engine.ReadRun(dir)
	results, err := rundir.DecodeRecords[result](recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Score != 4 {
			t.Errorf("a record graded %d: a reply of the other weights completed the run", r.Score)
		}
	}
	if res.Counts.Completed == 10 {
		t.Errorf("the offline resume completed every item; the run's own judge replies for them were never cached")
	}
	for _, fp := range m.Serving.Fingerprints {
		if fp.Digest == "dj-new" {
			t.Errorf("the manifest names the other build: %+v", fp)
		}
	}
	last := m.Sessions[len(m.Sessions)-1]
	if !last.Offline || !strings.Contains(log.String(), "the run's own") {
		t.Errorf("session %+v not recorded offline, or the log does not say which fingerprints:\n%s", last, log.String())
	}
}

// describedSuite is testSuite with a data file (Suite.Datasets).
type describedSuite struct {
	testSuite
	data string
}

func (s *describedSuite) Prompts() map[string]rundir.PromptInfo { return nil }
func (s *describedSuite) Datasets() []string                    { return []string{s.data} }

func (s *describedSuite) Task() engine.Suite {
	t := s.testSuite.Task()
	t.Prompts, t.Datasets = s.Prompts, s.Datasets
	return t
}

// A resume after the run's data file changed on disk is refused before the
// first model call, naming the file and both hashes; the run is left as
// it was.
func TestResumeRefusesChangedData(t *testing.T) {
	srv := server(t, goodJudge)
	cache, dir := t.TempDir(), filepath.Join(t.TempDir(), "run")
	data := filepath.Join(t.TempDir(), "questions.jsonl")
	if err := os.WriteFile(data, []byte(`{"q": "one"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &describedSuite{testSuite: testSuite{n: 6}, data: data}
	if _, err := newEngine(t, srv.Host(), cache).Run(context.Background(), s.Task(), engine.RunSpec{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	m0, _ := rundir.ReadManifest(dir)
	if err := os.WriteFile(data, []byte(`{"q": "one, edited"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	calls := len(srv.Chats())
	_, err := newEngine(t, srv.Host(), cache).Run(context.Background(), s.Task(), engine.RunSpec{Dir: dir, Resume: true})
	if !errors.Is(err, engine.ErrNotTheSameRun) || !strings.Contains(err.Error(), "questions.jsonl") {
		t.Fatalf("resume after the data changed: %v", err)
	}
	if n := len(srv.Chats()); n != calls {
		t.Errorf("%d calls made", n-calls)
	}
	if m, _ := rundir.ReadManifest(dir); m.Datasets["questions.jsonl"].SHA256 != m0.Datasets["questions.jsonl"].SHA256 {
		t.Errorf("the refused resume replaced the recorded hash")
	}
}

// Each session records whether it was offline and the halu build that ran
// it: a run started offline and resumed with a server up is no longer said
// to be offline, and the summary says which sessions were.
func TestSessionsRecordOfflineAndBuild(t *testing.T) {
	srv := server(t, goodJudge)
	cache := t.TempDir()
	if _, err := newEngine(t, srv.Host(), cache).Run(context.Background(), (&testSuite{n: 3}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "a")}); err != nil {
		t.Fatal(err)
	}
	host := srv.Host()
	srv.Close()
	dir := filepath.Join(t.TempDir(), "run")
	e := newEngine(t, host, cache)
	e.Version = "build-1"
	res, _ := e.Run(context.Background(), (&testSuite{n: 5}).Task(), engine.RunSpec{Dir: dir}) // 3 from the cache, 2 fail
	if res == nil || !res.Manifest.Server.Offline || res.Counts.Failed != 2 {
		t.Fatalf("offline start: %+v", res)
	}
	up := server(t, goodJudge)
	e = newEngine(t, up.Host(), cache)
	e.Version = "build-2"
	res, err := e.Run(context.Background(), (&testSuite{n: 5}).Task(), engine.RunSpec{Dir: dir, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Manifest
	if m.Server.Offline || len(m.Sessions) != 2 || !m.Sessions[0].Offline || m.Sessions[1].Offline ||
		m.Sessions[0].Halu != "build-1" || m.Sessions[1].Halu != "build-2" {
		t.Fatalf("server %+v, sessions %+v", m.Server, m.Sessions)
	}
	notes := strings.Join(res.Summary.Notes, "\n")
	for _, want := range []string{"sessions: 1 of 2 offline", "2 builds of halu: build-1 (session 1); build-2 (session 2)"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "offline: no server was reachable") {
		t.Errorf("the summary says the run was offline after an online session:\n%s", notes)
	}
}

// A call whose prompt and reply together run past the context window is
// recorded as such (the server dropped the prompt's beginning while it
// generated) and counted in the manifest from the records, a rerun from
// the cache included.
func TestCallsPastTheWindowCounted(t *testing.T) {
	srv := server(t, goodJudge)
	srv.SetChat(func(r fakeollama.ChatRequest) fakeollama.Reply {
		if r.Model == "judge" {
			return fakeollama.Reply{Content: `{"score": 4}`}
		}
		// 4,090 prompt tokens and a reply of several tokens: past 4,096.
		return fakeollama.Reply{Content: "a long answer", Chunks: []string{"one ", "two ", "three ", "four ", "five ", "six ", "seven "}, PromptEvalCount: 4090}
	})
	cache := t.TempDir()
	e := newEngine(t, srv.Host(), cache)
	e.Config.NumCtx = 4096
	res, err := e.Run(context.Background(), (&testSuite{n: 3}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "r")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifest.Counts.OverContext != 3 {
		t.Fatalf("over context %d, want 3 (one generation an item)", res.Manifest.Counts.OverContext)
	}
	e = newEngine(t, srv.Host(), cache)
	e.Config.NumCtx = 4096
	res, err = e.Run(context.Background(), (&testSuite{n: 3}).Task(), engine.RunSpec{Dir: filepath.Join(t.TempDir(), "again")})
	if err != nil || res.Counts.ModelCalls != 0 || res.Manifest.Counts.OverContext != 3 {
		t.Fatalf("from the cache: %v, %d calls, over context %d", err, res.Counts.ModelCalls, res.Manifest.Counts.OverContext)
	}
}
