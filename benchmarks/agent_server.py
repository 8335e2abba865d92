"""``python -m benchmarks.agent_server``: the scripted server for the agent benchmarks, in its own process.

    python -m benchmarks.agent_server [--port N] [--bench-deltas N]

Like ``python -m agentflow.testing.server`` (first stdout line: the base URL; serves until SIGTERM), but
every Chat Completions request is answered by ``agent_responder`` (see ``benchmarks.agent_script``):

- a request whose last message is a tool result gets the short final text;
- a streaming request that declares no tools gets the long answer, ``--bench-deltas`` text deltas;
- any other request gets three parallel tool calls to ``add``.

So a tool-loop run is exactly two model calls with three tool calls between them, however many runs share
the server, and a streamed run is one long stream.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import anyio

from agentflow.testing import Reply, Responder, ScriptedServer
from agentflow.testing.server import serve_until_signal

from .agent_script import CALLS, DELTA, FINAL_TEXT, TOOL_NAME

__all__ = ["agent_responder", "main"]

_CALLS = Reply(tool_calls=[(TOOL_NAME, arguments) for arguments in CALLS], usage=(60, 30))
_FINAL = Reply(text=FINAL_TEXT, usage=(100, 9))


def agent_responder(stream_deltas: int = 10_000) -> Responder:
    """The benchmark's model: tool calls, then the final text; a long text for a tool-less stream.

    >>> respond = agent_responder(3)
    >>> [call.name for call in respond({"messages": [{"role": "user", "content": "2+3?"}]}).tool_calls]
    ['add', 'add', 'add']
    >>> respond({"messages": [{"role": "tool", "content": "5"}]}).text
    'The sums are 3, 7 and 11.'
    >>> respond({"stream": True, "messages": [{"role": "user", "content": "story"}]}).text
    ' word word word'
    """
    if stream_deltas < 1:
        raise ValueError(f"stream_deltas must be at least 1, got {stream_deltas}")
    long_answer = Reply(text=DELTA * stream_deltas, chunk_size=len(DELTA), usage=(12, stream_deltas))

    def respond(request: dict[str, Any]) -> Reply:
        messages = request.get("messages") or []
        last = messages[-1] if messages else {}
        if isinstance(last, dict) and last.get("role") == "tool":
            return _FINAL
        if request.get("stream") is True and not request.get("tools"):
            return long_answer
        return _CALLS

    return respond


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.agent_server")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--bench-deltas", type=int, default=10_000, help="deltas of the streamed answer")
    args = parser.parse_args(argv)
    try:
        responder = agent_responder(args.bench_deltas)
    except ValueError as exc:
        parser.error(str(exc))
    anyio.run(serve_until_signal, ScriptedServer(responder, port=args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
