"""The floor of a Python gateway on the agent bus, for the "bus" section: a gRPC server with the Chat
method that does the bus's transport work and no E2A work.

It publishes each call's request to the agent's workers as the gateway does (the bus contract's
request message, on JetStream), reads the request's frame messages on a plain subscription as the
gateway does, and writes each message's payload to the call as it is: no frame decoded, checked,
relayed or rebuilt, no limits, no error handling. A client that counts frames without parsing them
(the section's) cannot tell it from the gateway. What it costs per frame is what nats-py and grpc.aio
cost on their own; what the gateway costs beyond it is E2A's work.

Run: ``python -m bench.bus_relay_floor --port PORT --nats URL --agent-id ID``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import signal

import grpc
import nats
from grpc_health.v1 import health, health_pb2_grpc
from nats.aio.msg import Msg

from e2a.v1 import agent_service_pb2 as pb
from e2a_grpc.broker.agent_requests import BusRequest, any_worker_subject, read_notice, request_message
from e2a_grpc.broker.frame_messages import frame_subject
from e2a_grpc.grpc.chat_servicer import AGENT_SERVICE
from e2a_grpc.model import E2AEnvelope
from e2a_grpc.settings import ServerSettings

#: How a frame message's payload (the frame's wire JSON, as the worker writes it) says it is the last.
_FINAL = b'"is_final":true'


async def serve(port: int, url: str, agent_id: str) -> None:
    settings = ServerSettings()
    nc = await nats.connect(url)
    js = nc.jetstream()

    async def chat(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> None:
        envelope = E2AEnvelope.from_proto(pb.ChatRequest.FromString(request).envelope)
        assert envelope.request_id is not None  # the section's requests name one
        arrivals: asyncio.Queue[Msg] = asyncio.Queue()

        async def arrived(message: Msg) -> None:
            arrivals.put_nowait(message)

        inbox = nc.new_inbox()
        notices = await nc.subscribe(inbox, cb=arrived)
        frames = await nc.subscribe(
            frame_subject(settings.nats_subject_prefix, envelope.session_id, envelope.request_id), cb=arrived
        )
        now = datetime.datetime.now(datetime.UTC)
        bus_request = BusRequest(
            envelope=envelope,
            reply_to=inbox,
            start_by=now + datetime.timedelta(seconds=settings.bus_start_by_seconds),
            deadline=None,
            traceparent=None,
        )
        message = request_message(
            bus_request,
            any_worker_subject(settings.bus_requests_subject_prefix, agent_id),
            type_prefix=settings.cloudevents_type_prefix,
            source=settings.cloudevents_source,
        )
        await js.publish(message.subject, message.payload, stream=settings.bus_requests_stream, headers=message.headers)
        try:
            while True:
                arrival = await arrivals.get()
                if read_notice(arrival.headers) is not None:
                    continue
                await context.write(arrival.data)
                if _FINAL in arrival.data:
                    return
        finally:
            await notices.unsubscribe()
            await frames.unsubscribe()

    server = grpc.aio.server()
    handlers: dict[str, grpc.RpcMethodHandler[bytes, bytes]] = {"Chat": grpc.unary_stream_rpc_method_handler(chat)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(AGENT_SERVICE, handlers),))
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)  # SERVING for ""
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    stopped = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopped.set)
    await stopped.wait()
    await server.stop(None)
    await nc.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--nats", required=True)
    parser.add_argument("--agent-id", required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.port, args.nats, args.agent_id))


if __name__ == "__main__":
    main()
