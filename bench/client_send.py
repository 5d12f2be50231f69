"""What one outgoing message costs the agent's event loop: framing and masking.

A client must mask every byte it sends (RFC 6455 5.3). The shipped client
(:mod:`remote_core.wsclient`) frames with websockets' sans-I/O protocol, whose
mask is in C; this compares it with wsproto, the pure-Python framing the
client used before, at the sizes of a typing change, a scrolled region and a
full screen. CPU time per message (``time.process_time``), so a busy machine
slows both alike.

    uv run python -m bench.client_send
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

from websockets.client import ClientProtocol
from websockets.protocol import State
from websockets.uri import parse_uri
from wsproto import ConnectionType
from wsproto.connection import Connection
from wsproto.events import BytesMessage

from bench.report import report

SIZES = (10_000, 100_000, 1_000_000)


def websockets_sender() -> Callable[[bytes], object]:
    protocol = ClientProtocol(parse_uri("ws://bench/ws/agent"), max_size=None, state=State.OPEN)

    def send(data: bytes) -> object:
        protocol.send_binary(data)
        return protocol.data_to_send()
    return send


def wsproto_sender() -> Callable[[bytes], object]:
    connection = Connection(ConnectionType.CLIENT)
    return lambda data: connection.send(BytesMessage(data=data))


def per_message_ms(send: Callable[[bytes], object], data: bytes, seconds: float) -> float:
    count, start = 0, time.process_time()
    while (spent := time.process_time() - start) < seconds:
        send(data)
        count += 1
    return spent / count * 1000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="CPU seconds per cell")
    args = parser.parse_args(argv)
    rows = []
    for size in SIZES:
        data = os.urandom(size)
        shipped = per_message_ms(websockets_sender(), data, args.seconds)
        before = per_message_ms(wsproto_sender(), data, args.seconds)
        rows.append({"message": f"{size // 1000} KB", "websockets (shipped) ms": shipped,
                     "wsproto (before) ms": before, "ratio": before / shipped})
    report("client_send", rows, title="CPU per outgoing binary message: framing + masking")


if __name__ == "__main__":
    main()
