"""The brokers events go to: Redis Streams and NATS JetStream, behind one contract.

A sink's ``send`` delivers a batch of encoded events (the outbox's lines) and returns once the
broker has them all, or raises; the sender retries a failed batch whole, so a sink needs no
state but its connection.  Both are called from the sender's thread only, never the crawl's.

* :class:`RedisStreamSink`: ``XADD`` to one stream, the event's fields as the entry's fields
  (every value a string), trimmed to about ``maxlen`` entries (``MAXLEN ~``; 0: never).
  Consumers read it with a consumer group and de-duplicate by ``event_id``.
* :class:`JetStreamSink`: each event published, as JSON, to the subject, with ``event_id`` as
  its ``Nats-Msg-Id``, so the stream itself drops a re-delivery within its duplicate window;
  the stream (its name cannot hold a dot) is created for the subject if it does not exist.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Protocol

__all__ = ["EventSink", "JetStreamSink", "RedisStreamSink", "sink_for"]


class EventSink(Protocol):
    timeout: float  # seconds a call to the broker may take

    def send(self, lines: list[bytes]) -> None: ...

    def close(self) -> None: ...


def sink_for(url: str, stream: str, jetstream_name: str, maxlen: int,
             timeout: float = 5.0) -> EventSink:
    """The sink for ``url``'s scheme (``redis://``, ``rediss://``, ``unix://``; ``nats://``,
    ``tls://``); ValueError for another."""
    scheme = url.partition("://")[0].lower()
    if scheme in ("redis", "rediss", "unix"):
        return RedisStreamSink(url, stream, maxlen, timeout)
    if scheme in ("nats", "tls"):
        return JetStreamSink(url, stream, jetstream_name, timeout)
    raise ValueError(f"events URL {url!r}: expected redis:// (Redis Streams) or nats:// "
                     f"(NATS JetStream)")


class RedisStreamSink:
    def __init__(self, url: str, stream: str, maxlen: int, timeout: float) -> None:
        import redis

        self.stream = stream
        self.maxlen = maxlen
        self.timeout = timeout
        self.client = redis.Redis.from_url(url, socket_timeout=timeout,
                                           socket_connect_timeout=timeout)

    def send(self, lines: list[bytes]) -> None:
        pipe = self.client.pipeline(transaction=False)
        for line in lines:
            fields: dict[Any, Any] = {k: str(v) for k, v in json.loads(line).items()}
            if self.maxlen:
                pipe.xadd(self.stream, fields, maxlen=self.maxlen, approximate=True)
            else:
                pipe.xadd(self.stream, fields)
        pipe.execute()

    def close(self) -> None:
        self.client.close()


class JetStreamSink:
    def __init__(self, url: str, subject: str, name: str, timeout: float) -> None:
        self.url = url
        self.subject = subject
        self.name = name
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._nc: Any = None
        self._js: Any = None

    def send(self, lines: list[bytes]) -> None:
        try:
            self._loop.run_until_complete(
                asyncio.wait_for(self._send(lines), self.timeout * 2))
        except BaseException:
            self._drop()  # a fresh connection for the retry
            raise

    async def _connect(self) -> Any:
        import nats
        from nats.js.errors import NotFoundError

        self._nc = await nats.connect(self.url, connect_timeout=self.timeout,
                                      allow_reconnect=False, max_reconnect_attempts=0)
        js = self._nc.jetstream(timeout=self.timeout)
        try:
            await js.stream_info(self.name)
        except NotFoundError:
            await js.add_stream(name=self.name, subjects=[self.subject])
        self._js = js
        return js

    async def _send(self, lines: list[bytes]) -> None:
        js = self._js or await self._connect()
        await asyncio.gather(*(
            js.publish(self.subject, line.rstrip(b"\n"),
                       headers={"Nats-Msg-Id": json.loads(line)["event_id"]})
            for line in lines))

    def _drop(self) -> None:
        nc, self._nc, self._js = self._nc, None, None
        if nc is not None:
            try:
                self._loop.run_until_complete(asyncio.wait_for(nc.close(), 2))
            except BaseException:  # noqa: BLE001 - the connection is gone either way
                pass

    def close(self) -> None:
        self._drop()
        self._loop.close()
