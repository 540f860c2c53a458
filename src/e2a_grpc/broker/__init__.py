"""Chat streams through a broker: every frame a CloudEvent on NATS JetStream (``frame_publisher``,
each frame's message written by ``frame_messages``), and the streams read back (``stream_reader``)
and rebuilt in order, checked, whatever the broker redelivered or reordered (``assembly``). The
``nats`` extra (nats-py) is needed by ``connection``, ``frame_publisher`` and ``stream_reader`` only."""
