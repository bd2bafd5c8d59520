package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/runner/engine"
	"halu/runner/rundir"
	"halu/runner/summary"
)

// verifyFake is a server for halu verify's tests: six generators and three
// judges; generations echo the question, judges give a fixed verdict. Once
// drifted, it answers about 1 in 50 requests otherwise (by a hash of the
// request): a generation with other words, judge j1 with the same verdict
// in other bytes, the other judges with another verdict.
type verifyFake struct {
	*fakeollama.Server
	drifted bool
	// mute, when set, makes the judges answer the requests it picks with
	// a reply that reads as nothing.
	mute func(fakeollama.ChatRequest) bool
}

// driftSalt picks, of the hashes, a fixed 1 in 50 that falls on each kind
// of reply in the run of TestVerifyFindsWhatCameBackOtherwise (which
// checks that it does).
const driftSalt = "salt 18"

// drift says how the drifted server answers req otherwise: "" (as before),
// "words", "same verdict" or "other verdict".
func drift(req fakeollama.ChatRequest) string {
	var b strings.Builder
	b.WriteString(driftSalt + req.Model)
	for _, m := range req.Messages {
		b.WriteString("\x00" + m.Role + "\x00" + m.Content)
	}
	sum := sha256.Sum256([]byte(b.String()))
	u := binary.BigEndian.Uint64(sum[:8])
	switch {
	case u%50 != 0:
		return ""
	case strings.HasPrefix(req.Model, "gen"):
		return "words"
	case req.Model == "j1:latest" || req.Model == "j1":
		return "same verdict"
	}
	return "other verdict"
}

func newVerifyFake(t *testing.T) *verifyFake {
	f := &verifyFake{}
	var models []fakeollama.Model
	for i := 1; i <= 6; i++ {
		models = append(models, fakeollama.Model{Name: fmt.Sprintf("gen%d:latest", i), Digest: fmt.Sprintf("dg%d", i), ParameterCount: 1e9})
	}
	for i := 1; i <= 3; i++ {
		models = append(models, fakeollama.Model{Name: fmt.Sprintf("j%d:latest", i), Digest: fmt.Sprintf("dj%d", i), ParameterCount: 1e9})
	}
	f.Server = fakeollama.New(func(r fakeollama.ChatRequest) fakeollama.Reply {
		how := ""
		if f.drifted {
			how = drift(r)
		}
		switch {
		case strings.HasPrefix(r.Model, "j") && f.mute != nil && f.mute(r):
			return fakeollama.Reply{Content: "I would rather not say whether this answer holds up."}
		case strings.HasPrefix(r.Model, "gen") && how == "words":
			return fakeollama.Reply{Content: r.Model + "'s answer, said again otherwise: " + r.LastUser()}
		case strings.HasPrefix(r.Model, "gen"):
			return fakeollama.Reply{Content: r.Model + "'s answer: " + r.LastUser()}
		case how == "same verdict":
			return fakeollama.Reply{Content: `{"hallucination": false, "score": 4}`}
		case how == "other verdict":
			return fakeollama.Reply{Content: `{"score": 2, "hallucination": true}`}
		}
		return fakeollama.Reply{Content: `{"score": 4, "hallucination": false}`}
	}, models...)
	t.Cleanup(f.Close)
	return f
}

