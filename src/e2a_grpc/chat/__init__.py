"""The Chat side of E2A: backend events and interface, request checks, frames, the turn loop and stream
invariants.

Everything here is independent of gRPC: ``e2a_grpc.grpc.chat_servicer`` and the A2A server
(``e2a_grpc.a2a_server``) run its turns, backends produce its events, and clients check streams with
its invariants.
"""
