"""Which webhook URLs push notifications may target: http(s), on public addresses or the operator's networks.

A client names a webhook URL and the server POSTs to it, so an unchecked URL lets any client make the
server reach what only the server can reach: its loopback services, the cloud metadata address, the
private network (SSRF). A URL is refused unless its scheme is http or https and every address its host
resolves to is public unicast or in one of ``a2a_push_allowed_networks``. An IPv6 address that carries
an IPv4 one (IPv4-mapped, 6to4, NAT64) is judged by the IPv4 address it reaches.

The operator's exception is a list of networks rather than one switch allowing every private target:
a switch would open the metadata address and every internal service to allow one receiver. It takes
networks, not host names: a name allows whatever its DNS answers at the time.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable, Sequence
from urllib.parse import unquote, urlsplit

from e2a_grpc.a2a_server.errors import FrontDoorError, a2a_error
from e2a_grpc.settings import IPNetwork, env_var

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

SCHEMES = ("http", "https")
#: RFC 6052's well-known NAT64 prefix: the last 32 bits are the IPv4 address the translator reaches.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")

#: Kinds of addresses webhooks may not target unless allowed, most specific first (``is_private``
#: covers loopback and link-local too; ``is_global`` is false for every kind, and for 100.64.0.0/10).
_REFUSED_KINDS: tuple[tuple[str, Callable[[Address], bool]], ...] = (
    ("unspecified", lambda address: address.is_unspecified),
    ("loopback", lambda address: address.is_loopback),
    ("link-local", lambda address: address.is_link_local),
    ("multicast", lambda address: address.is_multicast),
    ("reserved", lambda address: address.is_reserved),
    # Deprecated (fec0::/10), yet not private to ipaddress: a site's own network.
    ("site-local", lambda address: isinstance(address, ipaddress.IPv6Address) and address.is_site_local),
    ("private", lambda address: address.is_private),
    ("non-public", lambda address: not address.is_global),
)


def reached_address(address: Address) -> Address:
    """The IPv4 address an IPv6 address carries (IPv4-mapped, 6to4, NAT64), else the address itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFF_FFFF)
    return address


def refused_kind(address: Address) -> str | None:
    """What keeps webhooks off ``address`` by default ("loopback", "private", ...); None: public unicast."""
    reached = reached_address(address)
    for kind, is_kind in _REFUSED_KINDS:
        if is_kind(reached):
            return kind
    return None


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class PushTargets:
    """The webhook URL policy: public http(s) targets, and those in ``allowed_networks``."""

    def __init__(self, allowed_networks: Sequence[IPNetwork], resolve_timeout_seconds: float) -> None:
        self._allowed = tuple(allowed_networks)
        self._resolve_timeout = resolve_timeout_seconds

    def address_refusal(self, address: Address) -> str | None:
        """Why a webhook may not target ``address`` (its kind), or None if it may."""
        kind = refused_kind(address)
        if kind is None:
            return None
        reached = reached_address(address)
        if any(address in network or reached in network for network in self._allowed):
            return None
        return kind

    async def refusal(self, url: str) -> str | None:
        """Why ``url`` may not be a webhook, or None if it may; its host is resolved."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            return f"{url!r} is not a URL ({exc})"
        if not parts.scheme:
            return "the URL names no scheme (http or https)"
        if parts.scheme.lower() not in SCHEMES:
            return f"the scheme must be http or https, not {parts.scheme!r}"
        # Percent-decoded as an HTTP client reads it (an IPv6 zone is written %25 in a URL: RFC 6874).
        host = unquote(parts.hostname or "")
        if not host:
            return "the URL names no host"
        try:
            addresses = await self._addresses(host, port or (443 if parts.scheme.lower() == "https" else 80))
        except TimeoutError:
            return f"host {host!r} was not resolved within {self._resolve_timeout:g} s"
        except (OSError, ValueError) as exc:  # getaddrinfo's gaierror; an address ipaddress cannot read
            return f"host {host!r} cannot be resolved ({exc})"
        for address in addresses:
            kind = self.address_refusal(address)
            if kind is not None:
                shown = host if _is_address(host) else f"{host!r} resolves to {address}, which"
                return (
                    f"{shown} is not a public address ({kind}); webhooks must be public unless the operator "
                    f"allows their network ({env_var('a2a_push_allowed_networks')})"
                )
        return None

    async def _addresses(self, host: str, port: int) -> list[Address]:
        """Every address ``host`` resolves to: the POST may go to any of them."""
        infos = await asyncio.wait_for(
            asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM), self._resolve_timeout
        )
        return [ipaddress.ip_address(info[4][0]) for info in infos]

    async def check(self, url: str) -> bool:
        """The request handler's ``push_url_validator``: True, or an InvalidParams error saying why.

        It raises rather than answering False: the SDK's error for False says only "Invalid push
        notification URL" (``DefaultRequestHandlerV2._reject_unsafe_push_url``).
        """
        reason = await self.refusal(url)
        if reason is not None:
            raise a2a_error(FrontDoorError.PUSH_TARGET_REFUSED, f"push notification URL refused: {reason}")
        return True
