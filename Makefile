# halu — see README.md. `make demo` and `make test` are all a fresh machine needs.
GO        ?= go
BIN       := bin/halu
SHARED    ?= $(abspath ../shared)
PKGS      := ./...

.PHONY: build test test-slow e2e demo readme-commands ollama lint bench bench-index bench-engine bench-shards bench-compare bench-verify bench-scale clean

# The commit halu is built from, in every run's manifest (GOFLAGS may say
# -buildvcs=false, and then the toolchain stamps none).
REVISION  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD -- 2>/dev/null || echo +modified)

build:
	$(GO) build -ldflags "-X main.revision=$(REVISION)" -o $(BIN) ./cmd/halu

# Unit tests: in-process fake Ollama, race detector on; the index's build
# tests once more on one core (a build must not hang at any CPU count);
# then a few seconds of fuzzing for every input reader (scripts/fuzz-short.sh).
# The slowest tests (exhaustive top-k over real data, the analyzer on 50,000
# texts: minutes under -race; α's coverage simulation) skip in -short;
# test-slow runs them, and CI runs both targets.
test:
	$(GO) test -race -short -count=1 $(PKGS)
	GOMAXPROCS=1 $(GO) test -count=1 -run 'Build|Interrupted' ./index
	scripts/fuzz-short.sh
	@echo "make test: passed — unit tests of every package (race detector, -short), the index's build on one core, and every fuzz target"

test-slow:
	$(GO) test -race -count=1 -run 'TestPrunedTopKIsExhaustive|TestDenseListsGetBlockBounds|TestAnalyzerMatchesEnglish' -v ./index
	$(GO) test -count=1 -run 'TestKappaCoverageWhereLabelsAreRare|TestRateCoverageWhereLabelsAreRare|TestAlphaCoverageWhereLabelsAreRare' -v ./metrics

# End-to-end: a real Ollama server on a free loopback port with its own
# models directory, the tiny model imported, every path driven through the
# halu binary. The server is stopped by the tests, on failure too.
e2e: ollama
	HALU_OLLAMA_BIN="$$(scripts/ollama-bin.sh)" HALU_SHARED="$(SHARED)" \
		$(GO) test -tags e2e -count=1 -timeout 30m -v ./e2e/

# The main job: every suite on small bundled data against a real Ollama,
# report written to demo/.
demo: build ollama
	HALU_OLLAMA_BIN="$$(scripts/ollama-bin.sh)" HALU_SHARED="$(SHARED)" scripts/demo.sh

# Every command README.md shows, as written (tiny models under the README's
# names, bundled data under its file names), against a private real Ollama.
readme-commands: build ollama
	bin="$$(scripts/ollama-bin.sh)" && HALU_OLLAMA_BIN="$$bin" HALU_NUM_THREAD="$${HALU_NUM_THREAD:-1}" $(BIN) with-ollama --bin "$$bin" --log /tmp/halu-readme-ollama.log -- scripts/readme-commands.sh

# Puts a pinned Ollama binary in ~/.cache/halu when none is on PATH.
ollama:
	@scripts/ollama-bin.sh >/dev/null

# staticcheck, pinned, from the Go module proxy (built once into Go's cache).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	$(GO) run $(STATICCHECK) -tags e2e ./e2e/

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Shards: the slowest shard's wall time over the fastest's, for 4 shards of
# a simulated 2,000-item run (median of 3), seeded order beside the list's
# own; then merge and report of a 100,000-record run, timed, with peak RSS.
bench-shards:
	$(GO) test -run '^$$' -bench '^BenchmarkShardBalance$$' -benchtime 3x ./runner/engine/ | grep Benchmark
	HALU_BENCH_MERGE_RECORDS=100000 $(GO) test -count=1 -run '^TestBenchMergeReport$$' -v ./cmd/halu/ | grep -v '^=== RUN\|^--- \|^PASS\|^ok'

clean:
	rm -rf bin demo

# Index speed and scale beside SQLite FTS5 (sqlite3 from Debian); N documents.
BENCH_N ?= 100000
# Relation rows of the KG import benchmark.
BENCH_KG_ROWS ?= 2000000
# FTS5 queries to time (0: all 1,000; FTS5 takes seconds a query at 1M).
BENCH_FTS_QUERIES ?= 0
# grow: remixed documents also carry made-up words of a vocabulary that
# grows with the corpus as PubMed's does (Heaps' law, exponent 0.8).
BENCH_VOCAB ?=
bench-index: build
	@command -v sqlite3 >/dev/null || (apt-get install -y -qq sqlite3 >/dev/null 2>&1 || { echo "bench-index needs sqlite3 (apt-get install sqlite3)"; exit 1; })
	HALU_BENCH_N=$(BENCH_N) HALU_BENCH_VOCAB=$(BENCH_VOCAB) HALU_BENCH_KG_ROWS=$(BENCH_KG_ROWS) HALU_BENCH_FTS_QUERIES=$(BENCH_FTS_QUERIES) HALU_BENCH_HALU=$(abspath $(BIN)) $(GO) test -count=1 -timeout 2h -run 'TestBenchIndex|TestBenchKGImport' -v ./index/ | grep -v '^=== RUN\|^--- \|^PASS\|^ok'

# halu's engine side by side with a minimal direct client and with
# promptfoo (installed into ~/.cache/halu by npm the first time) on private
# real servers (logging proxies capture and count the requests), a
# 10,000-item cached rerun with no server, and the items-in-flight sweep:
# one line per figure, about 50 minutes on 2 cores.
bench-engine: build ollama
	HALU_BENCH_ENGINE=1 HALU_OLLAMA_BIN="$$(scripts/ollama-bin.sh)" HALU_SHARED="$(SHARED)" $(GO) test -tags e2e -count=1 -timeout 2h -run '^TestBenchEngine$$' -v ./e2e/ | grep --line-buffered -v '^=== RUN\|^--- \|^PASS\|^ok'

# What a run costs as it grows (10,120 to 101,200 items against an
# instant fake server): peak memory and CPU per call, one process a run,
# medians of three rounds (HALU_BENCH_SCALE_ROUNDS); about three minutes.
bench-scale: build ollama
	HALU_BENCH_SCALE=1 HALU_OLLAMA_BIN="$$(scripts/ollama-bin.sh)" $(GO) test -tags e2e -count=1 -timeout 1h -run '^TestBenchScale$$' -v ./e2e/ | grep --line-buffered -v '^=== RUN\|^--- \|^PASS\|^ok'

# How deterministic the real server is for the shipped models, as halu
# verify measures it: temperature 0 and sampled with a seed, asked again
# at --parallel 1 and 4 (a few minutes).
bench-verify: build ollama
	HALU_BENCH_VERIFY=1 HALU_OLLAMA_BIN="$$(scripts/ollama-bin.sh)" HALU_SHARED="$(SHARED)" $(GO) test -tags e2e -count=1 -timeout 1h -run '^TestBenchVerify$$' -v ./e2e/ | grep --line-buffered -v '^=== RUN\|^--- \|^PASS\|^ok'

# The engine's figures of this build beside another's (REF: a commit,
# built from a temporary worktree, or a halu binary), in one mirrored run:
# each figure's ratio this ÷ reference with its pairs and the noise.
# SHORT=1 (what CI runs): the cached rerun and one promptfoo pair a
# measurement, about ten minutes, failing on a slowdown beyond the noise.
bench-compare: build ollama
	HALU_OLLAMA_BIN="$$(scripts/ollama-bin.sh)" HALU_SHARED="$(SHARED)" SHORT="$(SHORT)" scripts/bench-compare.sh "$(REF)"
