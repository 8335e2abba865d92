"""``python -m benchmarks.agent_server``: the scripted server for agent runs, in its own process.

Like ``python -m agentflow.testing.server`` (first stdout line: the base URL; serves until SIGTERM), but
every Chat Completions request is answered by ``react_responder``: a tool call to ``add`` unless the last
message is that tool's result, then a short final text. So each agent run is exactly two model calls with
one tool round trip between them, however many runs share the server.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from typing import Any

import anyio

from agentflow.testing import Reply, ScriptedServer

__all__ = ["TOOL_ARGUMENTS", "TOOL_NAME", "main", "react_responder"]

TOOL_NAME = "add"
TOOL_ARGUMENTS = {"a": 2, "b": 3}
FINAL_TEXT = "The sum is 5."

_CALL = Reply(tool_calls=[(TOOL_NAME, TOOL_ARGUMENTS)], usage=(40, 12))
_FINAL = Reply(text=FINAL_TEXT, usage=(60, 6))


def react_responder(request: dict[str, Any]) -> Reply:
    """A tool call first; the final text once the request ends with a tool result.

    >>> react_responder({"messages": [{"role": "user", "content": "2+3?"}]}).tool_calls[0].name
    'add'
    >>> react_responder({"messages": [{"role": "tool", "content": "5"}]}).text
    'The sum is 5.'
    """
    messages = request.get("messages") or []
    last = messages[-1] if messages else {}
    return _FINAL if isinstance(last, dict) and last.get("role") == "tool" else _CALL


async def _serve(server: ScriptedServer) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with server:
            print(server.base_url, flush=True)
            async for _ in signals:
                break


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGTERM/SIGINT."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.agent_server")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    anyio.run(_serve, ScriptedServer(react_responder, port=args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
