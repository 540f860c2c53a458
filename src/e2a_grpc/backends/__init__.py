"""The Chat agent backends, by name: each is imported only when a server is configured with it.

``echo`` is the embedded default; ``acp`` runs an ACP agent on stdio; ``a2a`` calls a remote A2A
agent (it needs the optional ``a2a-sdk``); ``upstream`` calls another E2A service (a ``grpc://``
route of the routing table).
"""

from __future__ import annotations

from collections.abc import Callable

from e2a_grpc.backends.routes import AgentRoutes
from e2a_grpc.chat.events import AgentBackend
from e2a_grpc.routing import AgentRoute, RouteKind
from e2a_grpc.settings import BackendName, ServerSettings


def _echo(config: ServerSettings) -> AgentBackend:
    from e2a_grpc.backends.echo import EchoBackend

    return EchoBackend(delay_seconds=config.echo_delay_seconds)


def _acp(config: ServerSettings) -> AgentBackend:
    from e2a_grpc.backends.acp import AcpBackend

    return AcpBackend(
        config.acp_argv,
        default_cwd=config.acp_cwd,
        permission_policy=config.acp_permission_policy,
        permission_timeout_seconds=config.acp_permission_timeout_seconds,
        permission_timeout_policy=config.acp_permission_timeout_policy,
        max_sessions=config.acp_max_sessions,
        max_coalesced_bytes=config.chat_coalesce_max_bytes,
    )


def _a2a(config: ServerSettings) -> AgentBackend:
    assert config.a2a_url is not None  # ServerSettings refuses the a2a backend without it
    from e2a_grpc.backends.a2a import A2ABackend  # a2a-sdk is optional: ImportError says how to install it

    return A2ABackend(
        config.a2a_url,
        timeout_seconds=config.a2a_timeout_seconds,
        # A blocking send's answer comes when the agent's task ends or waits: a turn's whole time.
        answer_timeout_seconds=config.chat_max_stream_seconds,
        transports=config.a2a_transport_preference,
        max_message_bytes=config.max_message_bytes,
    )


BACKENDS: dict[BackendName, Callable[[ServerSettings], AgentBackend]] = {
    BackendName.ECHO: _echo,
    BackendName.ACP: _acp,
    BackendName.A2A: _a2a,
}


def make_backend(config: ServerSettings) -> AgentBackend:
    """The Chat backend the configuration names."""
    return BACKENDS[config.backend](config)


def make_routes(config: ServerSettings) -> AgentRoutes | None:
    """The backend of each agent of the routing table (``None``: the server has none, one ``backend``)."""
    table = config.routing
    if table is None:
        return None
    backends = {
        route.agent_id: _route_backend(route, config)
        for route in table.routes
        if route.target.kind is not RouteKind.NATS
    }
    on_the_bus = [route.agent_id for route in table.routes if route.target.kind is RouteKind.NATS]
    if on_the_bus:  # routing_table refuses a nats target without --bus-nats
        from e2a_grpc.backends.bus import make_bus_backends

        backends.update(make_bus_backends(on_the_bus, config))  # one bus for all of them
    return AgentRoutes({route.agent_id: backends[route.agent_id] for route in table.routes}, table.default_agent)


def _route_backend(route: AgentRoute, config: ServerSettings) -> AgentBackend:
    """A route's backend: a local one with the server's options for its kind, or an upstream (a nats
    route's: ``make_bus_backends``, in ``make_routes``)."""
    target = route.target
    if target.kind is RouteKind.ECHO:
        return _echo(config)
    if target.kind is RouteKind.ACP:
        return _acp(config.model_copy(update={"acp_command": target.acp_command}))
    if target.kind is RouteKind.A2A:
        return _a2a(config.model_copy(update={"a2a_url": target.a2a_url}))
    if target.kind is RouteKind.GRPC:
        assert target.upstream is not None  # parse_target sets it for every grpc target
        from e2a_grpc.backends.upstream import UpstreamBackend

        return UpstreamBackend(
            route.agent_id,
            target.upstream,
            token=route.upstream_token(),
            tls_ca=route.tls_ca,
            max_message_bytes=config.max_message_bytes,
        )
    raise AssertionError(f"no backend for target {target}")
