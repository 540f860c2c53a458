"""Chat streams through a broker: every frame a CloudEvent on NATS JetStream (``jetstream``), and the
streams rebuilt from there in order, checked, whatever the broker redelivered or reordered
(``assembly``). The ``nats`` extra (nats-py) is needed by ``jetstream`` only."""
