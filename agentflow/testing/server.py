"""``python -m agentflow.testing.server``: run a ``ScriptedServer`` on its own, for demos and benchmarks.

    python -m agentflow.testing.server [--host H] [--port N] [--script FILE.json] [--bench-deltas N]

The first line on stdout is the base URL (``http://127.0.0.1:PORT/v1``), flushed as soon as the server
listens; it serves until SIGTERM or SIGINT, then exits with status 0.

With ``--script`` it plays that JSON script (see ``script.load_script``: a list of turns, or
``{"turns": [...], "default": {...}}`` where ``default`` answers every request after the turns).
Without it, it plays the *benchmark reply* forever: a streaming request gets a text of
``--bench-deltas`` deltas (default 10,000, each ``" word"``), a non-streaming request a small text
reply. Both protocols (``/v1/chat/completions`` and ``/v1/responses``) are served.

This module only parses arguments and waits for signals; the server is ``scripted_server``.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from typing import Any

import anyio

from .script import Fault, Reply, Responder, ScriptError, Turn, load_script
from .scripted_server import ScriptedServer

__all__ = ["BENCH_DELTA", "bench_responder", "main", "serve_until_signal"]

BENCH_DELTA = " word"
"""The text of each delta of the benchmark stream."""


def bench_responder(stream_deltas: int = 10_000) -> Responder:
    """The benchmark turn: ``stream_deltas`` deltas for a streaming request, a small reply otherwise.

    >>> respond = bench_responder(3)
    >>> respond({"stream": True}).text, respond({}).text
    (' word word word', 'Hello from the scripted server.')
    """
    if stream_deltas < 1:
        raise ValueError(f"stream_deltas must be at least 1, got {stream_deltas}")
    long_reply = Reply(text=BENCH_DELTA * stream_deltas, chunk_size=len(BENCH_DELTA))
    small_reply = Reply(text="Hello from the scripted server.", usage=(12, 7))

    def respond(request: dict[str, Any]) -> Reply | Fault:
        return long_reply if request.get("stream") is True else small_reply

    return respond


async def serve_until_signal(server: ScriptedServer) -> None:
    """Start ``server``, print its base URL as the first stdout line, and serve until SIGTERM or SIGINT."""
    # The signal receiver is installed before the URL is printed, so a prompt SIGTERM is never lost.
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with server:
            print(server.base_url, flush=True)
            async for _ in signals:
                break


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server until SIGTERM/SIGINT; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m agentflow.testing.server",
        description="Run a scripted OpenAI-compatible server until SIGTERM or SIGINT.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one (default)")
    parser.add_argument("--script", help="a JSON script to play instead of the benchmark reply")
    parser.add_argument(
        "--bench-deltas",
        type=int,
        default=10_000,
        help="deltas of the streamed benchmark reply (default 10000)",
    )
    args = parser.parse_args(argv)
    turns: list[Turn] = []
    default: Turn | None
    if args.script:
        try:
            scripted, default = load_script(args.script)
        except (OSError, ScriptError) as exc:
            parser.error(f"cannot load --script {args.script}: {exc}")
        turns.extend(scripted)
    else:
        try:
            default = bench_responder(args.bench_deltas)
        except ValueError as exc:
            parser.error(str(exc))
    server = ScriptedServer(turns, default=default, host=args.host, port=args.port)
    anyio.run(serve_until_signal, server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
