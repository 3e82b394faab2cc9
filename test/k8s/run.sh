#!/usr/bin/env bash
# npm run test:k8s — the suites against a real Kubernetes control plane (test/k8s/**/*.test.ts):
# etcd, kube-apiserver and kube-controller-manager v1.34.4 on loopback. Installs them first
# (test/k8s/install.sh: cached outside the repo, ~5 min the first time). Where Go or etcd cannot
# be had it says why and skips; LAMEDUCK_K8S=skip skips on purpose.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${LAMEDUCK_K8S:-}" = skip ]; then
  echo "test:k8s: skipped (LAMEDUCK_K8S=skip)"
  exit 0
fi
started=$(date +%s)
rc=0
bash test/k8s/install.sh >/dev/null || rc=$?
if [ "$rc" = 3 ]; then
  echo "test:k8s: skipped: the control plane cannot be installed here (the reason is above)"
  exit 0
fi
[ "$rc" = 0 ] || exit "$rc"
echo "test:k8s: control plane ready after $(( $(date +%s) - started )) s"
# One file at a time: each starts its own etcd and API server.
LAMEDUCK_TEST_CONCURRENCY="${LAMEDUCK_TEST_CONCURRENCY:-1}" node scripts/test.ts test/k8s "$@"
echo "test:k8s: $(( $(date +%s) - started )) s in all"
