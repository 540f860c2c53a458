"""The A2A server in front of the Chat backend (``e2a-grpc serve --a2a-port PORT``), on the official a2a-sdk.

It needs the ``a2a-server`` extra (``pip install 'e2a-grpc[a2a-server]'``).
"""

from e2a_grpc.a2a_sdk_tracing import untrace_when_off

# Before any module of this package imports a2a-sdk's server, whose classes the decorators wrap.
untrace_when_off()
