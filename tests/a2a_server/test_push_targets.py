"""The webhook URL policy (``a2a_server.push_targets``) and the headers and log form of a delivery."""

from __future__ import annotations

import ipaddress

import pytest
from a2a.types.a2a_pb2 import AuthenticationInfo, TaskPushNotificationConfig
from a2a.utils.errors import InvalidParamsError
from hypothesis import given
from hypothesis import strategies as st

from e2a_grpc.a2a_server.errors import FrontDoorError
from e2a_grpc.a2a_server.push_delivery import TOKEN_HEADER, notification_headers, webhook_origin
from e2a_grpc.a2a_server.push_targets import Address, PushTargets, reached_address, refused_kind
from e2a_grpc.settings import IPNetwork

#: Each kind of refused target, with networks of it (IPv4 and IPv6 where both have one).
REFUSED_NETWORKS = {
    "loopback": ("127.0.0.0/8", "::1/128"),
    "link-local": ("169.254.0.0/16", "fe80::/10"),
    "private": ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"),
    "multicast": ("224.0.0.0/4", "ff00::/8"),
    "reserved": ("240.0.0.0/5",),
    "unspecified": ("0.0.0.0/32", "::/128"),
    "site-local": ("fec0::/10",),
    "non-public": ("100.64.0.0/10",),  # shared address space (carrier-grade NAT)
}
PUBLIC = ("8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "2a00:1450:4001:82a::200e")


def addresses_in(network: str) -> st.SearchStrategy[Address]:
    parsed = ipaddress.ip_network(network)
    return st.integers(int(parsed.network_address), int(parsed.broadcast_address)).map(
        lambda number: ipaddress.ip_address(number) if parsed.version == 4 else ipaddress.IPv6Address(number)
    )


REFUSED = st.sampled_from(
    sorted((kind, network) for kind, networks in REFUSED_NETWORKS.items() for network in networks)
)
ANY_IPV4 = st.integers(0, 2**32 - 1).map(ipaddress.IPv4Address)


def policy(*networks: str) -> PushTargets:
    allowed: list[IPNetwork] = [ipaddress.ip_network(network) for network in networks]
    return PushTargets(allowed, resolve_timeout_seconds=5.0)


@given(st.data())
def test_every_address_of_a_refused_network_is_refused_as_its_kind(data: st.DataObject) -> None:
    kind, network = data.draw(REFUSED)
    address = data.draw(addresses_in(network))
    assert refused_kind(address) == kind
    assert policy().address_refusal(address) == kind


@pytest.mark.parametrize("address", PUBLIC)
def test_public_unicast_addresses_are_accepted(address: str) -> None:
    assert policy().address_refusal(ipaddress.ip_address(address)) is None


@given(ANY_IPV4)
def test_an_ipv6_address_carrying_an_ipv4_one_is_judged_by_it(address: ipaddress.IPv4Address) -> None:
    carriers = (
        ipaddress.IPv6Address(f"::ffff:{address}"),  # IPv4-mapped
        ipaddress.IPv6Address((0x2002 << 112) | (int(address) << 80)),  # 6to4
        ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) | int(address)),  # NAT64
    )
    for carrier in carriers:
        assert reached_address(carrier) == address
        assert refused_kind(carrier) == refused_kind(address)


@given(st.data())
def test_an_allowed_network_opens_its_addresses_and_no_others(data: st.DataObject) -> None:
    kind, network = data.draw(REFUSED)
    allowed = data.draw(addresses_in(network))
    prefix = 24 if allowed.version == 4 else 120
    allowed_network = ipaddress.ip_network(f"{allowed}/{prefix}", strict=False)
    targets = policy(str(allowed_network))
    inside = data.draw(addresses_in(str(allowed_network)))
    assert targets.address_refusal(inside) is None
    if ipaddress.ip_network(network).num_addresses > allowed_network.num_addresses:  # not all of it allowed
        outside = data.draw(addresses_in(network).filter(lambda address: address not in allowed_network))
        assert targets.address_refusal(outside) == kind


