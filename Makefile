# kneewatch — build, test and the pinned real tools the tests run against.
#
#   make test        every test, against real promtool/Prometheus/… (builds the tools first)
#   make test-short  the fast unit tier (no real tools, no long runs)
#   make tools       build the pinned tools once per machine (TOOLS_CACHE) and link them into .tools/bin
#   make bench       Go benchmarks
#   make image       the release's container image (OCI layout in dist/image), no Docker engine
#   make archives    the release's binaries and archives (goreleaser snapshot, in dist/release)
#   make soak        SOAK_DURATION (default 30m) of the demo fleet with rotating faults

SHELL      := /bin/bash
GO         ?= go
TOOLS      := $(CURDIR)/.tools/bin
export PATH := $(TOOLS):$(PATH)

# Pinned versions of the real components the tests use.
PROMETHEUS_VERSION   := v0.316.0
ALERTMANAGER_VERSION := v0.35.0
HELM_VERSION         := v3.22.0
KUBECONFORM_VERSION  := v0.8.0
KUBERNETES_VERSION   := v1.37.2
ACTIONLINT_VERSION   := v1.7.12
GORELEASER_VERSION   := v2.15.1
# etcd's version is pinned in tools/etcd/go.mod, kube-apiserver's in tools/kas/go.mod.
PROM_OPERATOR_VERSION := v0.85.0

# Schemas for offline kubeconform runs, and the prometheus-operator CRDs the
# kube-apiserver tests install: generated here, never downloaded at test time.
KUBE_SCHEMAS := $(CURDIR)/.tools/schemas

.PHONY: all build image archives chart version release-check release-tools test test-short tools bench vet fmt-check clean-tools

all: build

# The release version lives in one place, the VERSION file: the binary, the
# image tag and the chart's version and appVersion all equal it (a test in
# internal/release checks). Release tags are v$(VERSION).
VERSION  := $(strip $(file < $(CURDIR)/VERSION))
REVISION := $(shell git rev-parse HEAD 2>/dev/null)
# No branch is stamped: a commit's binary (and image) is the same whichever
# branch, tag or detached checkout built it, as the Dockerfile's is.
LDFLAGS  := -X github.com/prometheus/common/version.Version=$(VERSION) \
	-X github.com/prometheus/common/version.Revision=$(REVISION)

# build writes bin/kneewatch, a static binary stamped with version and revision.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/kneewatch ./cmd/kneewatch

version:
	@echo $(VERSION)

# release-check fails unless TAG (the git tag a release runs for) is v$(VERSION).
release-check:
	@test "$(TAG)" = "v$(VERSION)" || { echo "release tag '$(TAG)' is not v$(VERSION), the VERSION file's version" >&2; exit 1; }

# image builds the static binary for each platform (stripped, as the
# Dockerfile does), then assembles the OCI image index from them and a base
# of CA certificates, tzdata, passwd and LICENSE/NOTICE (whose license, read
# from LICENSE, is the licenses label) with cmd/kneewatch-release:
# no Docker engine. Files are stamped with the commit's time, so one commit
# gives the same digests given the same Go and host ca-certificates and
# tzdata (from any branch or tag), whose versions the last line
# of the output names (docs/release.md). `kneewatch-release push` pushes it.
IMAGE_PLATFORMS   := linux/amd64 linux/arm64
IMAGE_DIR         := dist/image
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
platform_bin       = dist/bin/$(subst /,_,$(1))/kneewatch

image:
	@for p in $(IMAGE_PLATFORMS); do \
	  echo "go build $$p"; \
	  GOOS=$${p%/*} GOARCH=$${p#*/} CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" \
	    -o dist/bin/$${p/\//_}/kneewatch ./cmd/kneewatch || exit 1; \
	done
	$(GO) run ./cmd/kneewatch-release image --version-file VERSION --revision "$(REVISION)" \
	  --created $(SOURCE_DATE_EPOCH) --chart deploy/helm/kneewatch --license-file LICENSE --notice-file NOTICE --out $(IMAGE_DIR) \
	  --module-cache "$$($(GO) env GOMODCACHE)" \
	  $(foreach p,$(IMAGE_PLATFORMS),--binary $(p)=$(call platform_bin,$(p)))

# archives runs goreleaser as the release workflow does, in snapshot mode
# (nothing published): the binaries, and the archives with the license files
# of the modules each binary links, into dist/release. TestReleaseArchives
# reads them.
.PHONY: archives
archives: $(TOOLS)/goreleaser
	$(TOOLS)/goreleaser release --snapshot --clean

