"""Chat streams through a broker: every frame a CloudEvent on NATS JetStream (``frame_publisher``,
each frame's message written by ``frame_messages``), and the streams read back (``stream_reader``)
and rebuilt in order, checked, whatever the broker redelivered or reordered (``assembly``); and the
agent registry, a JetStream key-value bucket (``agent_records``: its entries; ``agent_registry``: the
heartbeat and the readers). The ``nats`` extra (nats-py) is needed by ``connection``,
``frame_publisher``, ``stream_reader`` and ``agent_registry`` only."""
