//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"halu/localmodels/fakeollama"
	"halu/runner/engine"
)

// TestBenchScale is `make bench-scale`: what a run costs as it grows to the
// sizes a lab reaches, against an instant in-process fake server standing
// in for a GPU node: TruthHypo's 2,024 items for 5, 20 and 50 generators
// (10,120, 40,480 and 101,200 items, one generation each; --parallel 64
// --items-in-flight 256, a fresh response cache), each run a process of
// its own whose peak resident memory (through e2e/peakrss, which keeps
// this test's own memory out of the figure) and CPU time are read from the
// kernel; then the same run in two shards (from the cache), merged, and
// reported (Markdown and HTML), each measured alike. One line per figure; the
// ratio of a 40,480-item step's peak to the 10,120-item one's says whether
// memory grows with the records.
func TestBenchScale(t *testing.T) {
	if os.Getenv("HALU_BENCH_SCALE") == "" {
		t.Skip("run by make bench-scale")
	}
	rss := map[string]map[int]float64{} // by what ran: peak MiB by items
	peak := func(what string, items int, mib float64) {
		if rss[what] == nil {
			rss[what] = map[int]float64{}
		}
		rss[what][items] = mib
	}
	for _, gens := range []int{5, 20, 50} {
		var models []fakeollama.Model
		var names []string
		for i := 1; i <= gens; i++ {
			models = append(models, fakeollama.Model{Name: fmt.Sprintf("g%d:latest", i), Digest: fmt.Sprintf("d%d", i), ParameterCount: 1e9})
			names = append(names, fmt.Sprintf("g%d", i))
		}
		fake := fakeollama.New(func(fakeollama.ChatRequest) fakeollama.Reply {
			return fakeollama.Reply{Content: "Reasoning.\n```json\n{\"proposed_hypothesis\": \"positive_correlate\"}\n```"}
		}, models...)
		work := t.TempDir()
		out := filepath.Join(work, "run")
		r := peakHalu(t, fake.Host(), "--parallel", "64", "--items-in-flight", "256", "run", "hypo", "--models", strings.Join(names, ","), "--setting", "parametric", "--candidates", "0",
			"--cache", filepath.Join(work, "cache"), "--out", out)
		fake.Close()
		m, _, err := engine.ReadRun(out)
		if err != nil {
			t.Fatal(err)
		}
		items := m.Counts.Items
		peak("run", items, r.rssMiB)
		figure(fmt.Sprintf("run peak RSS MiB %d items", items), fmt.Sprintf("%.0f", r.rssMiB),
			fmt.Sprintf("%d model calls; CPU %.2f s, %.3f ms a call", m.Counts.ModelCalls, r.cpu.Seconds(), 1000*r.cpu.Seconds()/float64(max(1, m.Counts.ModelCalls))))
		// The same run split in two shards (from the cache, the server
		// gone), merged, and reported.
		var shards []string
		for i := 1; i <= 2; i++ {
			d := filepath.Join(work, fmt.Sprintf("shard%d", i))
			mustHalu(t, fake.Host(), "--parallel", "64", "--items-in-flight", "256", "run", "hypo", "--models", strings.Join(names, ","), "--setting", "parametric", "--candidates", "0",
				"--cache", filepath.Join(work, "cache"), "--shard", fmt.Sprintf("%d/2", i), "--out", d)
			shards = append(shards, d)
		}
		merged := filepath.Join(work, "merged")
		r = peakHalu(t, fake.Host(), "merge", shards[0], shards[1], "--out", merged)
		peak("2-shard merge", items, r.rssMiB)
		figure(fmt.Sprintf("2-shard merge peak RSS MiB %d items", items), fmt.Sprintf("%.0f", r.rssMiB), fmt.Sprintf("CPU %.2f s", r.cpu.Seconds()))
		r = peakHalu(t, fake.Host(), "report", merged, "--md")
		peak("report --md", items, r.rssMiB)
		figure(fmt.Sprintf("report --md peak RSS MiB %d items", items), fmt.Sprintf("%.0f", r.rssMiB), fmt.Sprintf("every table as Markdown; CPU %.2f s", r.cpu.Seconds()))
		page := filepath.Join(work, "report.html")
		r = peakHalu(t, fake.Host(), "report", merged, "--html", page)
		peak("report --html", items, r.rssMiB)
		st, _ := os.Stat(page)
		figure(fmt.Sprintf("report --html peak RSS MiB %d items", items), fmt.Sprintf("%.0f", r.rssMiB), fmt.Sprintf("a page of %.1f MB; CPU %.2f s", float64(st.Size())/1e6, r.cpu.Seconds()))
	}
	for _, what := range []string{"run", "2-shard merge", "report --md", "report --html"} {
		if a, b := rss[what][40480], rss[what][10120]; a > 0 && b > 0 {
			figure(what+" peak RSS ratio 40480 ÷ 10120 items", fmt.Sprintf("%.2f", a/b))
		}
	}
}
