# smcp-gateway. `make run` starts the demo, `make test` runs everything CI checks.
SHELL := /bin/bash
GO ?= go
BUF := $(GO) tool -modfile=tools/go.mod buf
GOTEST_FLAGS ?= -race -count=1 -timeout 20m

.PHONY: run test generate lint check-generated breaking unit bench deps-node interop bench-gateway bench-load

run:
	$(GO) run ./cmd/smcp demo

test: lint check-generated breaking unit

generate:
	$(BUF) generate

lint:
	$(BUF) lint
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/') 2>/dev/null); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# gen/ is committed: regenerating must not change it.
check-generated:
	$(BUF) generate
	@if [ -n "$$(git status --porcelain gen)" ]; then \
	  echo "gen/ is stale: run 'make generate' and commit"; git status --porcelain gen; exit 1; fi

# Compare proto/ with the previous commit, when it had one.
breaking:
	@if git rev-parse -q --verify HEAD~1 >/dev/null && git cat-file -e HEAD~1:proto 2>/dev/null; then \
	  $(BUF) breaking --against '.git#ref=HEAD~1'; \
	else echo "buf breaking: no previous commit with proto/, skipped"; fi

unit:
	$(GO) test $(GOTEST_FLAGS) ./... github.com/modelcontextprotocol/go-sdk/internal/json github.com/modelcontextprotocol/go-sdk/internal/jsonrpc2 github.com/modelcontextprotocol/go-sdk/mcp github.com/zishang520/socket.io/v3/pkg/types github.com/zishang520/socket.io/v3/pkg/utils github.com/zishang520/socket.io/servers/engine/v3 github.com/zishang520/socket.io/servers/engine/v3/transports github.com/zishang520/socket.io/adapters/redis/v3/adapter

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
