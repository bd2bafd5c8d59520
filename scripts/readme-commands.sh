#!/usr/bin/env bash
# Runs every command README.md and docs/*.md show in their ```sh blocks, as written, against
# a private real Ollama server (run under `halu with-ollama`, as .ci/run
# does). What is substituted, and why:
#   - model names: the README's models are imported, under their own names,
#     as halu's tiny random-weight model (nothing is downloaded);
#   - file names: the README's inputs are made from the bundled test data,
#     under the README's names, in a scratch directory the commands run in;
#   - "..." in a command stands for flags the reader fills in: a small set;
#   - sizes: flags appended after the README's own (the last value of a flag
#     wins) keep each run small, e.g. `--questions 1 --answers 2` for hic;
#     hypo's `--knowledge-fit drop`, because the tiny model's 2,048-token
#     window cannot hold the paper's 32 documents (a default run refuses),
#     and intent's `--too-long skip` for a query longer than a model holds;
#     a judge cap its byte-level tokens can hold, and JSON judges where a
#     command shows the paper's text judges with a real model the tiny one
#     stands in for (json_judges); a command that names its judge format —
#     the README's offline first run — runs as written. Every command must
#     measure something: one that measured nothing exits 4, and fails here;
#   - labels.csv: the sheet `halu judges sheet` wrote, filled in yes/no;
#   - felm_science.jsonl: the FELM file from ../shared (not shipped).
#   - cfaith-ds: when the tiny model's build keeps no item (its items never
#     pass the verifier), the bundled dataset of the same layout stands in.
# Not run: `halu models pull` (needs the network: the tiny model is imported
# instead), and `make demo` / `make test` (CI runs them itself). A command
# with a quality gate may exit 3 (the tiny model's scores fail it); a run
# may exit 4 — finished, measured nothing in part (the tiny model cannot
# answer every format: a KnowHD run's free hypotheses) — only when its
# status shows it measured something; any other exit but 0 fails the
# script.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
HALU_BIN="$ROOT/bin/halu"
[ -x "$HALU_BIN" ] || { echo "readme-commands: build halu first (make build)" >&2; exit 1; }
: "${OLLAMA_HOST:?run under halu with-ollama (OLLAMA_HOST unset)}"
: "${HALU_OLLAMA_BIN:?set HALU_OLLAMA_BIN (the pool command starts a second server)}"
WORK=$(mktemp -d)
trap '[ -n "${SLURM_CONF:-}" ] && "$ROOT/scripts/slurm-local.sh" stop "$WORK/slurm" >/dev/null 2>&1; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/bin"
ln -s "$HALU_BIN" "$WORK/bin/halu"
ln -s "$ROOT/scripts" "$WORK/scripts" # the docs' scripts/slurm-local.sh
export PATH="$WORK/bin:$PATH" HALU_CACHE="$WORK/cache"

# The README's commands: sh blocks, continuation lines joined, comments cut.
awk '/^```sh/{f=1;next} /^```/{f=0} f' README.md docs/servers.md docs/running.md docs/judges.md docs/confidence.md docs/run-control.md docs/reports.md docs/layout.md |
  sed -e ':a' -e '/\\$/N; s/\\\n[[:space:]]*/ /; ta' |
  sed -e 's/[[:space:]]#[[:space:]].*$//' -e 's/[[:space:]]*$//' |
  grep -v '^$' >"$WORK/commands"

cd "$WORK"
echo "== inputs under the README's names"
# 16,384 tokens of trained context: FaithQA's judge prompts hold a whole
# query and Table 7's instructions, more than 2,048 of the tiny model's
# byte-level tokens, and a run refuses a model that cannot hold them.
halu models tiny --out tiny.gguf --seed 1 --context 16384 >/dev/null
for m in qwen2.5:0.5b qwen2.5:1.5b qwen2.5:7b llama3.2:3b gemma2:2b phi3:mini llama3.1:8b all-minilm; do
  halu models import tiny.gguf --name "$m" --template '{{ .Prompt }}' >/dev/null
