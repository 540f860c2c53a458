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
