#!/usr/bin/env bash
# Installs the real Kubernetes control plane for `npm run test:k8s`, outside the repo, once per machine:
#   - kube-apiserver and kube-controller-manager built from the Go module proxy into
#     ~/.cache/lameduck/k8s-<version>/bin (about 4-5 min on a cold Go build cache). `go install` refuses
#     k8s.io/kubernetes (its go.mod replaces each ./staging module), so a wrapper module requires it and
#     points each staging module at its published k8s.io/<name> v0.<minor>.<patch> release instead.
#   - etcd from Debian (`apt-get install -y etcd-server`, 3.4.x), when no etcd is on PATH.
# Prints the bin directory on the last line. Exits 3, saying why, when Go or etcd cannot be had
# (the test:k8s runner turns that into a skip with the reason).
set -euo pipefail
version="${LAMEDUCK_K8S_VERSION:-1.34.4}"
root="${LAMEDUCK_CACHE:-$HOME/.cache/lameduck}/k8s-$version"
bin="$root/bin"
log () { echo "k8s install: $*" >&2; }

if ! command -v etcd >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    started=$(date +%s)
    # The package lists may be missing or stale on a fresh machine.
    apt-get install -y -q etcd-server >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q etcd-server >/dev/null; }
    log "etcd-server from apt in $(( $(date +%s) - started )) s"
  fi
  command -v etcd >/dev/null 2>&1 || { log "no etcd on PATH and apt-get cannot install etcd-server here (not root, or no apt)"; exit 3; }
fi

if [ -x "$bin/kube-apiserver" ] && [ -x "$bin/kube-controller-manager" ]; then echo "$bin"; exit 0; fi
command -v go >/dev/null 2>&1 || { log "go is needed to build kube-apiserver and kube-controller-manager v$version"; exit 3; }

started=$(date +%s)
wrapper="$root/wrapper"
mkdir -p "$wrapper" "$bin"
cd "$wrapper"
gomod="$(go mod download -json "k8s.io/kubernetes@v$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
[ -f "$gomod" ] || { log "could not download k8s.io/kubernetes@v$version"; exit 1; }
{
  echo "module lameduck.local/k8s-control-plane"
  echo
  sed -n 's/^go \(.*\)$/go \1/p' "$gomod"
  echo
  echo "require k8s.io/kubernetes v$version"
  echo
  echo "replace ("
  # Each `k8s.io/x => ./staging/src/k8s.io/x` line becomes `k8s.io/x => k8s.io/x v0.<minor>.<patch>`.
  sed -n "s#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/[a-z0-9-]*\$#\t\1 => \1 v0.${version#*.}#p" "$gomod"
  echo ")"
} > go.mod
# Main packages cannot be imported; their app packages pull in every module the builds need.
cat > tools.go <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)
GO
go mod tidy >&2
# Stamp the version (it reads v0.0.0-master otherwise); no symbol table or DWARF: a shorter link.
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v$version -X k8s.io/component-base/version.gitMajor=${version%%.*} -X k8s.io/component-base/version.gitMinor=$(echo "$version" | cut -d. -f2)"
for cmd in kube-apiserver kube-controller-manager; do
  t=$(date +%s)
  go build -ldflags "$ldflags" -o "$bin/$cmd.partial" "k8s.io/kubernetes/cmd/$cmd" >&2
  mv "$bin/$cmd.partial" "$bin/$cmd"
  log "$cmd v$version built in $(( $(date +%s) - t )) s"
done
log "control plane v$version in $(( $(date +%s) - started )) s"
echo "$bin"
