//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

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
// reported (Markdown and HTML), each measured alike. Three rounds, each
// taking every size in turn (so a machine's drift weighs on all sizes
// alike; HALU_BENCH_SCALE_ROUNDS sets how many): one line per figure with
// its median and range over the rounds, and the ratio of the medians of a
// 40,480-item step's peak and the 10,120-item one's, which says whether
// memory grows with the records.
func TestBenchScale(t *testing.T) {
	if os.Getenv("HALU_BENCH_SCALE") == "" {
		t.Skip("run by make bench-scale")
	}
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("HALU_BENCH_SCALE_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	type key struct {
		what  string
		items int
	}
	rss := map[key][]float64{} // peak MiB
	cpu := map[key][]float64{} // CPU seconds
	perCall := map[int][]float64{}
	var order []key
	add := func(what string, items int, r result) {
		k := key{what, items}
		if rss[k] == nil {
			order = append(order, k)
		}
		rss[k] = append(rss[k], r.rssMiB)
		cpu[k] = append(cpu[k], r.cpu.Seconds())
	}
	pages := map[int]float64{}
	for round := 1; round <= rounds; round++ {
		for _, gens := range []int{5, 20, 50} {
			fake, names := hypoFake(gens)
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
			add("run", items, r)
			perCall[items] = append(perCall[items], 1000*r.cpu.Seconds()/float64(max(1, m.Counts.ModelCalls)))
			fmt.Printf("round %d, %d items: run %.0f MiB, CPU %.2f s (%d model calls)", round, items, r.rssMiB, r.cpu.Seconds(), m.Counts.ModelCalls)
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
			add("2-shard merge", items, r)
			fmt.Printf("; merge %.0f", r.rssMiB)
			r = peakHalu(t, fake.Host(), "report", merged, "--md")
			add("report --md", items, r)
			fmt.Printf("; --md %.0f", r.rssMiB)
			page := filepath.Join(work, "report.html")
			r = peakHalu(t, fake.Host(), "report", merged, "--html", page)
			add("report --html", items, r)
			st, _ := os.Stat(page)
			pages[items] = float64(st.Size()) / 1e6
			fmt.Printf("; --html %.0f\n", r.rssMiB)
		}
	}
	spread := func(xs []float64, format string) string {
		return fmt.Sprintf(format+" ("+format+"–"+format+")", medianF(xs), slices.Min(xs), slices.Max(xs))
	}
	for _, k := range order {
		detail := fmt.Sprintf("CPU %s s", spread(cpu[k], "%.2f"))
		switch k.what {
		case "run":
			detail += fmt.Sprintf(", %s ms a model call", spread(perCall[k.items], "%.3f"))
		case "report --md":
			detail = "every table as Markdown; " + detail
		case "report --html":
			detail = fmt.Sprintf("a page of %.1f MB; %s", pages[k.items], detail)
		}
		figure(fmt.Sprintf("%s peak RSS MiB %d items", k.what, k.items), spread(rss[k], "%.0f"), fmt.Sprintf("median (range) of %d rounds; %s", rounds, detail))
	}
	for _, what := range []string{"run", "2-shard merge", "report --md", "report --html"} {
		a, b := rss[key{what, 40480}], rss[key{what, 10120}]
		if len(a) == 0 || len(b) == 0 {
			continue
		}
		var each []string
		for i := range min(len(a), len(b)) {
			each = append(each, fmt.Sprintf("%.2f", a[i]/b[i]))
		}
		figure(what+" peak RSS ratio 40480 ÷ 10120 items", fmt.Sprintf("%.2f", medianF(a)/medianF(b)), "the medians' ratio; each round's: "+strings.Join(each, ", "))
	}
}
