# Everything runs in one virtualenv at .venv/, created on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NODE_MODULES := clients/ts/node_modules/.package-lock.json
# The last commit of the schema as first shipped: later schemas must stay wire compatible with it.
SCHEMA_BASELINE := 4d23cc8b96c9f34e16bda3585a6e7b6942cee522
PY_SRC := src/e2a_grpc tests bench conformance codegen setup.py

.PHONY: venv gen check-gen lint test test-fast nats-server test-go test-java test-rust conformance fuzz fuzz-canonical bench bench-tools serve clean

$(STAMP): pyproject.toml setup.py src/e2a_grpc/_canonical.c src/e2a_grpc/chat/_frame_bytes.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

## gen: regenerate all code derived from proto/ (Python, TypeScript, Go, the record field tables; no remote buf plugins)
gen: $(STAMP)
	PYTHON=$(PY) ./codegen/generate.sh

# What `make gen` writes: the generated code, and the field tables generated from the schema's options.
GENERATED := src/e2a gen/ts gen/go/e2a gen/go/e2ajson/fields.gen.go clients/java/src/main/java/io/e2a/v1/json/RecordFields.java clients/rust/src/json/fields.rs \
  src/e2a_grpc/model/generated_fields.py docs/wire-json.md

## check-gen: fail if the committed generated code differs from what `make gen` produces
check-gen: gen
	git diff --exit-code --stat -- $(GENERATED)
	test -z "$$(git status --porcelain --untracked-files=all -- $(GENERATED))"

## lint: buf lint/format, buf breaking (wire compatibility with the shipped schema), ruff, mypy
lint: $(STAMP)
	$(VENV)/bin/buf lint
	$(VENV)/bin/buf format -d --exit-code
	$(VENV)/bin/buf breaking --against '.git#ref=$(SCHEMA_BASELINE),depth=1000' 	  --config '{"version":"v2","modules":[{"path":"proto"}],"breaking":{"use":["WIRE"]}}'
	$(VENV)/bin/ruff check $(PY_SRC)
	$(VENV)/bin/ruff format --check $(PY_SRC)
	$(VENV)/bin/mypy

## test: set up the virtualenv, lint, and run the whole test suite (Python, Go, Node.js, conformance)
test: lint nats-server
	$(PY) -m pytest
	$(MAKE) --no-print-directory test-go
	$(MAKE) --no-print-directory test-java
	$(MAKE) --no-print-directory test-rust
	$(MAKE) --no-print-directory conformance

## test-fast: tests/unit and tests/servicer, no lint and no other process started (pytest mark in_process,
## tests/conftest.py), 20 examples per property (hypothesis profile quick, unless HYPOTHESIS_PROFILE
## names another): the loop to run while working, under a minute; make test before you push
test-fast: $(STAMP)
	HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-quick} $(PY) -m pytest -q -m in_process tests/unit tests/servicer

# tests/broker (and the broker bench) start a real nats-server: Debian's package when installed
# (.ci/run installs it), else this pinned build, which tests/support/nats_server.py finds in .bin/.
# The three-node cluster of tests/broker/test_cluster.py always runs this build: Debian's 2.9.10
# places new consumers of an R3 stream on a node that is down (tests/support/nats_server.py).
NATS_SERVER_VERSION := v2.15.2
NATS_SERVER := .bin/nats-server-$(NATS_SERVER_VERSION)/nats-server

$(NATS_SERVER):
	GOBIN=$(CURDIR)/.bin/nats-server-$(NATS_SERVER_VERSION) go install github.com/nats-io/nats-server/v2@$(NATS_SERVER_VERSION)

## nats-server: the nats-servers of the broker tests: the pinned build (go install; the cluster's), and Debian's for one server when installed
nats-server: $(NATS_SERVER)

## conformance: build every testee and run the wire JSON conformance suite on all of them (conformance/README.md)
conformance: $(STAMP) $(NODE_MODULES)
	cd gen/go && go build -o bin/conformance-testee ./cmd/conformance-testee
	cd clients/java && mvn -q -B -DskipTests package
	cargo build -q --manifest-path clients/rust/Cargo.toml --bin conformance-testee
	$(PY) conformance/run.py

## test-java: the Java module's JUnit tests (they start the Python server from .venv on a free port)
test-java: $(STAMP)
	cd clients/java && mvn -q -B test

