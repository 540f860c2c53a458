"""The backends of a server's routing table, by agent id: which backend a Chat request reaches."""

from __future__ import annotations

from collections.abc import Mapping

from e2a_grpc.chat.events import AgentBackend
from e2a_grpc.errors import UnknownAgentError


class AgentRoutes:
    """Each agent of the table with its backend; a request without ``agent_id`` reaches the default one."""

    def __init__(self, backends: Mapping[str, AgentBackend], default_agent: str) -> None:
        if default_agent not in backends:
            raise ValueError(f"the default agent {default_agent!r} has no backend")
        self.backends = dict(backends)
        self.default_agent = default_agent

    @property
    def agent_ids(self) -> tuple[str, ...]:
        return tuple(self.backends)

    @property
    def default_backend(self) -> AgentBackend:
        return self.backends[self.default_agent]

    def backend_for(self, agent_id: str | None) -> AgentBackend:
        """The backend of ``agent_id`` (``None``: the default agent's); ``UnknownAgentError`` names the known ones."""
        if agent_id is None:
            return self.default_backend
        backend = self.backends.get(agent_id)
        if backend is None:
            raise UnknownAgentError(agent_id, self.agent_ids)
        return backend

    async def aclose(self) -> None:
        for backend in self.backends.values():
            await backend.aclose()
