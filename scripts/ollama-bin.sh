#!/usr/bin/env bash
# Prints the path of an Ollama server binary: `ollama` from PATH if there is
# one, else the pinned version built once from the Go module proxy and cached.
# Building needs Debian's nlohmann-json3-dev and libstb-dev (installed here
# when running as root) and miniaudio's header from the malgo Go module.
set -euo pipefail
VERSION="${OLLAMA_VERSION:-v0.17.4}"
CACHE="${HALU_OLLAMA_CACHE:-$HOME/.cache/halu/ollama-$VERSION}"
BIN="$CACHE/ollama"

if [ -z "${HALU_FORCE_PINNED_OLLAMA:-}" ] && command -v ollama >/dev/null 2>&1; then
  command -v ollama
  exit 0
fi
# A binary that reports its version is current; one built without the
# version stamp (it says 0.0.0) is rebuilt, since run manifests and cache
# keys record the server's version.
if [ -x "$BIN" ] && "$BIN" --version 2>&1 | grep -q "version is ${VERSION#v}\$"; then
  echo "$BIN"
  exit 0
fi

echo "building Ollama $VERSION from the Go module proxy into $CACHE (about 3 minutes on 2 cores)" >&2
missing=()
for p in nlohmann-json3-dev libstb-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
  else
    echo "ollama build needs: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
malgo="$(cd "$work" && go mod download -json github.com/gen2brain/malgo@v0.11.24 | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
mkdir -p "$work/include/miniaudio"
cp "$malgo/miniaudio.h" "$work/include/miniaudio/"
mkdir -p "$CACHE"
(cd "$work" && CGO_CPPFLAGS="-I$work/include" GOBIN="$CACHE.tmp" go install -ldflags "-X=github.com/ollama/ollama/version.Version=${VERSION#v}" "github.com/ollama/ollama@$VERSION" >&2)
mv -f "$CACHE.tmp/ollama" "$BIN"
rmdir "$CACHE.tmp"
echo "$BIN"
