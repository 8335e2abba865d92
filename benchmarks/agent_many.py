"""Measurement (b): many tool-loop runs at once in one event loop — wall time and peak RSS.

Each contender runs in its **own fresh subprocess** (``python -m benchmarks.agent_many NAME URL RUNS``), so
its peak resident set size (``VmHWM`` on Linux, else ``ru_maxrss``) is its own: the interpreter, its
framework's imports and the ``agent_many`` runs (500 by default) in flight at once. The child opens its
client, makes one warm-up run, then starts every run at once in one task group and waits for all; it prints
the batch's wall time, its client CPU and the process's peak RSS as one JSON line. Contenders alternate
round by round (fresh processes each time); the figures are the median round.

Targets (issue 4): agentflow's wall time at most 1.5× the floor's, its peak RSS at most half of the best
peer's. The server is one process for everyone: when it is the slower side, wall times converge.
"""

from __future__ import annotations

import asyncio
import gc
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from .agent_contenders import AGENTFLOW, FLOOR, PEERS, PeerMissing, open_runs
from .harness import Config, Figure, Measurement, Target

__all__ = ["CONTENDERS", "batch", "main", "measure"]

CONTENDERS = (FLOOR, AGENTFLOW, *PEERS)
GUARD_SECONDS = 600.0  # a child that has not finished by then is hung, not slow
_ROOT = Path(__file__).resolve().parents[1]


# --- the child ------------------------------------------------------------------------------------------


def _peak_rss_bytes() -> int:
    """This process's peak RSS. On Linux ``VmHWM``: ``ru_maxrss`` survives ``exec``, so a child started by
    a big parent would report the parent's peak (the benchmark process has every framework loaded)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


async def batch(name: str, base_url: str, runs: int) -> dict[str, Any]:
    """Run ``runs`` tool loops of contender ``name`` at once (after one warm-up run); what it cost."""
    try:
        opened = open_runs(name, base_url)
        async with opened as contender:
            await contender.tool_run()
            gc.collect()
            wall, cpu = time.perf_counter(), time.process_time()
            async with asyncio.TaskGroup() as group:
                for _ in range(runs):
                    group.create_task(contender.tool_run())
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    except PeerMissing as exc:
        return {"missing": str(exc)}
    return {"wall": wall, "cpu": cpu, "peak_rss": _peak_rss_bytes(), "runs": runs}


def main(argv: Sequence[str] | None = None) -> int:
    """The child: ``python -m benchmarks.agent_many NAME BASE_URL RUNS`` prints one JSON line."""
    name, base_url, runs = argv if argv is not None else sys.argv[1:]
    print(orjson.dumps(asyncio.run(batch(name, base_url, int(runs)))).decode(), flush=True)
    return 0


# --- the parent -----------------------------------------------------------------------------------------


def _child(name: str, base_url: str, runs: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.agent_many", name, base_url, str(runs)],
        cwd=_ROOT,
        capture_output=True,
        text=True,
        timeout=GUARD_SECONDS,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {name} subprocess failed (exit status {done.returncode}):\n{done.stderr}")
    answer: dict[str, Any] = orjson.loads(done.stdout.strip().splitlines()[-1])
    return answer


def measure(base_url: str, config: Config) -> list[Measurement]:
    """Wall time per batch (ms) and peak RSS (MB) of each contender: two measurements."""
    runs = config.agent_many
    wall = Measurement(
        key="agent_many",
        title=f"(b) {runs} tool-loop runs at once in one event loop, wall time (fresh process each)",
        unit="ms",
        targets=[Target(AGENTFLOW, 1.5, relative_to=FLOOR)],
        sdk=None,
    )
    rss = Measurement(
        key="agent_many_rss",
        title=f"(b) {runs} tool-loop runs at once in one event loop, peak RSS of the process",
        unit="MB",
        targets=[Target(AGENTFLOW, 0.5, relative_to=PEERS)],
        sdk=None,
    )
    samples: dict[str, list[dict[str, Any]]] = {name: [] for name in CONTENDERS}
    missing: dict[str, str] = {}
    for _ in range(config.agent_many_rounds):
        for name in CONTENDERS:
            if name in missing:
                continue
            answer = _child(name, base_url, runs)
            if "missing" in answer:
                missing[name] = answer["missing"]
            else:
                samples[name].append(answer)
    for name, taken in samples.items():
        if not taken:
            continue
        cpu_per_run = sorted(s["cpu"] for s in taken)[len(taken) // 2] / runs * 1e3
        wall.figures.append(
            Figure(name, [s["wall"] * 1e3 for s in taken], note=f"client CPU {cpu_per_run:.3f} ms per run")
        )
        rss.figures.append(Figure(name, [s["peak_rss"] / 2**20 for s in taken]))
    for measurement in (wall, rss):
        measurement.notes += [f"skipped: {reason}" for reason in missing.values()]
    wall.notes.append(
        f"each contender in its own fresh subprocess, median of {config.agent_many_rounds} rounds; "
        "one warm-up run first, then all runs started at once (`asyncio.TaskGroup`)"
    )
    rss.notes.append(
        "peak RSS (VmHWM) of the contender's process: interpreter, imports and the runs in flight"
    )
    return [wall, rss]


if __name__ == "__main__":
    sys.exit(main())
