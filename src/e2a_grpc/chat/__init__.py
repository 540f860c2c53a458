"""The Chat side of E2A: backend events and interface, request checks, frames and stream invariants.

Everything here is independent of gRPC: ``e2a_grpc.grpc.chat_servicer`` serves it, backends produce
its events, and clients check streams with its invariants.
"""
