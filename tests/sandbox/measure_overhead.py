"""Measures the sandbox's own costs (not a test): executor start, step overhead, tool round trips.

Run: ``.venv/bin/python tests/sandbox/measure_overhead.py [round_trips]``. Host CPU is
``time.process_time()`` of this process only (the sandbox's CPU is not in it); each figure is the median of
several rounds.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

import anyio

from agentflow.result import ToolResult
from agentflow.sandbox import ProcessSandbox


async def echo(name: str, args: dict[str, Any]) -> ToolResult:
    return ToolResult("c", name, "", value=args)


async def measure(round_trips: int, rounds: int = 7) -> None:
    cold_wall = time.perf_counter()
    async with ProcessSandbox() as box:
        isolation = await box.start()
    cold = time.perf_counter() - cold_wall
    print(f"isolation: {isolation}")
    print(f"first start (probes this machine's isolation once): {cold * 1000:.1f} ms")

    starts = []
    for _ in range(rounds):
        box = ProcessSandbox()
        began = time.perf_counter()
        await box.start()
        starts.append(time.perf_counter() - began)
        await box.aclose()
    print(f"start: {statistics.median(starts) * 1000:.1f} ms wall (median of {rounds})")

    async with ProcessSandbox() as box:
        await box.execute("1", echo, ["echo"])  # warm up the interpreter's first-step imports
        empty_wall: list[float] = []
        empty_cpu: list[float] = []
        loop_wall: list[float] = []
        loop_cpu: list[float] = []
        par_wall: list[float] = []
        par_cpu: list[float] = []
        for _ in range(rounds):
            for code, wall, cpu in (
                ("1", empty_wall, empty_cpu),
                (f"for i in range({round_trips}):\n    echo(i=i)", loop_wall, loop_cpu),
                (f"len(map_tool('echo', [{{'i': i}} for i in range({round_trips})]))", par_wall, par_cpu),
            ):
                cpu0, wall0 = time.process_time(), time.perf_counter()
                result = await box.execute(code, echo, ["echo"])
                cpu.append(time.process_time() - cpu0)
                wall.append(time.perf_counter() - wall0)
                assert result.ok, result.error
    base_wall, base_cpu = statistics.median(empty_wall), statistics.median(empty_cpu)
    print(f"empty step: {base_wall * 1e3:.2f} ms wall, {base_cpu * 1e3:.2f} ms host CPU")
    for label, wall, cpu in (("sequential", loop_wall, loop_cpu), ("map_tool", par_wall, par_cpu)):
        per_cpu = (statistics.median(cpu) - base_cpu) / round_trips
        per_wall = (statistics.median(wall) - base_wall) / round_trips
        print(f"tool round trip, {label}: {per_cpu * 1e6:.0f} us host CPU, {per_wall * 1e6:.0f} us wall")


if __name__ == "__main__":
    anyio.run(measure, int(sys.argv[1]) if len(sys.argv) > 1 else 500)
