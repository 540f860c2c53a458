"""--server / E2A_GRPC_SERVER: the address forms people type, parsed in one place."""

from __future__ import annotations

import pytest

from e2a_grpc.address import ServerAddress, parse_server_address, unbracketed_host, url_host


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1", ServerAddress("127.0.0.1", 50051)),
        ("localhost:7000", ServerAddress("localhost", 7000)),
        ("http://127.0.0.1:50051", ServerAddress("127.0.0.1", 50051)),
        ("http://example.com", ServerAddress("example.com", 50051)),
        ("https://example.com", ServerAddress("example.com", 50051, tls=True)),
        ("HTTPS://example.com:8443/", ServerAddress("example.com", 8443, tls=True)),
        ("[::1]:9000", ServerAddress("::1", 9000)),
        ("[::1]", ServerAddress("::1", 50051)),
    ],
)
def test_address_forms(text: str, expected: ServerAddress) -> None:
    assert parse_server_address(text) == expected


def test_the_target_puts_ipv6_hosts_in_brackets() -> None:
    assert parse_server_address("[::1]:9000").target == "[::1]:9000"
    assert parse_server_address("https://example.com").target == "example.com:50051"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("ftp://example.com", "unsupported scheme 'ftp'"),
        ("example.com:http", "bad port"),
        ("example.com:0", "bad port"),
        ("example.com:70000", "bad port"),
        ("example.com/chat", "is not an address"),
        (":50051", "no host"),
        ("", "no host"),
    ],
)
def test_bad_addresses_say_what_is_wrong(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_server_address(text)


@pytest.mark.parametrize(
    ("host", "bind", "url"),
    [
        ("127.0.0.1", "127.0.0.1", "127.0.0.1"),
        ("localhost", "localhost", "localhost"),
        ("::1", "::1", "[::1]"),
        ("[::1]", "::1", "[::1]"),
    ],
)
def test_a_host_is_bound_without_brackets_and_written_with_them(host: str, bind: str, url: str) -> None:
    assert unbracketed_host(host) == bind
    assert url_host(host) == url
