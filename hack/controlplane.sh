#!/usr/bin/env bash
# Builds etcd (from its module, pinned in internal/sim/harness/controlplane/module),
# kube-apiserver, kube-scheduler, kube-controller-manager and kubectl (from
# the k8s.io/kubernetes module pinned there) with the Go toolchain.
# Idempotent: binaries are cached under bin/k8s-<version>/ (git-ignored)
# and built only when missing.
#
# Prints the asset directory (usable as KUBEBUILDER_ASSETS) on its last line.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" && go run ./hack/controlplane -dir "$root/bin"