done
# The ideas commands' generator is stories260K (a trained TinyStories
# model, carried in testdata/models): the tiny model ends its replies
# after a few bytes, and an idea needs 100 characters to pass the authors'
# length filter — with it every idea is excluded and the run measures
# nothing.
halu models import "$ROOT/testdata/models/stories260K.gguf" --name mistral:7b --template '{{ .Prompt }}' >/dev/null
cp tiny.gguf Qwen2.5-0.5B-Instruct-Q4_K_M.gguf
cat >second.sh <<'EOF'
#!/usr/bin/env bash
# Runs a README command naming a second server (@SECOND@), under the
# private server with-ollama started for it, with the models imported.
set -euo pipefail
for m in qwen2.5:7b llama3.2:3b; do
  halu models import tiny.gguf --name "$m" --template '{{ .Prompt }}' >/dev/null
done
exec bash -c "${1//@SECOND@/$OLLAMA_HOST}"
EOF
chmod +x second.sh
printf '%s' '{{ .Prompt }}' >qwen-template.txt
cp "$ROOT/testdata/pubmed/pubmed26n1335.xml.gz" pubmed25n0001.xml.gz
cp "$ROOT/testdata/pubmed/biopython/pubmed5.xml" pubmed25n1300.xml.gz.xml && gzip -c pubmed25n1300.xml.gz.xml >pubmed25n1300.xml.gz
cp "$ROOT/testdata/kg/pubtator3.37026113_240614.pubtator" relation2pubtator3
mkdir -p BioRED runs
cp "$ROOT/testdata/kg/biored_train_sample.pubtator" BioRED/Train.PubTator
cp "$ROOT/runner/intent/data/sample.jsonl" faithqa.jsonl
cp "$ROOT/testdata/intent/pubmedqa_articles.jsonl" abstracts.jsonl
# FELM is CC BY-NC-SA and not shipped: the command that reads it is skipped,
# and says so, where no ../shared (or $HALU_SHARED) holds it.
FELM="${HALU_SHARED:-$ROOT/../shared}/data/judge-validation/felm_science.jsonl"
have_felm=0
if [ -f "$FELM" ]; then cp "$FELM" felm_science.jsonl && have_felm=1; fi
head -n 2 "$ROOT/testdata/cfaith/docs_zh.jsonl" >docs.jsonl
# `halu slurm`: a real single-node cluster on this machine (as root, with
# Debian's slurm packages; CI installs them); elsewhere those commands are
# skipped and say why.
have_slurm=0 why_slurm=""
if out=$("$ROOT/scripts/slurm-local.sh" start "$WORK/slurm" 2>&1); then
  eval "$(tail -n 1 <<<"$out")" && export SLURM_CONF && have_slurm=1
else
  why_slurm=$(tail -n 1 <<<"$out")
  if [ -n "${CI:-}" ]; then echo "readme-commands: $why_slurm" >&2; exit 1; fi
fi
# The run file the docs' `halu run -f hic.yaml` reads: JSON judges, as the
# tiny judge needs (json_judges).
cat >hic.yaml <<'EOF'
suite: hic
models: qwen2.5:1.5b
judges: [llama3.2:3b]
embed-model: all-minilm
questions: 1
max-tokens: 40
judge-format: json
judge-max-tokens: 160
EOF

# json_judges: JSON judges for a command that shows the paper's text judges
# with a real model (7B, 3B: they write its verdict line), which the tiny
# stand-in cannot write — a run whose judge replies all go unread measured
# nothing and exits 4. A command that names its judge format (the README's
# offline first run) runs as written.
json_judges() {
  case "$1" in *--judge-format*) ;; *) echo " --judge-format json" ;; esac
}

