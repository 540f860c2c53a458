"""The sessions an agent worker holds, claimed in the session-ownership bucket (``session_owners``) so
that gateways send their next requests to this worker (docs/agent-bus.md, "Sessions").

A worker whose backend keeps sessions in its process (acp) takes a session when it runs a request of
it: the claim is written (taken over from a lost owner, if any), refreshed with the worker's heartbeat
while held, and released when the worker stops. At most ``max_sessions`` are held, as the backend keeps
at most that many agent sessions: the least recently used is released to make room, so no gateway is
sent to this worker for a session its backend no longer has.
"""

from __future__ import annotations

import logging
from collections import OrderedDict

from e2a_grpc.broker.session_owners import Claim, SessionOwner, SessionOwners

log = logging.getLogger(__name__)


class HeldSessions:
    """One worker instance's claims on its sessions."""

    def __init__(self, owners: SessionOwners, *, agent_id: str, instance_id: str, max_sessions: int) -> None:
        self._owners = owners
        self._agent_id = agent_id
        self._instance_id = instance_id
        self._max = max_sessions
        #: The claims held, least recently used first.
        self._claims: OrderedDict[str, Claim] = OrderedDict()

    def __len__(self) -> int:
        return len(self._claims)

    async def take(self, session_id: str) -> SessionOwner | None:
        """Hold ``session_id`` for this worker; returns the claim of another instance it was taken
        from when this worker did not hold it (its backend starts the session anew), else None."""
        held = self._claims.get(session_id)
        if held is not None:
            self._claims.move_to_end(session_id)
            return None
        claim = await self._owners.claim(self._agent_id, session_id, self._instance_id)
        self._claims[session_id] = claim
        if len(self._claims) > self._max:
            _, oldest = self._claims.popitem(last=False)
            await self._owners.release([oldest])
        previous = claim.previous
        return previous if previous is not None and previous.instance_id != self._instance_id else None

    async def refresh(self) -> None:
        """Write every claim again (the worker's heartbeat); those another instance took are dropped."""
        if not self._claims:
            return
        refreshed = await self._owners.refresh(list(self._claims.values()))
        for claim in refreshed.held:
            if claim.owner.session_id in self._claims:
                self._claims[claim.owner.session_id] = claim
        for claim in refreshed.lost:
            self._claims.pop(claim.owner.session_id, None)

    async def release_all(self) -> None:
        """Release every claim (the worker stops): the sessions' next requests go to any worker."""
        claims = list(self._claims.values())
        self._claims.clear()
        await self._owners.release(claims)
