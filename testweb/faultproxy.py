"""A fault-injecting TCP proxy: latency, dropped connections and stalls on one link.

``python -m testweb.faultproxy --listen HOST:PORT --to HOST:PORT [--seed N]`` forwards every
connection and prints ``READY port=...``.  It reads commands on its standard input, one per
line, applied at once to every connection:

``latency S``    every chunk, either way, is held S seconds (order kept)
``drop P``       each chunk from the client ends its connection (both sides reset) with
                 probability P
``stall``        nothing is forwarded any more (connections hang) until ``clear``
``clear``        no fault

On end of input (or SIGTERM) it prints ``DROPPED n`` and exits.  The machine's kernel has no
``netem``; this stands in for it on the links the fault tests care about.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import signal
import sys

__all__ = ["main"]


class Faults:
    def __init__(self, seed: int) -> None:
        self.latency = 0.0
        self.drop = 0.0
        self.stalled = asyncio.Event()
        self.stalled.set()  # set: flowing
        self.random = random.Random(seed)
        self.dropped = 0

    def apply(self, line: str) -> None:
        word, _, value = line.strip().partition(" ")
        if word == "latency":
            self.latency = float(value)
        elif word == "drop":
            self.drop = float(value)
        elif word == "stall":
            self.stalled.clear()
        elif word == "clear":
            self.latency = self.drop = 0.0
            self.stalled.set()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, faults: Faults,
                upstream: bool, ends: list[asyncio.StreamWriter]) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def deliver() -> None:
        while True:
            due, chunk = await queue.get()
            if not chunk:
                writer.close()
                return
            await faults.stalled.wait()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(chunk)
            await writer.drain()

    sender = asyncio.create_task(deliver())
    try:
        while True:
            chunk = await reader.read(65536)
            if chunk and upstream and faults.drop and faults.random.random() < faults.drop:
                faults.dropped += 1
                for end in ends:
                    end.transport.abort()
                return
            await queue.put((loop.time() + faults.latency, chunk))
            if not chunk:
                break
        await sender
    except (ConnectionError, OSError):
        for end in ends:
            end.transport.abort()
    finally:
        sender.cancel()


async def _serve(listen: tuple[str, int], target: tuple[str, int], faults: Faults) -> None:
    async def handle(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(*target)
        except OSError:
            client_w.transport.abort()
            return
        ends = [client_w, server_w]
        await asyncio.gather(_pump(client_r, server_w, faults, True, ends),
                             _pump(server_r, client_w, faults, False, ends),
                             return_exceptions=True)

    server = await asyncio.start_server(handle, *listen)
    port = server.sockets[0].getsockname()[1]
    print(f"READY port={port}", flush=True)
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, done.set)
    stdin = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin)

    async def commands() -> None:
        while line := await stdin.readline():
            faults.apply(line.decode())
        done.set()

    reading = asyncio.create_task(commands())
    await done.wait()
    reading.cancel()
    server.close()
    print(f"DROPPED {faults.dropped}", flush=True)


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testweb.faultproxy", description=__doc__)
    parser.add_argument("--listen", required=True, type=_address)
    parser.add_argument("--to", required=True, type=_address)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    async def run() -> None:
        await _serve(args.listen, args.to, Faults(args.seed))

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