# small: flags appended to a command by what it runs.
small() {
  case "$1" in
    *"run hic"*) echo "--questions 1 --answers 2 --max-tokens 40 --judge-max-tokens 160$(json_judges "$1")" ;;
    # A question a shard.
    *"slurm submit"*"-- hic"*) echo "--questions 1,11,21,31 --answers 2 --max-tokens 40 --judge-max-tokens 160$(json_judges "$1")" ;;
    *"judges validate"*) echo "--limit 6 --judge-max-tokens 120$(json_judges "$1")" ;;
    *"run smoke"*) echo "--limit 2 --max-tokens 40" ;;
    # A critic's JSON opens with its free-text analysis: the tiny model
    # closes that string only by chance, so its cap is long enough for one.
    *"run ideas"*) echo "--limit 1 --max-tokens 60 --judge-max-tokens 400 --fluency-max-tokens 20$(json_judges "$1")" ;;
    # KnowHD's support verdicts as JSON where the command checks claims:
    # the tiny verifier cannot write the authors' "1" or "0" line.
    *"run hypo"*--knowhd*) echo "--limit 1 --tasks chem-gene --max-tokens 40 --verifier-max-tokens 48 --candidates 1 --knowledge-fit drop$(case "$1" in *--verdict-format*) ;; *) echo " --verdict-format json" ;; esac)" ;;
    # A label held to its schema ({"proposed_hypothesis": LABEL}) is one
    # token a character to the tiny model: room for the whole object.
    *"run hypo"*"--hypothesis-format labels"*) echo "--limit 1 --tasks chem-gene --max-tokens 80 --candidates 1 --knowledge-fit drop" ;;
    *"run hypo"*) echo "--limit 1 --tasks chem-gene --max-tokens 40 --verifier-max-tokens 48 --candidates 1 --knowledge-fit drop" ;;
    # JSON judges with room for the constraint lists the tiny judge fills
    # with noise until it closes a string by chance.
    *"run intent"*) echo "--limit 1 --max-tokens 40 --judge-max-tokens 400 --baseline-samples 1 --fact-samples 1 --too-long skip$(json_judges "$1")" ;;
    *"run cfaith"*) echo "--limit 1 --max-tokens 40" ;;
    *"build cfaith"*) echo "--max-questions 1 --responses 1 --types FactFab --train 1 --val 1 --rounds 1 --candidates 1 --max-tokens 120 --verifier-max-tokens 60" ;;
    *"rerun"*"--stage"*) echo "--judge-max-tokens 160" ;; # room for a JSON verdict of the tiny judge
  esac
}

