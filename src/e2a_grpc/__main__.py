"""``python -m e2a_grpc`` is the ``e2a-grpc`` command."""

import sys

from e2a_grpc.cli import main

sys.exit(main())
