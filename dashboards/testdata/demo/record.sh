#!/bin/sh
# Records what a Prometheus scraping `kneewatch demo` would hold: kneewatch's
# /metrics and the simulated dcgm-exporter's, scraped together every 15 s
# once the demo fleet is steady and kneewatch's window is full. The
# dashboards' demo test (demo_queries_test.go) replays the scrapes into
# Prometheus's PromQL engine and runs every dashboard query over them.
#
# Run from the repository root: sh dashboards/testdata/demo/record.sh
# It takes about three minutes and rewrites dashboards/testdata/demo/scrape-*.
set -eu
out=dashboards/testdata/demo
scrapes=${SCRAPES:-8}
bin=$(mktemp -d)/kneewatch
go build -o "$bin" ./cmd/kneewatch
log=$(mktemp)
# Ports away from the demo's defaults, so a demo someone is running is left alone.
"$bin" demo --web.listen-address 127.0.0.1:19847 --sim.web.listen-address 127.0.0.1:18100 \
	--sim.dcgm.listen-address 127.0.0.1:19400 --duration 300s >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
until grep -q '^DCGM:' "$log"; do
	kill -0 "$pid" || { cat "$log"; exit 1; }
	sleep 1
done
dcgm=$(sed -n 's/^DCGM: *//p' "$log")
# kneewatch's window (30 s) fills with steady load; probes (every 5 s) accumulate.
sleep 45
rm -f "$out"/scrape-*
i=0
while [ "$i" -lt "$scrapes" ]; do
	n=$(printf '%02d' "$i")
	date +%s >"$out/scrape-$n.time"
	curl -fsS http://127.0.0.1:19847/metrics >"$out/scrape-$n.kneewatch.prom"
	curl -fsS "$dcgm" >"$out/scrape-$n.dcgm.prom"
	i=$((i + 1))
	[ "$i" -lt "$scrapes" ] && sleep 15
done
head -n 12 "$log"
