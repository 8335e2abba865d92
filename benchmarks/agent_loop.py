"""Measurement (a): client CPU per tool-loop run — agentflow against the floor and the peer frameworks.

Against ``benchmarks.agent_server``, each run is one model call answered with three parallel tool calls to
``add``, the three tools run, and a second call with their results answered with the final text (see
``benchmarks.agent_contenders`` for what each contender does). Runs are sequential, ``agent_runs`` per round
(100 by default), contenders sampled in interleaved rounds; the figure is CPU per run.

Target (issue 4): agentflow at most 2× the floor.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager

from .agent_contenders import AGENTFLOW_SYNC, CONTENDERS, PeerMissing, open_runs
from .harness import Config, Contenders, Measurement, Target, compare

__all__ = ["contenders", "measure"]


@asynccontextmanager
async def contenders(
    base_url: str, config: Config, missing: list[str] | None = None
) -> AsyncIterator[Contenders]:
    """Every installed contender's tool run, clients open; the reasons for missing peers go to ``missing``."""
    async with AsyncExitStack() as stack:
        found: Contenders = []
        for name in CONTENDERS:
            try:
                runs = await stack.enter_async_context(open_runs(name, base_url))
            except PeerMissing as exc:
                if missing is not None:
                    missing.append(str(exc))
                continue
            found.append((name, runs.tool_run))
        yield found


async def measure(base_url: str, config: Config) -> Measurement:
    """CPU per run of each contender, in ms."""
    runs = config.agent_runs
    result = Measurement(
        key="agent_loop",
        title="(a) Tool loop, client CPU per run (2 model calls, 3 parallel tool calls)",
        unit="ms",
        targets=[Target("agentflow", 2.0, relative_to="floor")],
        sdk=None,
    )
    missing: list[str] = []
    async with contenders(base_url, config, missing) as found:
        warmup = max(3, runs // 10)
        result.figures = await compare(
            found, times=runs, rounds=config.agent_rounds, scale=1e3, warmup=warmup
        )
    sync = result.figure(AGENTFLOW_SYNC)
    if sync is not None:
        sync.note = "the tool as a plain `def`: agentflow runs it in a worker thread"
    result.notes += [f"skipped: {reason}" for reason in missing]
    result.notes.append(
        f"{runs} sequential runs per round, median of {config.agent_rounds} rounds; tools are `async def` "
        "for every contender"
    )
    return result
