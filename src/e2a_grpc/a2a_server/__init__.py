"""The A2A server in front of the Chat backend (``e2a-grpc serve --a2a-port PORT``), on the official a2a-sdk.

It needs the ``a2a-server`` extra (``pip install 'e2a-grpc[a2a-server]'``).
"""
