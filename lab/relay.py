"""The way from one service to its backing store: `python -m lab.relay LISTEN_PORT TARGET_PORT`.

A TCP relay on 127.0.0.1 in front of the machine's shared store (PostgreSQL, Redis, NATS),
one per store-backed service, so that a fault can break that service's store alone without
touching the store the other services and shops share: SIGSTOP pauses it (connections open,
nothing answered, as a store frozen by a stop-the-world pause or a hung disk), and stopping it
closes the port (connections refused and reset, as a store that went down). Standard library
only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections.abc import Sequence


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, OSError):
            writer.close()


async def serve(listen: int, target: int, *, ready: asyncio.Event | None = None) -> None:
    async def relay(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            store_reader, store_writer = await asyncio.open_connection("127.0.0.1", target)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(_pipe(client_reader, store_writer), _pipe(store_reader, client_writer))

    server = await asyncio.start_server(relay, "127.0.0.1", listen)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        if ready is not None:
            ready.set()
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m lab.relay")
    p.add_argument("listen", type=int)
    p.add_argument("target", type=int)
    args = p.parse_args(argv)
    asyncio.run(serve(args.listen, args.target))


if __name__ == "__main__":
    main()
