#!/usr/bin/env bash
# Builds Contour's CLI (`contour envoy shutdown`, `contour envoy shutdown-manager`) outside the repo,
# once per machine: ~/.cache/lameduck/contour-<version>/bin/contour (about 3 min on a cold Go cache).
# Prints the binary's path on the last line.
set -euo pipefail
version="${LAMEDUCK_CONTOUR_VERSION:-v1.33.8}"
root="${LAMEDUCK_CACHE:-$HOME/.cache/lameduck}/contour-$version"
bin="$root/bin/contour"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
command -v go >/dev/null || { echo "contour install: go is needed (go install github.com/projectcontour/contour/cmd/contour@$version)" >&2; exit 1; }
started=$(date +%s)
mkdir -p "$root/bin"
GOBIN="$root/bin.partial" GOFLAGS=-mod=mod go install "github.com/projectcontour/contour/cmd/contour@$version" >&2
mv "$root/bin.partial/contour" "$bin"
rmdir "$root/bin.partial" 2>/dev/null || true
echo "contour install: $version in $(( $(date +%s) - started )) s" >&2
echo "$bin"
