#!/usr/bin/env bash
# check-report.sh REPORT.html SCREENSHOT.png: opens a halu report in headless
# Chromium, saves a screenshot, and checks the rendered page has its tables
# and charts and that no script ran (model text is escaped, and the page's
# Content-Security-Policy forbids script). Without Chromium it says so and
# passes, except in CI (CI set), where .ci/run installs it. Further texts the
# rendered page must hold can be given as more arguments.
set -euo pipefail
page="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
shot="$2"
shift 2
extra=("$@")
bin=""
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null; then bin="$b"; break; fi
done
if [ -z "$bin" ]; then
  if [ -n "${CI:-}" ]; then echo "check-report: no chromium (apt-get install chromium)" >&2; exit 1; fi
  echo "   (no chromium: the report was not checked in a browser)"
  exit 0
fi
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
chrome() {
  timeout 120 "$bin" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$profile" --window-size=1280,2400 "$@" "file://$page" 2>>"$profile/chromium.log"
}
dom="$(chrome --dump-dom)" || { cat "$profile/chromium.log" >&2; exit 1; }
fail=0
for want in '<table' '<svg' 'id="leaderboards"' 'class="sample"' "${extra[@]}"; do
  if ! grep -q -- "$want" <<<"$dom"; then echo "check-report: the rendered page has no $want" >&2; fail=1; fi
done
if grep -q 'data-xss="' <<<"$dom"; then echo "check-report: a script ran in the report" >&2; fail=1; fi
if grep -qi '<script' "$page"; then echo "check-report: the report contains a <script> tag" >&2; fail=1; fi
chrome --screenshot="$shot" >/dev/null || { cat "$profile/chromium.log" >&2; exit 1; }
[ -s "$shot" ] || { echo "check-report: no screenshot" >&2; fail=1; }
[ "$fail" = 0 ] || exit 1
echo "   checked in headless Chromium: $(grep -o '<table' <<<"$dom" | wc -l) tables, $(grep -o '<svg' <<<"$dom" | wc -l) charts, no script ran; screenshot $shot"
