"""``python -m benchmarks``: run every measurement in one run and print the table (``make bench``).

    python -m benchmarks [--quick] [--json FILE] [--only KEY,KEY…]

``--quick`` uses tiny sizes (a smoke test: the figures mean nothing); ``--json`` also writes every sample
to FILE; ``--only`` runs a subset (keys: chat_call, chat_stream, responses_stream, agent_loop, agent_many,
agent_stream, import_time, codeact). The exit status is 0 whatever the figures (missed targets are listed
last), 1 when a measurement failed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import traceback
from collections.abc import Callable, Coroutine, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from . import (
    agent_loop,
    agent_many,
    agent_stream,
    chat_call,
    chat_stream,
    codeact,
    import_time,
    responses_stream,
)
from .harness import Config, Measurement, server_process
from .report import environment, render, to_json

__all__ = ["KEYS", "main", "run"]

SERVER_KEYS = ("chat_call", "chat_stream", "responses_stream")
AGENT_KEYS = ("agent_loop", "agent_many", "agent_stream")
KEYS = (*SERVER_KEYS, *AGENT_KEYS, "import_time", "codeact")


def _progress(text: str) -> None:
    print(f"… {text}", file=sys.stderr, flush=True)


def _guarded(key: str, measure: Callable[[], Measurement | list[Measurement]]) -> list[Measurement]:
    """Run one measurement (some give several tables); a failure is reported in its place, not fatal."""
    _progress(key)
    try:
        measured = measure()
    except Exception as exc:
        traceback.print_exc()
        return [Measurement(key=key, title=key, unit="", failed=f"{type(exc).__name__}: {exc}")]
    return measured if isinstance(measured, list) else [measured]


def run(config: Config, keys: Sequence[str] = KEYS) -> list[Measurement]:
    """Run the selected measurements, in table order; each server runs in its own process."""
    results: dict[str, list[Measurement]] = {}
    if "import_time" in keys:
        results["import_time"] = _guarded("import_time", lambda: import_time.measure(config))
    if any(key in keys for key in SERVER_KEYS):
        with server_process("--bench-deltas", str(config.stream_deltas)) as base_url:
            served: dict[str, Callable[[str, Config], Coroutine[Any, Any, Measurement]]] = {
                "chat_call": chat_call.measure,
                "chat_stream": chat_stream.measure,
                "responses_stream": responses_stream.measure,
            }
            for key, measure in served.items():
                if key in keys:
                    results[key] = _guarded(key, partial(asyncio.run, measure(base_url, config)))
    if any(key in keys for key in AGENT_KEYS):
        deltas = str(config.stream_deltas)
        with server_process("--bench-deltas", deltas, module="benchmarks.agent_server") as base_url:
            if "agent_loop" in keys:
                results["agent_loop"] = _guarded(
                    "agent_loop", lambda: asyncio.run(agent_loop.measure(base_url, config))
                )
            if "agent_many" in keys:
                results["agent_many"] = _guarded("agent_many", lambda: agent_many.measure(base_url, config))
            if "agent_stream" in keys:
                results["agent_stream"] = _guarded(
                    "agent_stream", lambda: asyncio.run(agent_stream.measure(base_url, config))
                )
    if "codeact" in keys:
        results["codeact"] = _guarded("codeact", lambda: asyncio.run(codeact.measure(config)))
    return [m for key in KEYS for m in results.get(key, [])]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the options, run, print the table, write the JSON."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: check the harness end to end")
    parser.add_argument("--json", metavar="FILE", help="also write every figure and sample to FILE")
    parser.add_argument("--only", metavar="KEYS", help=f"comma-separated subset of {', '.join(KEYS)}")
    args = parser.parse_args(argv)
    keys: Sequence[str] = KEYS
    if args.only:
        keys = [key.strip() for key in args.only.split(",") if key.strip()]
        unknown = sorted(set(keys) - set(KEYS))
        if unknown:
            parser.error(f"unknown measurement(s) {unknown}; choose from {', '.join(KEYS)}")
    config = Config.quick_config() if args.quick else Config()
    measurements = run(config, keys)
    env = environment()
    print(render(measurements, env))
    if args.json:
        document = to_json(measurements, env, quick=config.quick)
        Path(args.json).write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
    return 1 if any(m.failed for m in measurements) else 0


if __name__ == "__main__":
    sys.exit(main())