## test-rust: the Rust crate's tests, clippy and rustfmt (the live tests start the Python server from .venv)
test-rust: $(STAMP)
	cargo fmt --manifest-path clients/rust/Cargo.toml --check
	cargo clippy -q --manifest-path clients/rust/Cargo.toml --all-targets -- -D warnings
	cargo test -q --manifest-path clients/rust/Cargo.toml

# The pinned npm packages of clients/ts (the TypeScript codec and client, and the codegen plugin).
$(NODE_MODULES): clients/ts/package-lock.json
	npm ci --prefix clients/ts --no-audit --no-fund

## fuzz: 20,000 structure-aware fuzz cases over every RPC (make test runs 2,000 with the same fixed seed);
## E2A_FUZZ_SEED=N for another sequence. A failing input is saved under tests/servicer/fuzz_regressions/.
fuzz: $(STAMP)
	E2A_FUZZ_CASES=20000 $(PY) -m pytest -q -p no:cacheprovider tests/servicer/test_fuzz.py

## fuzz-canonical: e2a_grpc._canonical built with ASan/UBSan (SSE2 and portable), fed mutated JSON texts and
## values for 30 s (.ci/run runs it); FUZZ_SECONDS=N for longer
FUZZ_SECONDS ?= 30
fuzz-canonical: $(STAMP)
	LD_PRELOAD="$$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0 PYTHONMALLOC=malloc \
	  $(PY) -m tests.support.tools.fuzz_canonical --seconds $(FUZZ_SECONDS)

## test-go: gofmt, go vet and the Go tests of gen/go (they run the Python side with .venv/bin/python),
## gofmt and go vet of the bench's Go module; -count=1 because go test's cache cannot see changes on the Python side
test-go: $(STAMP)
	cd gen/go && unformatted="$$(gofmt -l .)" && test -z "$$unformatted" || { echo "gofmt -l: $$unformatted"; exit 1; }
	cd gen/go && go vet ./...
	cd gen/go && go test -count=1 ./...
	cd bench/go && unformatted="$$(gofmt -l .)" && test -z "$$unformatted" || { echo "gofmt -l: $$unformatted"; exit 1; }
	cd bench/go && go vet ./...

## serve: run the service on 127.0.0.1:50051 with the embedded echo Chat backend (Ctrl-C stops it), on
## uvloop (in .venv through the dev extra): in bench section "workers" it took 8-12 % less server CPU per
## ToACP call in three runs, and 1.06x / 1.13x / 0.95x (noisiest run) the calls/s
serve: $(STAMP)
	$(VENV)/bin/e2a-grpc serve --event-loop uvloop

## bench: run the benchmarks and write BENCHMARKS.md
bench: $(STAMP) bench-tools nats-server
	$(PY) -m bench.run --output BENCHMARKS.md

# The bench's load generators (bench/goload.py knows these paths): ghz at a pinned version, installed
# with `go install` into the git-ignored .bin/ like the codegen plugins (a directory per version, as
# a `go install`ed ghz reports no version); the Go module bench/go (the grpc-go ceiling server and the
# stream client, built with the Go build cache); and the protoset ghz reads, as ghz's own .proto
# parser rejects proto3 `optional`.
GHZ_VERSION := v0.93.0
GHZ := .bin/ghz-$(GHZ_VERSION)/ghz
BENCH_PROTOSET := .bench/e2a-bench.protoset
$(GHZ):
	GOBIN=$(CURDIR)/.bin/ghz-$(GHZ_VERSION) go install github.com/bojand/ghz/cmd/ghz@$(GHZ_VERSION)
$(BENCH_PROTOSET): $(STAMP) Makefile $(wildcard proto/e2a/v1/*.proto) bench/proto/e2a/bench/v1/bench.proto
	mkdir -p .bench
	$(PY) -m grpc_tools.protoc -I proto -I bench/proto --include_imports --descriptor_set_out=$@ \
	  bench/proto/e2a/bench/v1/bench.proto $(wildcard proto/e2a/v1/*.proto)

## bench-tools: ghz, the Go bench commands, the protoset and clients/ts's npm packages (make bench builds them first)
bench-tools: $(GHZ) $(BENCH_PROTOSET) $(NODE_MODULES)
	cd bench/go && go build -o ../../.bin/bench/ ./cmd/ceiling ./cmd/streamload

clean:
	rm -rf $(VENV) src/e2a_grpc/*.so .pytest_cache .mypy_cache .ruff_cache .hypothesis .bin .bench gen/go/bin clients/java/target clients/rust/target
