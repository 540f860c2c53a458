"""Code generated from ``proto/`` by ``make gen``. Never edit the modules below this package.

protoc's Python generators write absolute imports rooted at the proto package
(``from e2a.v1 import e2a_pb2``). This directory is therefore put on ``sys.path`` so those imports
resolve to the generated modules here, unmodified. Import generated modules only by that same name
(``e2a.v1.*``): importing them a second time under ``e2a_grpc._gen.e2a...`` would register the
descriptors twice.
"""

import os
import sys

_ROOT = os.path.dirname(os.path.abspath(__file__))
if _ROOT not in sys.path:
    sys.path.append(_ROOT)
