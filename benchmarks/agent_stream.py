"""Measurement (c): client CPU to consume a streamed answer of many deltas as agent events, per delta.

Against ``benchmarks.agent_server``, each contender asks a tool-less agent for a story and reads the whole
streamed answer (``stream_deltas`` text deltas, 10,000 by default) through its own event API, counting the
text deltas; a stream that lost one fails the measurement. The floor is the raw streaming loop
(``FloorClient.read_stream``: ``orjson.loads`` of every ``data:`` line). One stream per round, contenders
interleaved; the figure is CPU per delta.

Target (issue 4): agentflow at most 1.5× the floor, every ``TextDelta`` delivered to a subscriber.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager

from .agent_contenders import AGENTFLOW_SYNC, CONTENDERS, FLOOR, PeerMissing, open_runs
from .harness import Config, Contenders, Measurement, Target, compare

__all__ = ["contenders", "measure"]


def _checked(
    name: str, stream_run: Callable[[], Awaitable[int]], deltas: int
) -> Callable[[], Awaitable[None]]:
    async def consume() -> None:
        seen = await stream_run()
        # The floor counts every JSON data line (the deltas plus the role, finish and usage chunks).
        assert seen >= deltas if name == FLOOR else seen == deltas, f"{name}: {seen} of {deltas} deltas"

    return consume


@asynccontextmanager
async def contenders(
    base_url: str, config: Config, missing: list[str] | None = None
) -> AsyncIterator[Contenders]:
    """Every installed contender's streamed run, clients open; why a peer is missing goes to ``missing``."""
    async with AsyncExitStack() as stack:
        found: Contenders = []
        for name in CONTENDERS:
            if name == AGENTFLOW_SYNC:
                continue  # no tools in this run: the same as agentflow
            try:
                runs = await stack.enter_async_context(open_runs(name, base_url))
            except PeerMissing as exc:
                if missing is not None:
                    missing.append(str(exc))
                continue
            found.append((name, _checked(name, runs.stream_run, config.stream_deltas)))
        yield found


async def measure(base_url: str, config: Config) -> Measurement:
    """CPU per streamed delta of each contender, in µs."""
    deltas = config.stream_deltas
    result = Measurement(
        key="agent_stream",
        title=f"(c) Streamed answer consumed as agent events, client CPU per delta ({deltas:,} deltas)",
        unit="µs",
        targets=[Target("agentflow", 1.5, relative_to="floor")],
        sdk=None,
    )
    missing: list[str] = []
    async with contenders(base_url, config, missing) as found:
        result.figures = await compare(found, times=1, rounds=config.stream_rounds, scale=1e6 / deltas)
    result.notes += [f"skipped: {reason}" for reason in missing]
    result.notes.append(
        f"one stream per round, median of {config.stream_rounds} rounds; every contender counts every text "
        "delta (agentflow: `TextDelta` events of `agent.stream()`, backpressure subscription)"
    )
    return result
