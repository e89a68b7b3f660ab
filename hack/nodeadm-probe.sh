#!/usr/bin/env bash
# Builds the probe over current nodeadm's configuration reading from a
# checkout of amazon-eks-ami (NODEADM_SRC, its nodeadm/ folder): a copy of
# the module with the probe's main and its in-memory user data source
# added (internal/aws/boot/al2023/testdata/nodeadm-probe), built in a
# temporary directory. Prints the probe's path.
set -euo pipefail
src="${NODEADM_SRC:?set NODEADM_SRC to the nodeadm folder of an amazon-eks-ami checkout}"
here="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
cp -r "$src/." "$work/"
rm -rf "$work/vendor"
mkdir -p "$work/cmd/nwprobe"
cp "$here/internal/aws/boot/al2023/testdata/nodeadm-probe/main.go.txt" "$work/cmd/nwprobe/main.go"
cp "$here/internal/aws/boot/al2023/testdata/nodeadm-probe/zz_nwprobe.go.txt" "$work/internal/configprovider/zz_nwprobe.go"
out="$here/bin/nodeadm-probe"
mkdir -p "$here/bin"
(cd "$work" && GOFLAGS=-mod=mod GOWORK=off GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}" go build -o "$out" ./cmd/nwprobe) >&2
rm -rf "$work"
echo "$out"
