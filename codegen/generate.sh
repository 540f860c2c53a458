#!/usr/bin/env bash
# Regenerate all code derived from proto/ (run through `make gen`). Offline: uses the protoc
# bundled in grpcio-tools and no remote buf registry or plugin.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
out=e2a_grpc/_gen
protos=$(find proto -name '*.proto' | LC_ALL=C sort)

# Python messages, .pyi stubs and grpcio stubs. Old output is removed first so that a deleted
# .proto leaves no stale module behind.
rm -rf "$out/e2a"
"$PYTHON" -m grpc_tools.protoc -I proto \
  --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" $protos

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
"$BUF" generate
