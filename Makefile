# smcp-gateway. `make run` starts the demo, `make test` runs everything CI checks.
SHELL := /bin/bash
GO ?= go
# buf and goreleaser at the versions tools/ pins, built into bin/ on first use (tools/run says so).
BUF := tools/buf
GORELEASER := tools/run goreleaser
# Four test binaries, and four parallel tests in each, at a time on any machine: the tests wait
# (on timeouts, Redis failovers, heartbeats, child processes) more than they compute, so that
# go test's default of one binary a core leaves the cores half idle (docs/DEVELOPMENT.md). Its
# vet is off because lint has run all of vet on the same packages; test binaries without DWARF
# (-w: panics still name file and line) link in two thirds of the time.
GOTEST_FLAGS ?= -race -count=1 -timeout 20m -parallel 4 -p 4 -vet=off -ldflags=-w

.PHONY: run build test test-deps generate lint check-generated breaking unit bench deps-node interop bench-gateway bench-load \
	release-snapshot release-check release-cross image

# `go build -v` names each package as it compiles: a cold build takes minutes and shows it.
# Ctrl-C stops the demo and make exits 0: in a terminal the demo takes the terminal's foreground
# process group for itself (cmd/smcp/foreground_unix.go), so that the interrupt reaches it, not make.
# DEMO_FLAGS passes flags, e.g. make run DEMO_FLAGS="--listen 127.0.0.1:9090".
run: build
	./bin/smcp demo $(DEMO_FLAGS)

# The version stamp (git describe) makes `smcp version` say which commit this is even where
# the go command stamps no VCS information (-buildvcs=false, a git worktree).
build:
	@echo "go build -o bin/smcp ./cmd/smcp (packages are listed as they compile; none when cached)"
	$(GO) build -v -ldflags "$(STAMP_LDFLAGS)" -o bin/smcp ./cmd/smcp

test: test-deps lint check-generated breaking unit

# The Debian packages the tests use: installed when run as root, else named
# (the tests that need a missing one skip, each saying so: internal/testdeps).
test-deps:
	@tools/test-deps

# gen/ (Go), docs/API.md (from the proto comments), the tables of docs/PROTOCOL.md (from
# the protocol table, smcp/protocol.go) and the descriptor set the Python example loads
# (examples/python-agent/smcp.binpb).
# The generators (and buf's plugins, buf.gen.yaml) are built with -race, as vet and the tests
# build: a cold make test then compiles their packages once, not a second time without it.
generate:
	$(BUF) generate
	set -o pipefail; $(BUF) build -o - | $(GO) run -race ./internal/cmd/protodoc > docs/API.md.tmp
	mv docs/API.md.tmp docs/API.md
	$(GO) run -race ./internal/cmd/protocoldoc docs/PROTOCOL.md
	$(BUF) build --exclude-source-info -o examples/python-agent/smcp.binpb

# vet with -race, as unit tests: the packages it compiles are then the ones the tests link, not
# a second, uninstrumented build of everything (a cold make test compiles once).
lint:
	$(BUF) lint
	$(GO) vet -race ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/') 2>/dev/null); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# What generate makes is committed: regenerating must not change it.
GENERATED := gen docs/API.md docs/PROTOCOL.md examples/python-agent/smcp.binpb
check-generated: generate
	@if [ -n "$$(git status --porcelain $(GENERATED))" ]; then \
	  echo "generated files are stale: run 'make generate' and commit"; git status --porcelain $(GENERATED); exit 1; fi

# Compare proto/ with the previous commit, when it had one.
breaking:
	@if git rev-parse -q --verify HEAD~1 >/dev/null && git cat-file -e HEAD~1:proto 2>/dev/null; then \
	  $(BUF) breaking --against '.git#ref=HEAD~1'; \
	else echo "buf breaking: no previous commit with proto/, skipped"; fi

unit:
	$(GO) test $(GOTEST_FLAGS) ./...

# Release builds (docs/INSTALL.md). The ldflags are those of .goreleaser.yaml
# (test/release checks that they agree): stripped, and stamped for `smcp version`.
BUILDINFO := github.com/smcpgw/smcp-gateway/buildinfo
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo "(devel)")
REVISION ?= $(shell r=$$(git rev-parse HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null && echo $$r || echo $$r-dirty; })
STAMP_LDFLAGS = -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).revision=$(REVISION)
RELEASE_LDFLAGS = -s -w -X $(BUILDINFO).version=$(VERSION) -X $(BUILDINFO).revision=$(REVISION) \
	-X $(BUILDINFO).date=$(shell git log -1 --format=%cI 2>/dev/null)
IMAGE ?= smcp-gateway:dev
IMAGE_DIR ?= dist/image
CONTAINER ?= podman

# Archives of HEAD for Linux, macOS and Windows on amd64 and arm64, with checksums.txt,
# into dist/ (goreleaser --snapshot: nothing is published).
release-snapshot: release-check
	$(GORELEASER) release --snapshot --clean

release-check:
	$(GORELEASER) check

# The same six binaries with the go command alone, into dist/cross/ (no archives).
release-cross:
	@for target in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64; do \
	  os=$${target%/*}; arch=$${target#*/}; ext=; [ $$os = windows ] && ext=.exe; \
	  echo "go build $$os/$$arch -> dist/cross/smcp_$${os}_$${arch}/smcp$$ext"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "$(RELEASE_LDFLAGS)" \
	    -o dist/cross/smcp_$${os}_$${arch}/smcp$$ext ./cmd/smcp || exit 1; \
	done

# The container image (Containerfile) from a static Linux binary built as a release is,
# with this machine's CA certificates; IMAGE names it.
image:
	@mkdir -p $(IMAGE_DIR)
	@echo "go build (static, linux/$$($(GO) env GOARCH)) -> $(IMAGE_DIR)/smcp"
	CGO_ENABLED=0 GOOS=linux $(GO) build -trimpath -ldflags "$(RELEASE_LDFLAGS)" -o $(IMAGE_DIR)/smcp ./cmd/smcp
	cp /etc/ssl/certs/ca-certificates.crt $(IMAGE_DIR)/
	$(CONTAINER) build --format docker -f Containerfile -t $(IMAGE) $(IMAGE_DIR)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The reference Node socket.io-client against an in-process gateway
# (also part of `unit`; installs test/interop/node_modules with npm ci if missing).
interop:
	$(GO) test -race -count=1 -v ./test/interop
	$(GO) test -race -count=1 -v -run 'TestNodeClient|TestBufCurl' ./gateway/rpc

deps-node:
	cd test/interop && npm ci --no-audit --no-fund
	cd test/connect-node && npm ci --no-audit --no-fund
	cd gateway/mcpfront/testdata/node && npm ci --no-audit --no-fund

# The load command against spawned gateway and floor relay (docs/BENCHMARKS.md).
bench-load:
	$(GO) run ./internal/cmd/bench -mode sio,connect,connect-h2c,grpc -offices 1,10 -compare floor -turns 8

# Tool calls relayed agent -> gateway -> computer -> agent over loopback.
bench-gateway:
	$(GO) test -run '^$$' -bench ToolCallRelay -benchtime 5s -benchmem ./gateway/