func (f *verifyFake) halu(t *testing.T, cache string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append(serverFlags(args, "--ollama", f.Host(), "--cache", cache, "--retries", "1"), args...), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// smoke runs the smoke suite of gens judged by judges (args added) into
// dir/run with its cache in dir/cache, a new temporary dir, and returns
// them with the run's records.
func (f *verifyFake) smoke(t *testing.T, gens, judges string, args ...string) (dir, cache, run string, recs []rundir.Record) {
	t.Helper()
	dir = t.TempDir()
	cache, run = filepath.Join(dir, "cache"), filepath.Join(dir, "run")
	if r := f.halu(t, cache, append([]string{"run", "smoke", "--models", gens, "--judges", judges, "--out", run}, args...)...); r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	_, recs, err := engine.ReadRun(run)
	if err != nil {
		t.Fatal(err)
	}
	return dir, cache, run, recs
}

// chatKey is a request as the server saw it: model and messages.
func chatKey(r fakeollama.ChatRequest) string {
	b, _ := json.Marshal([]any{r.Model, r.Messages})
	return string(b)
}

// halu verify at --sample 1 asks every cached call of a run again; against
// a server that now answers about 1 in 50 requests otherwise it finds each
// of them, per model and stage: a generation in other words is different,
// a judge's verdict in other bytes reads the same (counted apart from the
// identical ones), another verdict is different — the counts the server's
// own requests give. The item goes on with the reply given now: the judges
// of an answer given otherwise are asked its new text (no call asked
// again). The result is in the run's directory; --fail-under fails on it;
// the dry run plans every call as asked and writes nothing.
func TestVerifyFindsWhatCameBackOtherwise(t *testing.T) {
	f := newVerifyFake(t)
	gens := "gen1,gen2,gen3,gen4,gen5,gen6"
	dir, cache, run, _ := f.smoke(t, gens, "j1,j2,j3")
	first := map[string]bool{}
	for _, c := range f.Chats() {
		first[chatKey(c)] = true
	}
	n1 := len(f.Chats())

	// The dry run plans and writes nothing.
	r := f.halu(t, cache, "verify", run, "--sample", "1", "--dry-run", "--out", filepath.Join(dir, "dry"))
	if r.code != exitOK || !strings.Contains(r.stdout, "drawn") || len(f.Chats()) != n1 {
		t.Fatalf("dry run: exit %d, %d calls made\n%s%s", r.code, len(f.Chats())-n1, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(run, rundir.VerificationFile)); err == nil {
		t.Fatal("the dry run wrote a verification")
	}

	f.drifted = true
	again := filepath.Join(dir, "again")
	r = f.halu(t, cache, "verify", run, "--sample", "1", "--out", again)
	if r.code != exitOK {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// What the server was asked again, and how it answered.
	type want struct{ asked, identical, same, different int }
	wants := map[string]*want{} // model/stage/kind
	for _, c := range f.Chats()[n1:] {
		if !first[chatKey(c)] {
			continue // asked because an answer came back otherwise: no call asked again
		}
		k := c.Model + " generate chat"
		if strings.HasPrefix(c.Model, "j") {
			k = c.Model + " judge judge"
		}
		if wants[k] == nil {
			wants[k] = &want{}
		}
		w := wants[k]
		w.asked++
		switch drift(c) {
		case "":
			w.identical++
		case "same verdict":
			w.same++
		default:
			w.different++
		}
	}
	v, err := rundir.ReadVerification(run)
	if err != nil || v == nil {
		t.Fatalf("verification: %v, %v", v, err)
	}
	got := map[string]want{}
	differ, same := 0, 0
	for _, s := range v.Stages {
		got[strings.TrimSuffix(s.Model, ":latest")+" "+s.Stage+" "+s.Kind] = want{s.Asked, s.Identical, s.Same, s.Different}
		differ += s.Different
		same += s.Same
	}
	if len(got) != len(wants) {
		t.Fatalf("stages %v, want %d", got, len(wants))
	}
	for k, w := range wants {
		if got[k] != *w {
			t.Errorf("%s: got %+v, want %+v", k, got[k], *w)
		}
	}
	if differ == 0 || same == 0 {
		t.Fatalf("the drifted server answered %d calls with another reading and %d with the same in other bytes: the test needs both (%+v)", differ, same, v.Stages)
	}
	asked := 0
	for _, w := range wants {
		asked += w.asked
	}
	if !strings.Contains(r.stdout, fmt.Sprintf("of %d calls asked again came back identical", asked)) || v.Share != 1 || v.Dir != again {
		t.Fatalf("verify printed:\n%s", r.stdout)
	}
	if len(v.Figures) == 0 {
		t.Fatalf("no figure recomputed: %+v", v)
	}

	// The report shows it beside the run's provenance.
	if r := f.halu(t, cache, "report", run, "--md"); r.code != exitOK || !strings.Contains(r.stdout, fmt.Sprintf("Verified: verified %s", v.Time.Format("2006-01-02"))) ||
		!strings.Contains(r.stdout, fmt.Sprintf("of %d calls asked again came back identical", asked)) {
		t.Fatalf("report: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	page := filepath.Join(dir, "r.html")
	if r := f.halu(t, cache, "report", run, "--html", page); r.code != exitOK || !strings.Contains(mustRead(t, page), "<b>Verified:</b> verified ") {
		t.Fatalf("report --html: exit %d: %s", r.code, r.stderr)
	}

	// A gate on the identical share.
	r = f.halu(t, cache, "verify", run, "--sample", "1", "--out", filepath.Join(dir, "gated"), "--fail-under", "0.999")
	if r.code != exitGate || !strings.Contains(r.stderr, "came back identical") {
		t.Fatalf("--fail-under: exit %d: %s", r.code, r.stderr)
	}
}

// A run with --verify P asks that share of the calls its cache answers
// again and keeps the recorded replies: against the drifted server its
// records are the first run's, call for call, and its summary says how
// many came back identical — the count the server's requests give.
func TestRunVerifyKeepsTheRecordedReplies(t *testing.T) {
	f := newVerifyFake(t)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	args := []string{"run", "smoke", "--models", "gen1,gen2,gen3,gen4,gen5,gen6", "--judges", "j1,j2,j3"}
	if r := f.halu(t, cache, append(args, "--out", filepath.Join(dir, "a"))...); r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	n1 := len(f.Chats())
	f.drifted = true
	r := f.halu(t, cache, append(args, "--out", filepath.Join(dir, "b"), "--verify", "1")...)
	if r.code != exitOK {
		t.Fatalf("run --verify 1: exit %d: %s", r.code, r.stderr)
	}
	asked, identical := 0, 0
	for _, c := range f.Chats()[n1:] {
		asked++
		if drift(c) == "" {
			identical++
		}
	}
	if asked != n1 || identical == asked {
		t.Fatalf("asked %d of the %d calls again, %d identical: the test needs every call asked and some given otherwise", asked, n1, identical)
	}
	if want := fmt.Sprintf("verify: %d of %d cached calls asked the server again came back identical (the records keep the recorded replies", identical, asked); !strings.Contains(r.stdout, want) {
		t.Fatalf("the summary does not say %q:\n%s", want, r.stdout)
	}
	t.Logf("%d of %d identical", identical, asked)
	strip := func(run string) string {
		recs, _, err := rundir.ReadRecords(filepath.Join(dir, run, rundir.RecordsFile))
		if err != nil {
			t.Fatal(err)
		}
		for i := range recs {
			for j := range recs[i].Calls {
				recs[i].Calls[j].Reasked = nil
			}
		}
		sort.Slice(recs, func(i, j int) bool { return recs[i].Item < recs[j].Item })
		b, _ := json.Marshal(recs)
		return string(b)
	}
	if strip("a") != strip("b") {
		t.Fatal("a run with --verify recorded other replies than the run from its cache")
	}
}

// Other weights served under a run's model name: verify refuses before a
// call (exit 2), naming both digests.
func TestVerifyRefusesOtherWeights(t *testing.T) {
	f := newVerifyFake(t)
	dir, cache, run, _ := f.smoke(t, "gen1", "j1")
	n := len(f.Chats())
	f.SetModelDigest("gen1:latest", "0ther")
	r := f.halu(t, cache, "verify", run, "--sample", "1", "--out", filepath.Join(dir, "again"))
	if r.code != exitUsage || !strings.Contains(r.stderr, "cannot be verified") || !strings.Contains(r.stderr, "dg1") || !strings.Contains(r.stderr, "0ther") {
		t.Fatalf("verify with other weights: exit %d\n%s", r.code, r.stderr)
	}
	if len(f.Chats()) != n {
		t.Fatalf("verify refused after %d calls", len(f.Chats())-n)
	}
	if _, err := os.Stat(filepath.Join(run, rundir.VerificationFile)); err == nil {
		t.Fatal("a refused verify wrote a verification")
	}
}

// A run's end summarises its records without their transcripts, read
// from its records file one at a time (rundir.RecordsIn): for a run of every suite (testdata/runs-v1),
// the summary made from the slim records is the one made from the whole
// records, byte for byte — no table, note, card or measure reads a
// prompt's text, a reply as written or the options sent.
func TestSlimRecordsSummariseAlike(t *testing.T) {
	runs, err := filepath.Glob(filepath.Join("..", "..", "testdata", "runs-v1", "*", "manifest.json"))
	if err != nil || len(runs) < 6 {
		t.Fatalf("runs-v1: %v, %v", runs, err)
	}
	// And a run of today's format, whose calls record the options sent.
	f := newVerifyFake(t)
	fresh := filepath.Join(t.TempDir(), "fresh")
	if r := f.halu(t, t.TempDir(), "run", "smoke", "--models", "gen1,gen2", "--judges", "j1,j2", "--out", fresh); r.code != exitOK {
		t.Fatalf("run: exit %d: %s", r.code, r.stderr)
	}
	runs = append(runs, filepath.Join(fresh, rundir.ManifestFile))
	compared := 0
	for _, mp := range runs {
		dir := filepath.Dir(mp)
		m, recs, err := engine.ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		s, err := rebuild(m)
		if err != nil {
			t.Logf("%s: not rebuilt here (%v)", dir, err)
			continue
		}
		whole, _, err := engine.Summarize(s, m, rundir.RecordsOf(recs))
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		thin, _, err := engine.Summarize(s, m, rundir.RecordsIn(filepath.Join(dir, rundir.RecordsFile)))
		if err != nil {
			t.Fatalf("%s: slim: %v", dir, err)
		}
		a, _ := json.Marshal(whole)
		b, _ := json.Marshal(thin)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the summary of the slim records differs from the whole records'", dir)
		}
		compared++
	}
	if compared < 7 {
		t.Fatalf("compared %d runs' summaries, want every suite's and today's", compared)
	}
}

// A call of the run the cache no longer holds, led to by no reply given
// otherwise, is asked live and counted apart ("not in the cache"), never
// compared and never counted as identical.
func TestVerifyCountsCallsNotInTheCache(t *testing.T) {
	f := newVerifyFake(t)
	dir, cache, run, recs := f.smoke(t, "gen1", "j1")
	key := recs[0].Calls[0].Key // a generation's cache key
	if gone := removeCacheEntry(t, cache, key); recs[0].Calls[0].Kind != "chat" || gone != 1 {
		t.Fatalf("the generation's cache entry: %d lines removed (%s)", gone, recs[0].Calls[0].Kind)
	}
	r := f.halu(t, cache, "verify", run, "--sample", "1", "--out", filepath.Join(dir, "again"))
	if r.code != exitOK {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	v, _ := rundir.ReadVerification(run)
	asked, identical, _, _, uncached := summary.VerifiedTotals(v.Stages)
	calls := 0
	for _, rec := range recs {
		calls += len(rec.Calls)
	}
	if uncached != 1 || asked != calls-1 || identical != asked || !strings.Contains(r.stdout, "1 calls of the run were not in the cache") {
		t.Fatalf("asked %d of %d, %d identical, %d not in the cache:\n%s", asked, calls, identical, uncached, r.stdout)
	}
}

// A reply given again that reads as nothing leaves its unit unscored
// again: the figures on the units both runs scored count it apart (scored
// as recorded only), in the verification and the table verify prints —
// never dropped unseen.
func TestVerifyCountsUnitsScoredOnOneSide(t *testing.T) {
	f := newVerifyFake(t)
	dir, cache, run, recs := f.smoke(t, "gen1", "j1")
	if len(recs) < 3 {
		t.Fatalf("run: %d records", len(recs))
	}
	answer := recs[0].Calls[0].Reply // the first item's answer, in its judge's prompt
	if recs[0].Calls[0].Kind != "chat" || answer == "" {
		t.Fatalf("first call: %+v", recs[0].Calls[0])
	}
	f.mute = func(r fakeollama.ChatRequest) bool {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, answer) {
				return true
			}
		}
		return false
	}
	r := f.halu(t, cache, "verify", run, "--sample", "1", "--out", filepath.Join(dir, "again"))
	if r.code != exitOK {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	v, err := rundir.ReadVerification(run)
	if err != nil || v == nil || len(v.Figures) == 0 {
		t.Fatalf("verification: %+v, %v", v, err)
	}
	for _, fg := range v.Figures {
		if fg.RecordedOnly != 1 || fg.AgainOnly != 0 || fg.N != len(recs)-1 {
			t.Errorf("%s %s: n %d, scored as recorded only %d, again only %d; want %d, 1, 0", fg.Model, fg.Metric, fg.N, fg.RecordedOnly, fg.AgainOnly, len(recs)-1)
		}
	}
	if !strings.Contains(r.stdout, "scored as recorded only") {
		t.Errorf("verify printed no count of the units scored on one side:\n%s", r.stdout)
	}
}

// The report shows a verification as the run's only while the run's
// records are the ones verified (by their sha256): once halu rerun
// --errors has changed them (a judge whose reply read as nothing answers
// now), the line says an earlier state was verified, without its figures;
// verified again, the line is back.
func TestReportNamesAVerificationOfAnEarlierState(t *testing.T) {
	f := newVerifyFake(t)
	var mu sync.Mutex
	muted := ""
	f.mute = func(r fakeollama.ChatRequest) bool { // the first judge request, and its repair
		mu.Lock()
		defer mu.Unlock()
		if muted == "" {
			muted = r.Messages[len(r.Messages)-1].Content
		}
		for _, m := range r.Messages {
			if m.Content == muted {
				return true
			}
		}
		return false
	}
	dir, cache, run, recs := f.smoke(t, "gen1", "j1")
	failed := 0
	for _, r := range recs {
		failed += len(r.Failures)
	}
	if failed == 0 {
		t.Fatalf("no item failed its judge: %d records", len(recs))
	}
	verified := func(step string) string {
		t.Helper()
		r := f.halu(t, cache, "report", run, "--md")
		if r.code != exitOK {
			t.Fatalf("%s: report: exit %d: %s", step, r.code, r.stderr)
		}
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, "Verified: ") {
				return l
			}
		}
		t.Fatalf("%s: the report has no Verified line:\n%s", step, r.stdout)
		return ""
	}
	// While another process holds the run (a rerun), verify refuses:
	// the records it verifies are the ones it names.
	release, err := rundir.LockDir(run)
	if err != nil {
		t.Fatal(err)
	}
	r := f.halu(t, cache, "verify", run, "--sample", "1", "--out", filepath.Join(dir, "held"))
	release()
	if v, _ := rundir.ReadVerification(run); r.code == exitOK || !strings.Contains(r.stderr, "held by another halu process") || v != nil {
		t.Fatalf("verify of a held run: exit %d, verification %v\n%s", r.code, v, r.stderr)
	}
	if r := f.halu(t, cache, "verify", run, "--sample", "1", "--out", filepath.Join(dir, "v1")); r.code != exitOK {
		t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	v, _ := rundir.ReadVerification(run)
	if sum, _ := rundir.RecordsSum(run); v == nil || v.Records != sum {
		t.Fatalf("the verification names records %q, the run's are %q", v.Records, sum)
	}
	if l := verified("verified"); !strings.Contains(l, "came back identical") {
		t.Fatalf("verified: %s", l)
	}
	before, _ := rundir.RecordsSum(run)
	f.mute = nil
	if r := f.halu(t, cache, "rerun", run, "--errors"); r.code != exitOK {
		t.Fatalf("rerun --errors: exit %d: %s", r.code, r.stderr)
	}
	if after, _ := rundir.RecordsSum(run); after == before {
		t.Fatal("rerun --errors left the records as they were: the test needs them changed")
	}
	if l := verified("after the rerun"); !strings.Contains(l, "an earlier state of this run was verified") || strings.Contains(l, "came back identical") {
		t.Fatalf("after rerun --errors: %s", l)
	}
	if r := f.halu(t, cache, "verify", run, "--sample", "1", "--out", filepath.Join(dir, "v2")); r.code != exitOK {
		t.Fatalf("verify again: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if l := verified("verified again"); !strings.Contains(l, "came back identical") {
		t.Fatalf("verified again: %s", l)
	}
}

// Without --sample, verify asks 5% of the calls raised to reach 30, into a
// run directory of its own beside the run (RUN-verify-TIME, a second
// within the same second numbered); a --sample given is kept as given.
func TestVerifyDefaults(t *testing.T) {
	f := newVerifyFake(t)
	dir, cache, run, recs := f.smoke(t, "gen1,gen2,gen3,gen4,gen5,gen6", "j1,j2")
	calls := 0
	for _, r := range recs {
		calls += len(r.Calls)
	}
	if calls <= verifyMinCalls || float64(verifyMinCalls)/float64(calls) <= 0.05 {
		t.Fatalf("%d calls: the test needs between %d and %d", calls, verifyMinCalls, verifyMinCalls*20)
	}
	var dirs []string
	for i := 0; i < 2; i++ {
		r := f.halu(t, cache, "verify", run)
		if r.code != exitOK {
			t.Fatalf("verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		v, _ := rundir.ReadVerification(run)
		asked, _, _, _, _ := summary.VerifiedTotals(v.Stages)
		if want := float64(verifyMinCalls) / float64(calls); v.Share != want || asked == 0 || v.Calls != calls {
			t.Fatalf("verify without --sample: share %g of %d calls (want %g of %d), %d asked", v.Share, v.Calls, want, calls, asked)
		}
		if !strings.HasPrefix(v.Dir, run+"-verify-") || !rundir.HoldsRun(v.Dir) {
			t.Fatalf("the run again is in %q", v.Dir)
		}
		dirs = append(dirs, v.Dir)
	}
	if dirs[0] == dirs[1] {
		t.Fatalf("two verifies wrote one run directory: %s", dirs[0])
	}
	if r := f.halu(t, cache, "verify", run, "--sample", "0.05", "--out", filepath.Join(dir, "given")); r.code != exitOK && r.code != exitNothing {
		t.Fatalf("verify --sample 0.05: exit %d: %s", r.code, r.stderr)
	}
	if v, _ := rundir.ReadVerification(run); v.Share != 0.05 {
		t.Fatalf("--sample 0.05 given: share %g", v.Share)
	}
	// The share from the environment is a share given: kept as given,
	// and checked as the flag is.
	t.Setenv("HALU_SAMPLE", "0.5")
	if r := f.halu(t, cache, "verify", run, "--out", filepath.Join(dir, "env")); r.code != exitOK {
		t.Fatalf("HALU_SAMPLE=0.5: exit %d: %s", r.code, r.stderr)
	}
	if v, _ := rundir.ReadVerification(run); v.Share != 0.5 {
		t.Fatalf("HALU_SAMPLE=0.5: share %g", v.Share)
	}
	t.Setenv("HALU_SAMPLE", "2")
	if r := f.halu(t, cache, "verify", run, "--out", filepath.Join(dir, "env2")); r.code != exitUsage || !strings.Contains(r.stderr, "--sample 2") {
		t.Fatalf("HALU_SAMPLE=2: exit %d: %s", r.code, r.stderr)
	}
}

// removeCacheEntry takes key's lines out of the response cache's packs and
// returns how many there were.
func removeCacheEntry(t *testing.T, cache, key string) int {
	t.Helper()
	packs, _ := filepath.Glob(filepath.Join(cache, "v3", "packs", "*.pack"))
	gone := 0
	for _, p := range packs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var kept []string
		for _, line := range strings.SplitAfter(string(b), "\n") {
			if strings.HasPrefix(line, `{"key":"`+key+`"`) {
				gone++
				continue
			}
			kept = append(kept, line)
		}
		if err := os.WriteFile(p, []byte(strings.Join(kept, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return gone
}
