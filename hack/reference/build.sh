#!/usr/bin/env bash
# Builds the programs the side-by-side benchmark runs beside nodewright, from
# the modules pinned here (through the Go module proxy; nothing of theirs is
# kept in this repository): the reference autoscaler's KWOK cloud provider
# and the KWOK controller, with their CRDs and KWOK's fast node and pod
# stages, into bin/reference/. Their module needs Go 1.26.9 or newer:
# GOTOOLCHAIN fetches go1.27.3 for this build only.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out="$here/../../bin/reference"
mkdir -p "$out/crds" "$out/stages"
cd "$here"
export GOTOOLCHAIN=go1.27.3 GOFLAGS=-mod=mod GOWORK=off
[ -x "$out/karpenter-kwok" ] || go build -o "$out/karpenter-kwok" sigs.k8s.io/karpenter/kwok
[ -x "$out/kwok" ] || go build -o "$out/kwok" sigs.k8s.io/kwok/cmd/kwok
karpenter=$(go list -m -f '{{.Dir}}' sigs.k8s.io/karpenter)
kwok=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
cp "$karpenter"/pkg/apis/crds/karpenter.sh_*.yaml "$karpenter"/kwok/apis/crds/*.yaml "$out/crds/"
cp "$kwok"/kustomize/stage/node/fast/node-initialize.yaml "$kwok"/kustomize/stage/node/heartbeat/node-heartbeat.yaml \
   "$kwok"/kustomize/stage/pod/fast/pod-*.yaml "$out/stages/"
chmod -R u+w "$out"
echo "$out"
