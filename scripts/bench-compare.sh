#!/usr/bin/env bash
# make bench-compare REF=<commit or halu binary> [SHORT=1]: the engine's
# figures of this checkout's build and of REF's, in one mirrored run
# (e2e/bench_compare_test.go says how they are compared). REF a commit is
# built from a temporary worktree, removed after. SHORT=1 is the form CI
# runs: the cached rerun and one promptfoo pair a measurement (– when
# promptfoo is not installed), failing on a slowdown beyond the noise.
set -euo pipefail
ref="${1:?REF: a commit or a halu binary}"
work="$(mktemp -d)"
cleanup() {
	git worktree remove --force "$work/src" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
if [ -f "$ref" ] && [ -x "$ref" ]; then
	bin="$ref"
else
	commit="$(git rev-parse --verify "$ref^{commit}")"
	git worktree add --detach -q "$work/src" "$commit"
	(cd "$work/src" && go build -o "$work/halu-ref" ./cmd/halu)
	bin="$work/halu-ref"
	echo "reference: $ref ($commit), built into $bin"
fi
if [ -n "${SHORT:-}" ]; then
	export HALU_BENCH_COMPARE=cached,promptfoo HALU_BENCH_PROMPTFOO_PAIRS=1 HALU_BENCH_COMPARE_FAIL=1
fi
HALU_BENCH_REF="$bin" HALU_OLLAMA_BIN="${HALU_OLLAMA_BIN:?}" HALU_SHARED="${HALU_SHARED:?}" \
	go test -tags e2e -count=1 -timeout 3h -run '^TestBenchCompare$' -v ./e2e/ |
	grep --line-buffered -v '^=== RUN\|^--- PASS\|^PASS\|^ok'
