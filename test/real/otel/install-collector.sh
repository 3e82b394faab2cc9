#!/usr/bin/env bash
# Builds a minimal OpenTelemetry Collector (OTLP receiver; OTLP/HTTP and debug exporters) with the
# Collector's own builder (ocb), from the Go module proxy, outside the repo, once per machine:
# ~/.cache/lameduck/otelcol-<version>/otelcol-lameduck. The telemetry test sends the OTel JS SDK's
# OTLP/HTTP (protobuf) to it and reads what the Collector forwards (OTLP/HTTP JSON) in the test.
# Prints the binary's path on the last line.
set -euo pipefail
command -v go >/dev/null || { echo "otelcol install: go is needed" >&2; exit 1; }
version="${LAMEDUCK_OTELCOL_VERSION:-0.165.0}"
root="${LAMEDUCK_CACHE:-$HOME/.cache/lameduck}/otelcol-$version"
bin="$root/otelcol-lameduck"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
started=$(date +%s)
mkdir -p "$root"
GOBIN="$root/tools" go install "go.opentelemetry.io/collector/cmd/builder@v$version" >&2
cat >"$root/manifest.yaml" <<YAML
dist:
  name: otelcol-lameduck
  description: lameduck's test Collector (OTLP in, OTLP/HTTP and debug out)
  output_path: $root/build
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver v$version
exporters:
  - gomod: go.opentelemetry.io/collector/exporter/otlphttpexporter v$version
  - gomod: go.opentelemetry.io/collector/exporter/debugexporter v$version
YAML
"$root/tools/builder" --config "$root/manifest.yaml" >&2
mv "$root/build/otelcol-lameduck" "$bin"
echo "otelcol install: $version in $(( $(date +%s) - started )) s" >&2
echo "$bin"
