#!/usr/bin/env bash
# Build a pinned Alertmanager from its Go module into $2.
#
# `go install …/cmd/alertmanager@vX` fails because the module zip lacks the
# web UI's built assets (ui/app/dist), which the binary embeds. The API and
# the notification pipeline — all kneewatch's tests use — do not need the UI,
# so we build from a copy of the module with placeholder pages.
set -euo pipefail
version=$1 out=$2
dir=$(go mod download -json "github.com/prometheus/alertmanager@${version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$dir" ] || { echo "cannot download alertmanager ${version}" >&2; exit 1; }
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -r "$dir/." "$work/"
chmod -R u+w "$work"
for ui in elm mantine; do
  mkdir -p "$work/ui/app/dist/$ui"
  echo '<!doctype html><title>Alertmanager</title><p>UI not built; use the API.' > "$work/ui/app/dist/$ui/index.html"
done
mkdir -p "$out"
(cd "$work" && go build -o "$out/alertmanager" ./cmd/alertmanager)
"$out/alertmanager" --version >/dev/null