n=0 skipped=0
while IFS= read -r cmd; do
  case "$cmd" in
    make\ *|"halu models pull"*) echo "-- skipped (see the script's header): $cmd"; skipped=$((skipped + 1)); continue ;;
    "halu slurm"*)
      if [ "$have_slurm" = 0 ]; then
        echo "-- skipped ($why_slurm): $cmd"; skipped=$((skipped + 1)); continue
      fi ;;
    *felm_science.jsonl*)
      if [ "$have_felm" = 0 ]; then
        echo "-- skipped (FELM is CC BY-NC-SA, not shipped, and not at $FELM): $cmd"; skipped=$((skipped + 1)); continue
      fi ;;
  esac
  run="$cmd"
  # "..." stands for what a reader fills in: models for a run, more files
  # for an index build.
  run="${run/halu run hic .../halu run hic --models qwen2.5:1.5b --judges llama3.2:3b --embed-model all-minilm}"
  run="${run/halu run ideas .../halu run ideas --models mistral:7b --judges llama3.2:3b,gemma2:2b,phi3:mini --out runs/ideas-gated}"
  run="${run// ... / }"
  # GPU servers: the real server's OpenAI-compatible /v1 stands in for
  # vLLM and llama-server, the tiny model for their models.
  run="${run//http:\/\/gpu1:8000/http://$OLLAMA_HOST}"
  run="${run//http:\/\/127.0.0.1:8080/http://$OLLAMA_HOST}"
  run="${run//Qwen\/Qwen2.5-7B-Instruct/qwen2.5:7b}"
  run="${run//qwen2.5-7b-instruct-q4_k_m.gguf/qwen2.5:7b}"

  case "$run" in
    *"run ideas"*--limit*) run="$run --out runs/ideas-1" ;; # the report line names it
  esac
  extra=$(small "$run")
  if [ -n "$extra" ]; then
    case "$run" in
      *">"*) run="${run%%>*} $extra >${run#*>}" ;;
      *) run="$run $extra" ;;
    esac
  fi
  # A pool of two machines: a second private server, started for the
  # command, with the same tiny model imported (second.sh).
  case "$run" in
    *gpu1:11434,gpu2:11434*)
      run="${run//gpu1:11434,gpu2:11434/$OLLAMA_HOST,@SECOND@}"
      run="halu with-ollama --bin \"$HALU_OLLAMA_BIN\" -- ./second.sh '$run'" ;;
  esac
  echo "-- $cmd"
  [ "$run" != "$cmd" ] && echo "   ran as: $run"
  set +e
  bash -c "$run" >"$WORK/out" 2>&1
  rc=$?
  set -e
  want=0
  case "$cmd" in *--fail-under*|*--fail-over*) [ $rc -eq 3 ] && want=3 ;; esac
  if [ $rc -eq 4 ]; then
    # Finished, measured nothing in part: the tiny model cannot answer
    # every format a command asks (a KnowHD run's free hypotheses). The
    # command still has to measure something: a run that measured
    # nothing at all fails here.
    dir=$(sed -n 's/^run directory: \([^ ]*\).*/\1/p' "$WORK/out" | tail -n 1)
    if [ -n "$dir" ] && ! halu report "$dir" --status | grep -q "complete, measured nothing"; then
      echo "   (measured part of what it set out to, with the tiny model: $(grep -o 'part of the run measured nothing: [^;]*' "$WORK/out" | head -n 1))"
      want=4
    fi
  fi
  if [ $rc -ne "$want" ]; then
    tail -n 20 "$WORK/out"
    echo "readme-commands: exit $rc: $cmd" >&2
    exit 1
  fi
  # Commands that name runs the README's later lines use.
  case "$cmd" in
    "halu slurm submit"*)
      # The later lines read the submission once the cluster is done
      # with it: wait for the merged run (or for nothing left queued).
      case "$cmd" in *--print*) ;; *)
        sub=$(sed -E 's/.*--out ([^ ]+).*/\1/' <<<"$cmd")
        for _ in $(seq 600); do
          st=$(halu slurm status "$sub")
          grep -q "merged: complete" <<<"$st" && break
          grep -q "^merge .*not in the queue" <<<"$st" && { echo "$st"; cat "$sub"/slurm/*.out >&2; echo "readme-commands: the merge job left the queue with no merged run" >&2; exit 1; }
          sleep 1
        done
        grep -q "merged: complete" <<<"$st" || { echo "$st"; echo "readme-commands: $sub: not merged after 10 minutes" >&2; exit 1; } ;;
      esac ;;
    *"--out runs/hic-1"*)
      # The runs `halu compare` compares, one per generator; JSON judges,
      # since the tiny judge cannot write the paper's one-line verdict.
      for m in qwen2.5:1.5b llama3.2:3b; do
        halu run hic --models "$m" --judges gemma2:2b --embed-model all-minilm --questions 1,11,21 --answers 2 \
          --max-tokens 40 --judge-format json --out "runs/hic-${m%%[0-9.]*}" >/dev/null 2>&1
      done ;;
    *"judges sheet runs/hic-1"*)
      # People's labels: the sheet filled in, yes and no in turn.
      # (Its texts span lines: a CSV reader, not awk, fills it.)
      /usr/bin/python3 -c 'import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
for i, r in enumerate(rows[1:]):
    r[-1] = ("yes", "no")[i % 2]
csv.writer(open(sys.argv[2], "w", newline="")).writerows(rows)' runs/hic-1/labels/sheet.csv labels.csv ;;
    *"build cfaith"*"--out cfaith-ds"*)
      # The tiny model's items never pass the verifier: the next line
      # evaluates the bundled dataset of the same layout instead.
      if ! [ -s cfaith-ds/generative_qa.jsonl ] && ! [ -s cfaith-ds/single_choice_qa.jsonl ]; then
        echo "   (the build kept no item from the tiny model; cfaith-ds is testdata/cfaith/sample_zh from here on)"
        rm -rf cfaith-ds && cp -r "$ROOT/testdata/cfaith/sample_zh" cfaith-ds
      fi ;;
  esac
  n=$((n + 1))
done <"$WORK/commands"
echo "readme-commands: $n commands ran as README.md and docs/ show them; $skipped skipped"
