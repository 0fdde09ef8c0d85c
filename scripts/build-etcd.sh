#!/usr/bin/env bash
# Build the pinned etcd server from the tools/etcd wrapper module into $1.
#
# The wrapper exists because the etcd server's own go.mod replaces its
# sibling modules with local paths, which `go install …@version` refuses.
set -euo pipefail
out=$1
mkdir -p "$out"
cd "$(dirname "$0")/../tools/etcd"
go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
"$out/etcd" --version
