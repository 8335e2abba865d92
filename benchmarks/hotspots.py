"""``python -m benchmarks.hotspots KEY``: where agentflow spends its client CPU in one measurement.

Runs the agentflow contender of ``KEY`` (chat_call, chat_stream, responses_stream, agent_loop, agent_stream)
against its server, as ``python -m benchmarks`` does, under ``cProfile`` with a CPU clock
(``time.process_time``), and prints the functions with the most CPU of their own, agentflow's first.
cProfile slows everything down several times, so read the shares, not the absolute figures; the benchmark
itself is the measure.

    python -m benchmarks.hotspots chat_call [--top 30] [--sort tottime|cumulative] [--all]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import sys
import time
from collections.abc import Sequence

from . import agent_loop, agent_stream, chat_call, chat_stream, responses_stream
from .harness import Config, server_process

__all__ = ["main"]

MODULES = {
    "chat_call": chat_call,
    "chat_stream": chat_stream,
    "responses_stream": responses_stream,
    "agent_loop": agent_loop,
    "agent_stream": agent_stream,
}
# Operations per profile: about a second of work each, before cProfile's slow-down.
TIMES = {"chat_call": 2000, "chat_stream": 10, "responses_stream": 10, "agent_loop": 1000, "agent_stream": 10}


async def _profile(key: str, base_url: str, config: Config, contender: str) -> cProfile.Profile:
    profiler = cProfile.Profile(time.process_time)
    async with MODULES[key].contenders(base_url, config) as found:
        operation = dict(found)[contender]
        for _ in range(3):
            await operation()
        profiler.enable()
        for _ in range(TIMES[key]):
            await operation()
        profiler.disable()
    return profiler


def main(argv: Sequence[str] | None = None) -> int:
    """Profile one contender and print its hot spots."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.hotspots", description=__doc__.splitlines()[0]
    )
    parser.add_argument("key", choices=sorted(MODULES))
    parser.add_argument("--contender", default="agentflow", help="which contender (default agentflow)")
    parser.add_argument("--top", type=int, default=30, help="rows to print (default 30)")
    parser.add_argument("--sort", default="tottime", choices=["tottime", "cumulative"])
    parser.add_argument("--all", action="store_true", help="all functions, not only agentflow's")
    args = parser.parse_args(argv)
    config = Config()
    if args.key.startswith("agent_"):
        server = server_process("--bench-deltas", str(config.stream_deltas), module="benchmarks.agent_server")
    else:
        server = server_process("--bench-deltas", str(config.stream_deltas))
    with server as base_url:
        profiler = asyncio.run(_profile(args.key, base_url, config, args.contender))
    stats = pstats.Stats(profiler, stream=sys.stdout).sort_stats(args.sort)
    if args.all:
        stats.print_stats(args.top)
    else:
        stats.print_stats("agentflow", args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
