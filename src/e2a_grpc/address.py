"""Where a client finds the service: ``--server`` / ``E2A_GRPC_SERVER`` in the forms people type."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_PORT = 50051
_SCHEMES = {"http": False, "https": True}


def unbracketed_host(host: str) -> str:
    """A host as sockets take it: an IPv6 address without the brackets of ``--host [::1]``."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def url_host(host: str) -> str:
    """A host as a URL or a gRPC target writes it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


@dataclass(frozen=True)
class ServerAddress:
    """A parsed server address; ``tls`` is set by an ``https://`` address."""

    host: str
    port: int
    tls: bool = False

    @property
    def target(self) -> str:
        """``host:port`` as gRPC dials it (an IPv6 host in brackets)."""
        return f"{url_host(self.host)}:{self.port}"


def parse_server_address(text: str) -> ServerAddress:
    """``host``, ``host:port``, ``[::1]:port`` or ``http(s)://host[:port]``; the port defaults to 50051.

    Raises ValueError naming what is wrong.
    """
    text = text.strip()
    scheme, separator, _ = text.partition("://")
    if separator and scheme.lower() not in _SCHEMES:
        raise ValueError(f"unsupported scheme {scheme!r} in {text!r}: use http:// or https://")
    # urlsplit parses brackets and ports; without a scheme "//" makes the text its network location.
    parts = urlsplit(text if separator else f"//{text}")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        raise ValueError(f"{text!r} is not an address: give host, host:port or http(s)://host:port")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"bad port in {text!r}: give a number from 1 to 65535") from None
    if not parts.hostname:
        raise ValueError(f"no host in {text!r}")
    if port == 0:
        raise ValueError(f"bad port in {text!r}: give a number from 1 to 65535")
    return ServerAddress(parts.hostname, port or DEFAULT_PORT, _SCHEMES.get(scheme.lower(), False))
