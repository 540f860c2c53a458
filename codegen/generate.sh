#!/usr/bin/env bash
# Regenerate all code derived from proto/ (run through `make gen`). Offline: uses the protoc
# bundled in grpcio-tools and no remote buf registry or plugin.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
out=src
protos=$(find proto -name '*.proto' | LC_ALL=C sort)

# Python messages, .pyi stubs and grpcio stubs, plus typed .pyi stubs for the (untyped) grpcio
# stubs from mypy-protobuf's protoc-gen-mypy_grpc (a dev dependency, so in .venv/bin).
# Old output is removed first so that a deleted .proto leaves no stale module behind.
rm -rf "$out/e2a"
"$PYTHON" -m grpc_tools.protoc -I proto \
  --plugin=protoc-gen-mypy_grpc=.venv/bin/protoc-gen-mypy_grpc \
  --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" --mypy_grpc_out=quiet:"$out" $protos

# ---------------------------------------------------------------------------------------------
# TypeScript/JavaScript (protobuf-es) into gen/ts, through buf with the local plugin that
# buf.gen.yaml names. The plugin is pinned in clients/ts/package-lock.json; (re)install it when
# node_modules is missing or older than the lock (npm ci rewrites node_modules/.package-lock.json).
# That npm ci is the only step needing the network (the npm registry); buf itself runs offline.
# buf.gen.yaml sets `clean: true`, so stale output of deleted .proto files is removed.
BUF=${BUF:-.venv/bin/buf}
if [ ! -f clients/ts/node_modules/.package-lock.json ] ||
  [ clients/ts/package-lock.json -nt clients/ts/node_modules/.package-lock.json ]; then
  npm ci --prefix clients/ts --no-audit --no-fund
fi

# Go (protoc-gen-go, protoc-gen-go-grpc) into gen/go/e2a, through buf.gen.go.yaml (which leaves out
# io.cloudevents.v1: Go uses the official SDK's generated package for it). The plugins are
# pinned here and installed with `go install` into the git-ignored .bin/ (GOBIN), so nothing
# depends on the user's PATH; they are (re)installed when missing or of another version. That
# install needs the Go module proxy; the runtime versions are pinned in gen/go/go.mod.
PROTOC_GEN_GO_VERSION=v1.36.12      # module google.golang.org/protobuf, = its runtime in gen/go/go.mod
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2   # module google.golang.org/grpc/cmd/protoc-gen-go-grpc
GO=${GO:-go}
go_plugin() { # name, package, version, what `name --version` prints
  if [ "$(".bin/$1" --version 2>/dev/null)" != "$4" ]; then
    command -v "$GO" >/dev/null || { echo "generate.sh: go (>= 1.26) is needed to install $1" >&2; exit 1; }
    GOBIN="$PWD/.bin" "$GO" install "$2@$3"
  fi
}
go_plugin protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go "$PROTOC_GEN_GO_VERSION" \
  "protoc-gen-go $PROTOC_GEN_GO_VERSION"
go_plugin protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION" \
  "protoc-gen-go-grpc ${PROTOC_GEN_GO_GRPC_VERSION#v}"
"$BUF" generate
"$BUF" generate --template buf.gen.go.yaml

# ---------------------------------------------------------------------------------------------
# Each language's table of the record fields, from the schema's (e2a.v1.json) options, by the local
# protoc plugin codegen/e2a_tables.py (see its docstring): the Go, TypeScript, Java and Rust codecs' tables and
# the Python records' field declarations (the
# TypeScript one after buf, whose clean empties gen/ts), and the table of
# docs/wire-json.md section 1, spliced between its markers.
tables() { # target, output directory
  "$PYTHON" -m grpc_tools.protoc -I proto --plugin=protoc-gen-e2a-tables=codegen/protoc-gen-e2a-tables \
    --e2a-tables_out=target="$1":"$2" $protos
}
tables go gen/go/e2ajson
tables ts gen/ts/e2a/v1
tables java clients/java/src/main/java/io/e2a/v1/json
tables rust clients/rust/src/json
tables python src/e2a_grpc/model
docs_table=$(mktemp -d)
trap 'rm -rf "$docs_table"' EXIT
tables docs "$docs_table"
"$PYTHON" codegen/e2a_tables.py splice docs/wire-json.md "$docs_table/wire-json-fields.md"
