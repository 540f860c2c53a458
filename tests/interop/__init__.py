"""Interoperability tests: the schema in ``proto/`` read by a second, independent protobuf/gRPC stack."""