TOOL_NAMES := promtool prometheus alertmanager helm kubeconform kube-apiserver etcd actionlint goreleaser
TOOL_BINS  := $(addprefix $(TOOLS)/,$(TOOL_NAMES)) $(TOOLS)/shellcheck

# The pinned tools are built once per machine, not once per clone: each into
# its own folder of TOOLS_CACHE named by the tool and its pinned version
# (etcd and kube-apiserver by a hash of the wrapper module that pins them),
# and .tools/bin holds links to them. A second clone links to what the first
# built; changing one version builds that one tool. A link is remade whenever
# its target is newer, so a version bump never leaves a stale link behind.
TOOLS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kneewatch/tools
modhash      = $(shell cat $(1) | sha256sum | cut -c1-12)
ETCD_KEY    := etcd-$(call modhash,tools/etcd/go.mod tools/etcd/go.sum scripts/build-etcd.sh)
KAS_KEY     := kube-apiserver-$(KUBERNETES_VERSION)-$(call modhash,tools/kas/go.mod tools/kas/go.sum scripts/build-kube-apiserver.sh)
SCHEMAS_KEY := schemas-$(KUBERNETES_VERSION)-$(PROM_OPERATOR_VERSION)-$(call modhash,scripts/kube-schemas.sh $(wildcard tools/k8sschema/*))
cached       = $(TOOLS_CACHE)/$(1)/$(2)

$(TOOLS)/%:
	@test -n "$<" || { echo "no rule builds tool $*" >&2; exit 1; }
	@mkdir -p $(TOOLS)
	ln -sfn $< $@

$(TOOLS)/promtool:       $(call cached,promtool-$(PROMETHEUS_VERSION),promtool)
$(TOOLS)/prometheus:     $(call cached,prometheus-$(PROMETHEUS_VERSION),prometheus)
$(TOOLS)/alertmanager:   $(call cached,alertmanager-$(ALERTMANAGER_VERSION),alertmanager)
$(TOOLS)/helm:           $(call cached,helm-$(HELM_VERSION)-k8s$(KUBERNETES_VERSION),helm)
$(TOOLS)/kubeconform:    $(call cached,kubeconform-$(KUBECONFORM_VERSION),kubeconform)
$(TOOLS)/kube-apiserver: $(call cached,$(KAS_KEY),kube-apiserver)
$(TOOLS)/etcd:           $(call cached,$(ETCD_KEY),etcd)
$(TOOLS)/actionlint:     $(call cached,actionlint-$(ACTIONLINT_VERSION),actionlint)
$(TOOLS)/goreleaser:     $(call cached,goreleaser-$(GORELEASER_VERSION),goreleaser)

release-tools: $(TOOLS)/helm $(TOOLS)/goreleaser

# chart packages the Helm chart (version and appVersion = VERSION) into dist/chart.
CHART_DIST ?= dist/chart
chart: $(TOOLS)/helm
	helm package deploy/helm/kneewatch --destination $(CHART_DIST)

tools: $(TOOL_BINS) $(KUBE_SCHEMAS)/generated

$(call cached,promtool-$(PROMETHEUS_VERSION),promtool):
	GOBIN=$(@D) $(GO) install github.com/prometheus/prometheus/cmd/promtool@$(PROMETHEUS_VERSION)

$(call cached,prometheus-$(PROMETHEUS_VERSION),prometheus):
	GOBIN=$(@D) $(GO) install github.com/prometheus/prometheus/cmd/prometheus@$(PROMETHEUS_VERSION)

$(call cached,alertmanager-$(ALERTMANAGER_VERSION),alertmanager):
	scripts/build-alertmanager.sh $(ALERTMANAGER_VERSION) $(@D)

# helm v3 built from source assumes Kubernetes 1.20 for .Capabilities unless told.
HELM_LDFLAGS := -s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 \
	-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$(word 2,$(subst ., ,$(KUBERNETES_VERSION)))

$(call cached,helm-$(HELM_VERSION)-k8s$(KUBERNETES_VERSION),helm):
	GOBIN=$(@D) $(GO) install -trimpath -ldflags "$(HELM_LDFLAGS)" helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

$(call cached,kubeconform-$(KUBECONFORM_VERSION),kubeconform):
	GOBIN=$(@D) $(GO) install -trimpath -ldflags "-s -w -X main.version=$(KUBECONFORM_VERSION)" github.com/yannh/kubeconform/cmd/kubeconform@$(KUBECONFORM_VERSION)

$(call cached,$(KAS_KEY),kube-apiserver):
	scripts/build-kube-apiserver.sh $(KUBERNETES_VERSION) $(@D)

$(call cached,$(ETCD_KEY),etcd):
	scripts/build-etcd.sh $(@D)

$(call cached,actionlint-$(ACTIONLINT_VERSION),actionlint):
	GOBIN=$(@D) $(GO) install -trimpath github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)

$(call cached,goreleaser-$(GORELEASER_VERSION),goreleaser):
	GOBIN=$(@D) $(GO) install -trimpath github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

# actionlint lints every workflow `run:` script with shellcheck, and silently
# skips that when shellcheck is not on PATH; the test passes it explicitly and
# fails without it. shellcheck is Debian's (and Ubuntu's) package, not a Go
# module: installed with apt-get when missing (as root, or with sudo), then
# linked here so the tests find it as they find the other tools.
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
$(TOOLS)/shellcheck:
	@sc=$$(PATH=/usr/local/bin:/usr/bin:/bin command -v shellcheck) || { \
	  echo "shellcheck is not installed: apt-get install -y --no-install-recommends shellcheck"; \
	  $(SUDO) apt-get install -y --no-install-recommends shellcheck || \
	    { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends shellcheck; } || exit 1; \
	  sc=$$(PATH=/usr/local/bin:/usr/bin:/bin command -v shellcheck); }; \
	mkdir -p $(TOOLS) && ln -sf "$$sc" $@ && $@ --version | sed -n 2p

# The schemas, like the tools, live in the cache; .tools/schemas links there.
$(KUBE_SCHEMAS)/generated: $(TOOLS_CACHE)/$(SCHEMAS_KEY)/generated
	@mkdir -p $(dir $(KUBE_SCHEMAS))
	rm -rf $(KUBE_SCHEMAS) && ln -sfn $(TOOLS_CACHE)/$(SCHEMAS_KEY) $(KUBE_SCHEMAS)

$(TOOLS_CACHE)/$(SCHEMAS_KEY)/generated:
	scripts/kube-schemas.sh $(KUBERNETES_VERSION) $(PROM_OPERATOR_VERSION) $(@D)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

vet:
	$(GO) vet ./...

# Real tools are required here: a test that needs one fails when it is missing.
# Packages whose tests run simulated GPUs against the wall clock (streaming
# timings, a sweep, the demo, the end-to-end page). They run after the rest,
# one package at a time, so two of them never share the 2 cores: a starved
# simulator falls behind real time and measures the machine, not kneewatch.
REALTIME_PKGS := ./internal/sim ./probe ./sweep ./internal/demo ./e2e

TEST_ENV := KNEEWATCH_REQUIRE_TOOLS=1 KNEEWATCH_TOOLS=$(TOOLS)

test: tools image archives fmt-check vet
	$(TEST_ENV) $(GO) test -count=1 -timeout 40m $$($(GO) list ./... | grep -v -E '/(internal/sim|probe|sweep|internal/demo|e2e)$$')
	$(TEST_ENV) $(GO) test -count=1 -timeout 40m -p 1 $(REALTIME_PKGS)

test-short:
	$(GO) test -short -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean-tools:
	rm -rf $(CURDIR)/.tools

# The detection-quality bench (internal/detection/): seven scripted scenarios and
# the test half of the generated suite on the simulator in virtual time, every
# detector scored against the ground truth; rewrites docs/benchmarks/detection.md.
# About 10-12 minutes on 2 cores. bench-detection-fresh runs the same on the test
# halves of suites drawn with other seeds (2 and 3), scenarios no default was chosen
# on or checked against before: docs/benchmarks/detection-fresh-draw.md and
# detection-fresh-draw-3.md, about 9 minutes each. One draw's mix families read
# far better than the next one's, so a change is judged on both.
# bench-detection-draws runs the test half drawn with seeds 1 to 5 together, without
# the regressions and the what-ifs, and reports each draw's goal figures, every
# family's headroom error draw by draw, and the fresh draws (2 to 5) pooled:
# docs/benchmarks/detection-draws.md.
# bench-sweep times the sweep's closed-loop search in virtual time over every
# suite deployment, with sequential stopping and with fixed windows.
.PHONY: bench-sweep
bench-sweep:
	mkdir -p docs/benchmarks
	$(GO) test -count=1 -timeout 30m -run TestSweepTimeBench ./internal/detection -sweep.report $(CURDIR)/docs/benchmarks/sweep-time.md

# bench-parse rewrites docs/benchmarks/parse-path.md: kneewatch's scrape parse
# path before and after the stream parser, and Prometheus's text parser on the
# same bytes, with allocs/op. About 2 minutes.
.PHONY: bench-parse
bench-parse:
	mkdir -p docs/benchmarks
	$(GO) test -count=1 -timeout 20m -run TestParsePathReport ./collector -parse.report $(CURDIR)/docs/benchmarks/parse-path.md

.PHONY: bench-detection
bench-detection:
	mkdir -p docs/benchmarks
	KNEEWATCH_BENCH_VIA_MAKE=1 $(GO) run ./cmd/kneewatch-bench --suite test --out docs/benchmarks/detection.md

.PHONY: bench-detection-fresh
bench-detection-fresh:
	mkdir -p docs/benchmarks
	KNEEWATCH_BENCH_VIA_MAKE=bench-detection-fresh $(GO) run ./cmd/kneewatch-bench --suite test --suite-seed 2 --out docs/benchmarks/detection-fresh-draw.md
	KNEEWATCH_BENCH_VIA_MAKE=bench-detection-fresh $(GO) run ./cmd/kneewatch-bench --suite test --suite-seed 3 --out docs/benchmarks/detection-fresh-draw-3.md

.PHONY: bench-detection-draws
bench-detection-draws:
	mkdir -p docs/benchmarks
	KNEEWATCH_BENCH_VIA_MAKE=bench-detection-draws $(GO) run ./cmd/kneewatch-bench --suite test --suite-seeds 1,2,3,4,5 --out docs/benchmarks/detection-draws.md

# Fuzz targets, each explored for FUZZTIME by scripts/fuzz.sh (crashers land
# in the package's testdata/fuzz/<Fuzz…>/ and are rerun by every `go test`,
# so by `make test`).
FUZZTIME ?= 60s
# Go minimizes every new interesting input (and a crasher) for
# -fuzzminimizetime, 60 s by default; with the fixtures as seeds, inputs are
# kilobytes and each minimization ran its whole time: at 5s, FuzzVLLM made
# 776 executions in 20 s. A count bounds the work instead: 100 executions
# per minimization (a fraction of a second), 18,575 executions in 20 s. A
# crasher gets the same 100, spent first on cutting its tail in steps of
# 1 KiB down to 1 byte: what a seed-derived crasher keeps is the fixture's
# lines up to the one that crashes, which reads well enough in a seed file.
FUZZMINIMIZETIME ?= 100x
FUZZ_TARGETS := ./collector:FuzzVLLM ./collector:FuzzSGLang ./collector:FuzzTGI ./collector:FuzzTRTLLM \
	./collector:FuzzDCGM ./knee:FuzzParse ./knee:FuzzEvaluate ./config:FuzzParse \
	./openai:FuzzStream

.PHONY: fuzz
fuzz:
	scripts/fuzz.sh $(FUZZTIME) $(FUZZMINIMIZETIME) $(FUZZ_TARGETS)

# soak runs the demo fleet under steady load with a watcher for
# SOAK_DURATION, rotating faults through the replicas (restart,
# metrics_down, metrics_malformed, stall, slowdown) and checking for
# panics, goroutine and memory growth, and every exported headroom within
# 0.15 of the truth or absent with a reason. Not part of `make test`.
SOAK_DURATION ?= 30m
.PHONY: soak
soak:
	KNEEWATCH_SOAK=$(SOAK_DURATION) $(GO) test -count=1 -timeout 0 -run '^TestSoak$$' -v ./internal/demo

# bench-scale runs kneewatch serve and the pinned Prometheus side by side on
# the same SCALE_N loopback targets (captured expositions, counters
# advancing) and rewrites docs/benchmarks/scale.md with each one's CPU per
# replica-scrape, CPU share and RSS. About 3 minutes per size.
SCALE_N ?= 100,1000,5000
.PHONY: bench-scale
bench-scale: build
	mkdir -p docs/benchmarks
	$(GO) run ./cmd/kneewatch-scalebench -n $(SCALE_N) -kneewatch $(CURDIR)/bin/kneewatch \
		-prometheus $(TOOLS)/prometheus -root $(CURDIR) -out docs/benchmarks/scale.md
