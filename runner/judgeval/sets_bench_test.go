package judgeval

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"testing"
	"time"
)

// BenchmarkLoadSet: the shipped HaluEval set read as a run reads it
// (LoadSet: rundir.ScanJSONL decompresses and splits lines on one
// goroutine while the lines before are decoded), against the same work on
// one goroutine (a scanner over the decompressed stream, each line decoded
// as it comes). Both are timed in every iteration, in alternating order;
// the metric is the ratio of their sums — a run's first model call waits
// for this read.
func BenchmarkLoadSet(b *testing.B) {
	oneGoroutine := func() int {
		f, err := data.Open("data/halueval_general.jsonl.gz")
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(zr)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		n := 0
		for sc.Scan() {
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				b.Fatal(err)
			}
			if _, _, err := l.unit(); err != nil {
				b.Fatal(err)
			}
			n++
		}
		return n
	}
	var piped, serial time.Duration
	for i := 0; i < b.N; i++ {
		for k := range 2 {
			start := time.Now()
			if (i+k)%2 == 0 {
				s, err := LoadSet(HaluEval)
				if err != nil || len(s.Units) == 0 {
					b.Fatalf("%d units, %v", len(s.Units), err)
				}
				piped += time.Since(start)
			} else {
				if oneGoroutine() == 0 {
					b.Fatal("no line")
				}
				serial += time.Since(start)
			}
		}
	}
	b.ReportMetric(float64(piped.Milliseconds())/float64(b.N), "ms/LoadSet")
	b.ReportMetric(float64(serial.Milliseconds())/float64(b.N), "ms/one-goroutine")
	b.ReportMetric(piped.Seconds()/serial.Seconds(), "LoadSet/one-goroutine")
}
