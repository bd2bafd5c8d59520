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
// its own whose peak resident memory and CPU time are read from the
// kernel. One line per figure; the ratio of the 40,480-item run's peak to
// the 10,120-item run's says whether memory grows with the records.
func TestBenchScale(t *testing.T) {
	if os.Getenv("HALU_BENCH_SCALE") == "" {
		t.Skip("run by make bench-scale")
	}
	rss := map[int]float64{}
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
		r := mustHalu(t, fake.Host(), "--parallel", "64", "--items-in-flight", "256", "run", "hypo", "--models", strings.Join(names, ","), "--setting", "parametric", "--candidates", "0",
			"--cache", filepath.Join(work, "cache"), "--out", out)
		fake.Close()
		m, _, err := engine.ReadRun(out)
		if err != nil {
			t.Fatal(err)
		}
		items := m.Counts.Items
		rss[items] = r.rssMiB
		figure(fmt.Sprintf("run peak RSS MiB %d items", items), fmt.Sprintf("%.0f", r.rssMiB),
			fmt.Sprintf("%d model calls; CPU %.2f s, %.3f ms a call", m.Counts.ModelCalls, r.cpu.Seconds(), 1000*r.cpu.Seconds()/float64(max(1, m.Counts.ModelCalls))))
	}
	if rss[10120] > 0 && rss[40480] > 0 {
		figure("run peak RSS ratio 40480 ÷ 10120 items", fmt.Sprintf("%.2f", rss[40480]/rss[10120]))
	}
}
