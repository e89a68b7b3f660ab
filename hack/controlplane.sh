#!/usr/bin/env bash
# Installs etcd (Debian's etcd-server, when no etcd is on PATH) and builds
# kube-apiserver, kube-scheduler, kube-controller-manager and kubectl from
# the k8s.io/kubernetes module pinned in internal/controlplane/module.
# Idempotent: binaries are cached under bin/k8s-<version>/ (git-ignored)
# and built only when missing.
#
# Prints the asset directory (usable as KUBEBUILDER_ASSETS) on its last line.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { echo "controlplane: $*" >&2; }

if ! command -v etcd >/dev/null 2>&1; then
  log "etcd not found; installing Debian package etcd-server"
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || { log "need root (or sudo) to apt-get install etcd-server"; exit 1; }
    sudo=sudo
  fi
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq etcd-server >&2
fi

cd "$root" && go run ./hack/controlplane -dir "$root/bin"
