#!/usr/bin/env bash
# make demo: every suite halu has, on its small bundled sample, against a
# private real Ollama server; results and the report go to demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${HALU_DEMO_OUT:-demo}"
rm -rf "$OUT"
mkdir -p "$OUT"
start=$(date +%s)
# Every generation asks for half the cores (at least one): on a small
# machine the server's default thread count oversubscribes them
# (HALU_NUM_THREAD sets --num-thread; set it to override).
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
export HALU_NUM_THREAD="${HALU_NUM_THREAD:-$(( cores / 2 > 0 ? cores / 2 : 1 ))}"
echo "num_thread: $HALU_NUM_THREAD"
# HALU_DEMO_MODELS keeps the server's models in a directory of your
# choosing: Ollama's model digests name the directory the models were
# imported into, so two demos with the same one are byte-comparable.
bin/halu with-ollama --bin "${HALU_OLLAMA_BIN:?}" --log "$OUT/ollama.log" ${HALU_DEMO_MODELS:+--models "$HALU_DEMO_MODELS"} -- scripts/demo-steps.sh "$OUT"

# The report needs no model: the run directories are enough.
echo "== report: HTML with charts, Markdown, CSV per table"
SECONDS=0
bin/halu report "$OUT"/runs/* "$OUT/cfaith-build/run" --html "$OUT/report.html" --csv "$OUT/tables" --long "$OUT/figures.csv" --samples "$OUT/samples.jsonl"
bin/halu report "$OUT"/runs/* "$OUT/cfaith-build/run" --md >"$OUT/report.md"
# The judges' confidence checked against people's labels: its table and ROC.
scripts/check-report.sh "$OUT/report.html" "$OUT/report.png" "Model-side confidence checked against" "ROC of the confidence scores"
printf '%s\t%s\t\n' "$SECONDS" "report (HTML, Markdown, CSV; checked in headless Chromium when present)" >>"$OUT/timings.tsv"

# The closing table: each step, its time and what its runs measured (their
# status by measurement, items, headline figures resting on a scored unit,
# unscored judgements), then what measured nothing and how to fix it.
echo
echo "Steps, their times and what they measured:"
while IFS=$'\t' read -r secs what dirs; do
  printf '  %5ss  %s\n' "$secs" "$what"
  [ -n "$dirs" ] || continue
  # shellcheck disable=SC2086 # dirs is a list of run directories
  bin/halu report $dirs --status | sed -e 's/^/          /'
done <"$OUT/timings.tsv"
echo "demo finished in $(( $(date +%s) - start ))s"
echo "report:  $(cd "$OUT" && pwd)/report.html  (open it in a browser; it loads nothing from the network)"
echo "also:    $OUT/report.md, $OUT/tables/*.csv, $OUT/figures.csv (every figure, long form), $OUT/samples.jsonl (every record), $OUT/report.txt (console tables), $OUT/runs/* (run directories)"
