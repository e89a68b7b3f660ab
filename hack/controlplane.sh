#!/usr/bin/env bash
# Installs etcd and builds kube-apiserver, kube-scheduler and
# kube-controller-manager (and kubectl) from the k8s.io/kubernetes module pinned in
# hack/controlplane/go.mod. Idempotent: binaries are cached under
# bin/k8s-<version>/ (git-ignored) and rebuilt only when missing.
#
# Prints the asset directory (usable as KUBEBUILDER_ASSETS) on its last line.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="$root/hack/controlplane"
version=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$mod/go.mod")
[ -n "$version" ] || { echo "controlplane: cannot read the k8s.io/kubernetes version from $mod/go.mod" >&2; exit 1; }
assets="$root/bin/k8s-$version"
mkdir -p "$assets"

log() { echo "controlplane: $*" >&2; }

install_etcd() {
  if command -v etcd >/dev/null 2>&1; then
    return
  fi
  log "etcd not found; installing Debian package etcd-server"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { log "need root (or sudo) to apt-get install etcd-server"; exit 1; }
    sudo=sudo
  fi
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq etcd-server >&2
}

# Stamp the version so `kubectl version` and discovery report it.
pkg=k8s.io/component-base/version
minor=$(echo "$version" | cut -d. -f2)
ldflags="-X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"

install_etcd
ln -sf "$(command -v etcd)" "$assets/etcd"

for cmd in kube-apiserver kube-scheduler kube-controller-manager kubectl; do
  if [ -x "$assets/$cmd" ]; then
    log "$cmd $version cached"
    continue
  fi
  log "building $cmd $version (the first build takes several minutes)"
  start=$(date +%s)
  (cd "$mod" && go build -trimpath -ldflags "-s -w $ldflags" -o "$assets/$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd")
  mv "$assets/$cmd.tmp" "$assets/$cmd"
  log "built $cmd in $(( $(date +%s) - start ))s"
done

echo "$assets"
