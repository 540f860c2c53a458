"""The agent card's route, with the HTTP caching the spec asks of it (section 8.6.1).

a2a-sdk 1.3's ``create_agent_card_routes`` sends no ``Cache-Control`` unless told one, no
``Last-Modified``, a weak ``ETag`` (made for cards signed anew per request, which this one is not) and
ignores ``If-Modified-Since``. This card is fixed from start to stop, so it is serialized once: a
strong ``ETag`` of those bytes, ``Last-Modified`` the time it was built, ``Cache-Control: max-age``
from ``a2a_card_max_age_seconds``; a conditional request that matches gets 304 (RFC 9110 13.1).
"""

from __future__ import annotations

import hashlib
import time
from email.utils import formatdate, parsedate_to_datetime

import orjson
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types.a2a_pb2 import AgentCard
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

NOT_MODIFIED = 304


def card_route(card: AgentCard, path: str, max_age_seconds: int) -> Route:
    """A GET (and HEAD) route serving ``card`` at ``path``, built now."""
    body = orjson.dumps(agent_card_to_dict(card))
    built = int(time.time())  # HTTP dates have whole seconds
    validators = {
        "ETag": f'"{hashlib.sha256(body).hexdigest()}"',
        "Cache-Control": f"max-age={max_age_seconds}",
    }
    last_modified = formatdate(built, usegmt=True)

    async def serve_card(request: Request) -> Response:
        if _not_modified(request, validators["ETag"], built):
            return Response(status_code=NOT_MODIFIED, headers=validators)
        return Response(body, media_type="application/json", headers={**validators, "Last-Modified": last_modified})

    return Route(path, serve_card, methods=["GET"])


def _not_modified(request: Request, etag: str, built: int) -> bool:
    """Whether the request's preconditions select the card it holds (RFC 9110 13.2.2: If-None-Match,
    when sent, decides alone; weak comparison)."""
    if_none_match = request.headers.get("if-none-match")
    if if_none_match is not None:
        tags = [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
        return "*" in tags or etag in tags
    if_modified_since = request.headers.get("if-modified-since")
    if if_modified_since is None:
        return False
    try:
        since = parsedate_to_datetime(if_modified_since)
    except (TypeError, ValueError):
        return False  # an invalid date is ignored (RFC 9110 13.1.3)
    if since.tzinfo is None:
        return False
    return built <= since.timestamp()
