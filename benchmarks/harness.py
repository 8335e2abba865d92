"""The benchmark harness: the server subprocess, CPU sampling, and the values every measurement returns.

Measurements run their contenders (the raw floor, agentflow, the ``openai`` SDK) side by side in one event
loop against a server that runs in its *own* process, so ``time.process_time()`` in this process is the
client's CPU alone. Contenders are sampled in interleaved rounds (round 1: A, B, C; round 2: A, B, C…) after
a warm-up, so slow drift of the machine hits all of them alike; the figure reported is the median round.

This module measures nothing by itself and knows nothing about agentflow.
"""

from __future__ import annotations

import gc
import select
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Config",
    "Contenders",
    "Figure",
    "Measurement",
    "Operation",
    "Target",
    "compare",
    "cpu_of",
    "server_process",
]

Operation = Callable[[], Awaitable[object]]
"""One unit of work of a contender: a call, a whole stream, a batch of runs."""
Contenders = list[tuple[str, Operation]]
"""The contenders of a measurement, by name, in table order."""

GUARD_SECONDS = 30.0  # a server that does not print its URL within this is broken, not slow


@dataclass(frozen=True)
class Config:
    """Sizes of one benchmark run; ``quick_config()`` is the smoke test (figures meaningless)."""

    calls: int = 200  # non-streaming calls per round and contender
    rounds: int = 7  # interleaved rounds; the median round is reported
    stream_deltas: int = 10_000  # deltas of the long streams
    stream_rounds: int = 5
    import_runs: int = 15  # fresh interpreters per import variant
    code_round_trips: int = 200  # tool calls from one code step
    executor_starts: int = 5
    agent_runs: int = 100  # sequential tool-loop runs per round (agent_loop)
    agent_rounds: int = 7
    agent_many: int = 500  # tool-loop runs at once in one event loop (agent_many)
    agent_many_rounds: int = 3  # fresh subprocesses per contender; the median is reported
    quick: bool = False

    @classmethod
    def quick_config(cls) -> Config:
        """Tiny sizes: checks that every measurement runs end to end."""
        return cls(
            calls=3,
            rounds=1,
            stream_deltas=20,
            stream_rounds=1,
            import_runs=1,
            code_round_trips=3,
            executor_starts=1,
            agent_runs=3,
            agent_rounds=1,
            agent_many=5,
            agent_many_rounds=1,
            quick=True,
        )


@dataclass(frozen=True)
class Target:
    """``figure`` must be at most ``limit`` (times ``relative_to``'s figure when set, else absolute).

    ``relative_to`` may name several figures: the target is then relative to the best (smallest) of those
    measured, e.g. "half of the best peer's".
    """

    figure: str
    limit: float
    relative_to: str | tuple[str, ...] | None = None
    strict: bool = False  # "<" rather than "≤"

    def describe(self, unit: str) -> str:
        """The target as text, e.g. ``"≤ 1.5× floor"``, ``"≤ 0.5× best of a, b"`` or ``"< 100 ms"``."""
        sign = "<" if self.strict else "≤"
        if self.relative_to is None:
            return f"{sign} {self.limit:g} {unit}"
        if isinstance(self.relative_to, tuple):
            return f"{sign} {self.limit:g}× best of {', '.join(self.relative_to)}"
        return f"{sign} {self.limit:g}× {self.relative_to}"


@dataclass
class Figure:
    """One contender's result: the median of its samples, in the measurement's unit."""

    name: str
    samples: list[float]
    note: str = ""
    ratios: bool = True  # False for figures that are not comparable to the floor (e.g. differences)

    @property
    def value(self) -> float:
        """The median sample."""
        return statistics.median(self.samples)


@dataclass
class Measurement:
    """One measurement: its contenders' figures, its targets, notes, or why it was skipped."""

    key: str
    title: str
    unit: str
    figures: list[Figure] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    floor: str | None = "floor"  # the figure ratios are taken to
    sdk: str | None = "openai SDK"
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None  # why it was not measured (e.g. the sandbox is not available here)
    failed: str | None = None  # the error that stopped it

    def figure(self, name: str) -> Figure | None:
        """The figure called ``name``, if measured."""
        return next((f for f in self.figures if f.name == name), None)

    def ratio(self, name: str, to: str | None) -> float | None:
        """``name``'s figure divided by ``to``'s, when both exist."""
        a, b = self.figure(name), self.figure(to) if to else None
        if a is None or b is None or b.value == 0 or not a.ratios:
            return None
        return a.value / b.value

    def best(self, names: tuple[str, ...]) -> str | None:
        """The name of the smallest of the figures ``names`` that were measured."""
        measured = [f for f in self.figures if f.name in names]
        return min(measured, key=lambda f: f.value).name if measured else None

    def met(self, target: Target) -> bool | None:
        """Whether ``target`` holds (``None`` when its figures are missing)."""
        fig = self.figure(target.figure)
        if fig is None or self.skipped or self.failed:
            return None
        to = target.relative_to
        if isinstance(to, tuple):
            to = self.best(to)
            if to is None:
                return None
        value = fig.value if to is None else self.ratio(target.figure, to)
        if value is None:
            return None
        return value < target.limit if target.strict else value <= target.limit

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of everything measured."""
        return {
            "key": self.key,
            "title": self.title,
            "unit": self.unit,
            "skipped": self.skipped,
            "failed": self.failed,
            "figures": {
                f.name: {
                    "median": f.value,
                    "samples": f.samples,
                    "x_floor": self.ratio(f.name, self.floor),
                    "x_sdk": self.ratio(f.name, self.sdk),
                    "note": f.note,
                }
                for f in self.figures
            },
            "targets": [
                {"figure": t.figure, "target": t.describe(self.unit), "met": self.met(t)}
                for t in self.targets
            ],
            "notes": self.notes,
        }


# --- the server process ---------------------------------------------------------------------------


@contextmanager
def server_process(*args: str, module: str = "agentflow.testing.server") -> Iterator[str]:
    """Run ``python -m <module> --port 0 <args>`` and yield the base URL it prints; SIGTERM it at the end."""
    command = [sys.executable, "-m", module, "--port", "0", *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = _first_line(process, GUARD_SECONDS)
        yield url
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(GUARD_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    line = process.stdout.readline().strip() if ready else ""
    if not line.startswith("http"):
        raise RuntimeError(f"the benchmark server did not start (exit status {process.poll()}): {line!r}")
    return line


# --- sampling ------------------------------------------------------------------------------------


async def cpu_of(operation: Operation, times: int) -> float:
    """Client CPU seconds per call of ``operation`` (awaited ``times`` times in a row)."""
    gc.collect()
    start = time.process_time()
    for _ in range(times):
        await operation()
    return (time.process_time() - start) / times


async def compare(
    contenders: Sequence[tuple[str, Operation]],
    *,
    times: int,
    rounds: int,
    scale: float = 1.0,
    warmup: int = 1,
) -> list[Figure]:
    """Sample each contender's CPU per operation in interleaved rounds, after ``warmup`` untimed calls.

    Each sample is CPU seconds per operation times ``scale`` (e.g. ``1e3 / 1`` for ms, or
    ``1e6 / deltas`` for µs per delta).
    """
    for _, operation in contenders:
        for _ in range(warmup):
            await operation()
    samples: dict[str, list[float]] = {name: [] for name, _ in contenders}
    for _ in range(rounds):
        for name, operation in contenders:
            samples[name].append(await cpu_of(operation, times) * scale)
    return [Figure(name, samples[name]) for name, _ in contenders]
