"""The running service a command asks (``--server``): ``convert`` with it, and ``chat``."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

import grpc

from e2a_grpc.address import ServerAddress
from e2a_grpc.cli.options import settings_from
from e2a_grpc.client import ConversionClient, ServiceError
from e2a_grpc.settings import ClientSettings


class ServerUnreachable(Exception):
    """No server answered at the address: the call failed with UNAVAILABLE and no ErrorInfo, as a
    status the server sends of its own agent (``AGENT_UNAVAILABLE``) has one."""

    def __init__(self, error: ServiceError, address: ServerAddress) -> None:
        super().__init__(str(error))
        self.address = address


@contextlib.contextmanager
def connect(args: argparse.Namespace) -> Iterator[ConversionClient]:
    """A client of ``--server`` (or ``E2A_GRPC_SERVER``) for ``convert`` and ``chat``."""
    client_settings = settings_from(ClientSettings, args)
    address = client_settings.server_address
    token = client_settings.bearer_token()
    with ConversionClient.connect(address.target, token=token, tls=address.tls, tls_ca=args.tls_ca) as client:
        try:
            yield client
        except ServiceError as error:
            if error.code == grpc.StatusCode.UNAVAILABLE and error.reason is None:
                raise ServerUnreachable(error, address) from None
            raise