def test_an_allowed_ipv4_network_opens_its_ipv4_mapped_form() -> None:
    assert policy("127.0.0.1/32").address_refusal(ipaddress.ip_address("::ffff:127.0.0.1")) is None
    assert policy("::1/128").address_refusal(ipaddress.ip_address("::ffff:127.0.0.1")) == "loopback"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://8.8.8.8/hook", "the scheme must be http or https, not 'ftp'"),
        ("file:///etc/passwd", "the scheme must be http or https, not 'file'"),
        ("//8.8.8.8/hook", "the URL names no scheme (http or https)"),
        ("http:///hook", "the URL names no host"),
        ("http://8.8.8.8:99999/", "is not a URL"),
        ("http://127.0.0.1:8080/hook", "127.0.0.1 is not a public address (loopback)"),
        ("https://localhost/hook", "'localhost' resolves to "),
        ("http://[::1]/hook", "::1 is not a public address (loopback)"),
        ("http://[::ffff:10.0.0.1]/hook", "::ffff:10.0.0.1 is not a public address (private)"),
        ("http://[fe80::1%25lo]/hook", "fe80::1%lo is not a public address (link-local)"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is not a public address (link-local)"),
        ("http://2130706433/hook", "'2130706433' resolves to 127.0.0.1, which is not a public address (loopback)"),
        ("http://0.0.0.0/", "0.0.0.0 is not a public address (unspecified)"),
        ("http://224.0.0.1/", "(multicast)"),
    ],
)
async def test_urls_refused_with_their_reason(url: str, reason: str) -> None:
    refusal = await policy().refusal(url)
    assert refusal is not None and reason in refusal


@pytest.mark.asyncio
@pytest.mark.parametrize("url", ["http://8.8.8.8/hook", "HTTPS://[2606:4700:4700::1111]:8443/a?b=c"])
async def test_public_http_urls_are_accepted(url: str) -> None:
    assert await policy().refusal(url) is None


@pytest.mark.asyncio
async def test_the_operator_allows_a_loopback_receiver_by_its_network() -> None:
    assert await policy("127.0.0.0/8", "::1/128").refusal("http://localhost:8080/hook") is None
    assert await policy("127.0.0.0/8").refusal("http://127.0.0.1:8080/hook") is None


@pytest.mark.asyncio
async def test_the_handlers_check_raises_invalid_params_with_the_reason() -> None:
    with pytest.raises(InvalidParamsError) as raised:
        await policy().check("http://10.1.2.3/hook")
    assert raised.value.message == (
        "push notification URL refused: 10.1.2.3 is not a public address (private); webhooks must be public "
        "unless the operator allows their network (E2A_GRPC_A2A_PUSH_ALLOWED_NETWORKS)"
    )
    assert raised.value.data == {"reason": FrontDoorError.PUSH_TARGET_REFUSED, "retryable": False}
    assert await policy().check("http://8.8.8.8/hook") is True


def test_the_token_and_the_authentication_are_headers() -> None:
    config = TaskPushNotificationConfig(
        url="http://8.8.8.8/", token="tok", authentication=AuthenticationInfo(scheme="Basic", credentials="dXM6cHc=")
    )
    assert notification_headers(config) == {TOKEN_HEADER: "tok", "Authorization": "Basic dXM6cHc="}
    assert notification_headers(TaskPushNotificationConfig(url="http://8.8.8.8/")) == {}


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://user:secret@hooks.example:8443/path/secret?sig=secret", "https://hooks.example:8443"),
        ("http://[::1]/x", "http://[::1]"),
        ("http://8.8.8.8:99999/", "an unreadable URL"),
        ("http:///no-host", "http://"),
    ],
)
def test_a_log_line_shows_only_the_webhooks_origin(url: str, origin: str) -> None:
    assert webhook_origin(url) == origin
