"""Where the a2a backend dials an agent card's gRPC interface, and whether with TLS."""

from __future__ import annotations

import pytest

from e2a_grpc.address import ServerAddress
from e2a_grpc.backends.a2a import grpc_interface_address


@pytest.mark.parametrize(
    ("url", "address"),
    [
        # As the SDK's own agents write it: plaintext.
        ("127.0.0.1:50061", ServerAddress("127.0.0.1", 50061)),
        ("[::1]:50061", ServerAddress("::1", 50061)),
        # As A2A 1.0 asks of a production card: TLS, port 443 unless named, no path.
        ("https://grpc.example.com/a2a", ServerAddress("grpc.example.com", 443, tls=True)),
        ("HTTPS://grpc.example.com:8443/", ServerAddress("grpc.example.com", 8443, tls=True)),
        ("http://agent.internal", ServerAddress("agent.internal", 80)),
        ("http://[::1]:7/a2a/v1", ServerAddress("::1", 7)),
    ],
)
def test_a_cards_grpc_url_names_the_address_and_tls(url: str, address: ServerAddress) -> None:
    assert grpc_interface_address(url) == address


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://grpc.example.com", "give host:port, http://host"),
        ("https://", "give host:port, http://host"),
        ("https://user@grpc.example.com/", "is not an address"),
        ("grpc.example.com:0", "bad port"),
    ],
)
def test_a_url_no_grpc_client_can_dial_is_refused_saying_why(url: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        grpc_interface_address(url)
