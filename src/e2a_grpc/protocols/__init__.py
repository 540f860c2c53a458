"""The protocols E2A bridges: JSON-RPC 2.0, ACP and A2A, each with its adapters to and from E2A records."""
