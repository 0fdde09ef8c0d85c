# kneewatch — build, test and the pinned real tools the tests run against.
#
#   make test        every test, against real promtool/Prometheus/… (builds the tools first)
#   make test-short  the fast unit tier (no real tools, no long runs)
#   make tools       build or install the pinned tools into .tools/bin (skips what is there)
#   make bench       Go benchmarks

SHELL      := /bin/bash
GO         ?= go
TOOLS      := $(CURDIR)/.tools/bin
export PATH := $(TOOLS):$(PATH)

# Pinned versions of the real components the tests use.
PROMETHEUS_VERSION   := v0.316.0
ALERTMANAGER_VERSION := v0.35.0

TOOL_BINS := $(TOOLS)/promtool $(TOOLS)/prometheus $(TOOLS)/alertmanager

.PHONY: all build test test-short tools bench vet fmt-check clean-tools

all: build

build:
	$(GO) build ./...

tools: $(TOOL_BINS)

$(TOOLS)/promtool:
	GOBIN=$(TOOLS) $(GO) install github.com/prometheus/prometheus/cmd/promtool@$(PROMETHEUS_VERSION)

$(TOOLS)/prometheus:
	GOBIN=$(TOOLS) $(GO) install github.com/prometheus/prometheus/cmd/prometheus@$(PROMETHEUS_VERSION)

$(TOOLS)/alertmanager:
	scripts/build-alertmanager.sh $(ALERTMANAGER_VERSION) $(TOOLS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi

vet:
	$(GO) vet ./...

# Real tools are required here: a test that needs one fails when it is missing.
test: tools fmt-check vet
	KNEEWATCH_REQUIRE_TOOLS=1 KNEEWATCH_TOOLS=$(TOOLS) $(GO) test -count=1 -timeout 40m ./...

test-short:
	$(GO) test -short -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean-tools:
	rm -rf $(CURDIR)/.tools
