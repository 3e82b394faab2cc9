#!/usr/bin/env bash
# Fetches Prometheus and promtool from Debian's `prometheus` package (statically linked Go binaries)
# and unpacks them outside the repo, once per machine, without installing the package (no root, no
# service): ~/.cache/lameduck/prometheus-<version>/usr/bin/{prometheus,promtool}. Needs apt-get's
# package lists (run `apt-get update` first on a fresh machine). Prints the bin directory on the last line.
set -euo pipefail
command -v apt-get >/dev/null || { echo "prometheus install: apt-get is needed (Debian or Ubuntu)" >&2; exit 3; }
version="$(apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}')"
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
  echo "prometheus install: apt has no 'prometheus' package candidate (run apt-get update)" >&2; exit 3
fi
root="${LAMEDUCK_CACHE:-$HOME/.cache/lameduck}/prometheus-${version//[:+~]/_}"
if [ -x "$root/usr/bin/promtool" ] && [ -x "$root/usr/bin/prometheus" ]; then echo "$root/usr/bin"; exit 0; fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download "prometheus=$version" >&2)
mkdir -p "$root.partial"
dpkg-deb -x "$work"/prometheus_*.deb "$root.partial"
rm -rf "$root"
mv "$root.partial" "$root"
"$root/usr/bin/promtool" --version >&2
echo "$root/usr/bin"
