"""``e2a-grpc agents``: the live agents of the agent registry and their worker counts."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

from e2a_grpc.cli.exits import EXIT_CODES_HELP, EXIT_FAILED, EXIT_NO_SERVER, EXIT_OK
from e2a_grpc.cli.options import add_setting_options, settings_from
from e2a_grpc.errors import error_text
from e2a_grpc.settings import AgentsSettings

if TYPE_CHECKING:
    from e2a_grpc.broker.agent_registry import LiveAgent

_COLUMNS = ("AGENT", "WORKERS", "BACKEND", "VERSION", "NAME", "SKILLS")


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "agents",
        help="list the live agents of the agent registry (serve --registry-nats) and their workers",
        description="List the agents registered in the agent registry (a JetStream key-value bucket on NATS) "
        "whose entries are alive, with how many workers each has. Needs the 'nats' extra (nats-py).",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object: the agents and their workers")
    add_setting_options(parser, AgentsSettings, *AgentsSettings.model_fields)
    # The short name of --registry-nats.
    parser.add_argument(
        "--nats", dest="registry_nats", default=argparse.SUPPRESS, help="the same as --registry-nats: URL[,URL...]"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    settings = settings_from(AgentsSettings, args)
    try:
        import nats.errors

        from e2a_grpc.broker.agent_registry import AgentRegistry
    except ImportError as exc:
        print(f"error: {exc} (pip install 'e2a-grpc[nats]')", file=sys.stderr)
        return EXIT_FAILED

    async def read() -> list[LiveAgent]:
        registry = await AgentRegistry.open(settings.registry_nats, bucket=settings.registry_bucket)
        try:
            return await registry.agents()
        finally:
            await registry.close()

    try:
        agents = asyncio.run(read())
    except nats.errors.NoServersError as exc:
        return _unreachable(settings, exc)
    # Before OSError, of which TimeoutError (nats-py's too) is one: a broker reached that did not answer
    # in time is no broker missing.
    except (nats.errors.Error, TimeoutError) as exc:
        print(f"error: cannot read the agent registry {settings.registry_bucket}: {error_text(exc)}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as exc:
        return _unreachable(settings, exc)
    sys.stdout.write(agents_json(agents) if args.json else agents_table(agents))
    return EXIT_OK


def _unreachable(settings: AgentsSettings, exc: Exception) -> int:
    print(f"error: cannot reach NATS at {settings.registry_nats}: {error_text(exc)}", file=sys.stderr)
    return EXIT_NO_SERVER


def agents_json(agents: list[LiveAgent]) -> str:
    """``--json``: ``{"agents": [{...the newest worker's entry, without its instance fields, "workers": N}]}``."""
    rows = [
        {
            **agent.record.model_dump(mode="json", exclude={"instance_id", "started_at", "heartbeat_at"}),
            "workers": agent.workers,
        }
        for agent in agents
    ]
    return json.dumps({"agents": rows}, ensure_ascii=False) + "\n"


def agents_table(agents: list[LiveAgent]) -> str:
    """The table for people: a row per agent."""
    if not agents:
        return "no live agents\n"
    rows = [_COLUMNS] + [
        (
            agent.record.agent_id,
            str(agent.workers),
            agent.record.backend,
            agent.record.version,
            agent.record.name,
            ",".join(skill.id for skill in agent.record.skills),
        )
        for agent in agents
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(_COLUMNS))]
    lines = ("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows)
    return "".join(line + "\n" for line in lines)
