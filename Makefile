# Every target CI runs is here; .ci/run calls the same ones.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
GO ?= go
STATICCHECK_VERSION := v0.8.2
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

.PHONY: build
build: ## build bin/assistant
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/assistant ./cmd/assistant

# The server's Python engine (python.wasm and its stdlib) is built on first use and cached by a
# hash of its inputs; targets that need it find it with --print-dir.
.PHONY: engine
engine: ## build the server's Python engine (python.wasm + stdlib; cached by input hash, ~5 min the first time)
	scripts/build_python_wasi.sh >/dev/null

.PHONY: pyodide
pyodide: ## install the npm pyodide package the demo page serves, outside the repository
	scripts/install_pyodide.sh

.PHONY: browser-deps
browser-deps: ## install what the browser tests need (tests/browser npm packages, Pyodide)
	scripts/browser_test.sh --deps

.PHONY: native-deps
native-deps: ## install Debian's python3 packages the engine's packages are compared against
	scripts/native_packages.sh

.PHONY: browser-test
browser-test: ## run only the demo page's tests in Chromium
	scripts/browser_test.sh

# The reader's browser fetches the stock Pyodide packages the local npm copy lacks (numpy,
# scipy, matplotlib) from the CDN, checked against the lock's sha256.
PYODIDE_PACKAGES_URL ?= https://cdn.jsdelivr.net/pyodide/v{version}/full/

.PHONY: run
run: build engine pyodide ## serve the shipped communities on :8080 (prints the demo page URLs)
	ASSISTANT_ENGINE_DIR="$$(scripts/build_python_wasi.sh --print-dir)" \
	ASSISTANT_PYODIDE_PACKAGES_URL='$(PYODIDE_PACKAGES_URL)' ./bin/assistant serve

.PHONY: test
test: engine browser-deps native-deps ## run every test (race detector on), Redis ones against a throwaway redis-server
	ASSISTANT_ENGINE_DIR="$$(scripts/build_python_wasi.sh --print-dir)" scripts/with_redis.sh $(GO) test -race -count=1 ./...

.PHONY: bench
bench: engine ## run the Go benchmarks (Redis ones against a throwaway redis-server)
	ASSISTANT_ENGINE_DIR="$$(scripts/build_python_wasi.sh --print-dir)" scripts/with_redis.sh $(GO) test -run='^$$' -bench=. -benchmem -count=1 ./...

.PHONY: redis-start redis-stop
redis-start: ## start the test redis-server (scripts/redis.sh addr prints its address)
	scripts/redis.sh start
redis-stop: ## stop the test redis-server
	scripts/redis.sh stop

.PHONY: fuzz
fuzz: ## run each fuzz target for a short while
	scripts/fuzz.sh

.PHONY: lint
lint: ## gofmt, go vet and staticcheck
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

.PHONY: validate
validate: engine ## check every shipped community config (preludes compiled by the engine)
	ASSISTANT_ENGINE_DIR="$$(scripts/build_python_wasi.sh --print-dir)" $(GO) run ./cmd/assistant validate communities
	ASSISTANT_ENGINE_DIR="$$(scripts/build_python_wasi.sh --print-dir)" $(GO) run ./cmd/assistant validate tests/browser/communities

.PHONY: check-locks
check-locks: ## check that every shipped lock overlay is what its wheels produce
	@found=0; for lock in $$(find communities -path '*/runtime/*.json' -not -path '*/wheels/*' | sort); do \
		found=1; $(GO) run ./cmd/assistant lock --check "$$lock"; done; \
	test $$found = 1 || { echo "no lock overlay found"; exit 1; }

.PHONY: ci
ci: lint validate check-locks test ## what CI runs
