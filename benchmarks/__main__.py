"""``python -m benchmarks``: run every measurement in one run and print the table (``make bench``).

    python -m benchmarks [--quick] [--json FILE] [--only KEY,KEY…]

``--quick`` uses tiny sizes (a smoke test: the figures mean nothing); ``--json`` also writes every sample
to FILE; ``--only`` runs a subset (keys: chat_call, chat_stream, responses_stream, agent_runs,
import_time, codeact). The exit status is 0 whatever the figures (missed targets are listed last), 1 when
a measurement failed.
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

from . import agent_runs, chat_call, chat_stream, codeact, import_time, responses_stream
from .harness import Config, Measurement, server_process
from .report import environment, render, to_json

__all__ = ["KEYS", "main", "run"]

SERVER_KEYS = ("chat_call", "chat_stream", "responses_stream")
KEYS = (*SERVER_KEYS, "agent_runs", "import_time", "codeact")


def _progress(text: str) -> None:
    print(f"… {text}", file=sys.stderr, flush=True)


def _guarded(key: str, measure: Callable[[], Measurement]) -> Measurement:
    """Run one measurement; a failure is reported in its place (traceback on stderr), not fatal."""
    _progress(key)
    try:
        return measure()
    except Exception as exc:
        traceback.print_exc()
        return Measurement(key=key, title=key, unit="", failed=f"{type(exc).__name__}: {exc}")


def run(config: Config, keys: Sequence[str] = KEYS) -> list[Measurement]:
    """Run the selected measurements, in table order; each server runs in its own process."""
    results: dict[str, Measurement] = {}
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
    if "agent_runs" in keys:
        with server_process(module="benchmarks.agent_server") as base_url:
            results["agent_runs"] = _guarded(
                "agent_runs", lambda: asyncio.run(agent_runs.measure(base_url, config))
            )
    if "codeact" in keys:
        results["codeact"] = _guarded("codeact", lambda: asyncio.run(codeact.measure(config)))
    return [results[key] for key in KEYS if key in results]


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
