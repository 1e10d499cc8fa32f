# pi-session: build, test, benchmark and demo. `make help` lists the targets.

GO        ?= go
NPM       ?= npm
PREFIX    ?= $(HOME)/.local
# The nearest release tag (v0.1.0, v0.1.0-3-g1a2b3c4, -dirty); empty without
# one or without git: then pi-session reports what Go recorded (see version.go).
VERSION   ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null)
LDFLAGS   := -X main.version=$(VERSION)
TOOLS     := tools/node_modules
TOOLS_OK  := $(TOOLS)/.installed
BIN       := bin/pi-session

.DEFAULT_GOAL := build
.PHONY: build tools test check bench demo install fuzz fixtures clean help

build: ## build bin/pi-session
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/pi-session

$(BIN): build

tools: $(TOOLS_OK) ## install Node 22 and pi 1.6.0 into tools/node_modules (no-op when present)

$(TOOLS_OK): tools/package.json tools/package-lock.json
	@NPM=$(NPM) bash scripts/tools.sh
	@touch $@

check: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

test: tools check ## run every test, end-to-end tests with real pi included, then the totals
	@GO=$(GO) bash scripts/test.sh

bench: tools build ## run the benchmarks and print ratios against same-run baselines
	bash scripts/bench.sh

demo: tools build ## run pi under pi-session offline with a scripted model
	bash demo/run.sh

install: build ## install pi-session into $(PREFIX)/bin (then: alias pi=pi-session)
	@bash scripts/install.sh $(BIN) $(PREFIX)

fuzz: ## run every fuzzer for FUZZTIME (default 30s) and keep new corpus entries in testdata/fuzz
	bash scripts/fuzz.sh $(or $(FUZZTIME),30s)

fixtures: tools ## re-record the session fixtures from real pi 1.6.0
	session/testdata/record/record.sh

clean: ## remove build output (keeps tools/node_modules)
	rm -rf bin

help: ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed 's|$$(PREFIX)|$(PREFIX)|g' | awk -F':.*## ' '{printf "  %-9s %s\n", $$1, $$2}'
