"""The fetch-event stream: one event per fetch outcome and admission decision, delivered at
least once to Redis Streams or NATS JetStream (docs/outputs.md)."""

from crawler_ext.events.extension import EventsExtension

__all__ = ["EventsExtension"]
