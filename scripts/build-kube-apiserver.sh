#!/usr/bin/env bash
# Build the pinned kube-apiserver from the tools/kas wrapper module into $2.
#
# k8s.io/kubernetes cannot be `go install`ed (its go.mod replaces its staging
# modules with local paths), so tools/kas requires it and replaces every
# staging module by its published v0.x release. Without the version ldflags
# the server reports v0.0.0, which clients and helm read as a too-old cluster.
set -euo pipefail
version=$1 out=$2
minor=$(echo "${version#v}" | cut -d. -f2)
pkg=k8s.io/component-base/version
mkdir -p "$out"
cd "$(dirname "$0")/../tools/kas"
pinned=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
[ "$pinned" = "$version" ] || { echo "tools/kas/go.mod pins k8s.io/kubernetes $pinned, Makefile asks for $version" >&2; exit 1; }
go build -trimpath -o "$out/kube-apiserver" \
  -ldflags "-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor" \
  k8s.io/kubernetes/cmd/kube-apiserver
"$out/kube-apiserver" --version
