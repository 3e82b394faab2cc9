#!/usr/bin/env bash
# Builds Istio's pilot-agent (only `wait` and `request` run without istiod) outside the repo, once per
# machine: ~/.cache/lameduck/pilot-agent-<version>/bin/pilot-agent. istio.io/istio publishes no semver
# module tags, so the version is a pseudo-version, pinned here (the module proxy's @latest in November
# 2026; ~90 s to build with a warm Go cache); LAMEDUCK_ISTIO_VERSION=latest takes the newest instead.
# Prints the binary's path on the last line.
set -euo pipefail
command -v go >/dev/null || { echo "pilot-agent install: go is needed" >&2; exit 1; }
version="${LAMEDUCK_ISTIO_VERSION:-v0.0.0-20260827124520-eed52ebb66ad}"
if [ "$version" = latest ]; then version="$(go list -m istio.io/istio@latest | awk '{print $2}')"; fi
root="${LAMEDUCK_CACHE:-$HOME/.cache/lameduck}/pilot-agent-$version"
bin="$root/bin/pilot-agent"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
started=$(date +%s)
mkdir -p "$root"
GOBIN="$root/bin.partial" GOFLAGS=-mod=mod go install "istio.io/istio/pilot/cmd/pilot-agent@$version" >&2
mkdir -p "$root/bin"
mv "$root/bin.partial/pilot-agent" "$bin"
rmdir "$root/bin.partial" 2>/dev/null || true
echo "pilot-agent install: $version in $(( $(date +%s) - started )) s" >&2
echo "$bin"
