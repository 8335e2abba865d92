"""The results of a benchmark run as a text table (for the terminal and docs) and as JSON.

Pure formatting: it measures nothing and imports nothing from agentflow.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Sequence
from importlib import metadata
from typing import Any

from .harness import Measurement

__all__ = ["environment", "render", "summary", "to_json"]

_PACKAGES = ("aiohttp", "anyio", "attrs", "orjson", "openai")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment() -> dict[str, Any]:
    """The machine and software the figures were measured on."""
    versions: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "cores": os.cpu_count(),
        "cpu": _cpu_model(),
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "packages": versions,
        "command": " ".join(["python -m benchmarks", *sys.argv[1:]]),
    }


def _number(value: float) -> str:
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _ratio(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}×"


def render(measurements: Sequence[Measurement], env: dict[str, Any]) -> str:
    """The results as a plain-text table, one block per measurement, with its targets and notes."""
    packages = ", ".join(f"{k} {v}" for k, v in env["packages"].items() if v)
    lines = [
        f"machine: {env['cores']} cores, {env['cpu']}, {env['system']}, Python {env['python']}",
        f"packages: {packages}",
        f"command: {env['command']}",
        "",
    ]
    header = f"  {'':<34}{'median':>12}{'× floor':>10}{'× SDK':>9}   target"
    for m in measurements:
        lines.append(m.title)
        if m.failed or m.skipped:
            lines += [f"  FAILED: {m.failed}" if m.failed else f"  skipped: {m.skipped}", ""]
            continue
        lines.append(header)
        for fig in m.figures:
            status = ""
            for target in m.targets:
                if target.figure == fig.name:
                    met = m.met(target)
                    verdict = "n/a" if met is None else "met" if met else "MISSED"
                    status = f"{target.describe(m.unit)}  {verdict}"
            value = f"{_number(fig.value)} {m.unit}"
            floor = _ratio(m.ratio(fig.name, m.floor)) if m.floor else ""
            sdk = _ratio(m.ratio(fig.name, m.sdk)) if m.sdk else ""
            row = f"  {fig.name:<34}{value:>12}{floor:>10}{sdk:>9}   {status}"
            lines.append(row.rstrip())
            if fig.note:
                lines.append(f"  {'':<34}({fig.note})")
        lines += [f"  · {note}" for note in m.notes]
        lines.append("")
    lines.append(summary(measurements))
    return "\n".join(lines)


def summary(measurements: Sequence[Measurement]) -> str:
    """One line: how many targets were met, and which were missed."""
    met, missed = 0, []
    failed = [m.key for m in measurements if m.failed]
    for m in measurements:
        for target in m.targets:
            verdict = m.met(target)
            if verdict is True:
                met += 1
            elif verdict is False:
                missed.append(f"{m.key}: {target.figure} {target.describe(m.unit)}")
    text = f"targets: {met} met, {len(missed)} missed"
    text += " — " + "; ".join(missed) if missed else ""
    return text + (f"; FAILED measurements: {', '.join(failed)}" if failed else "")


def to_json(measurements: Sequence[Measurement], env: dict[str, Any], quick: bool) -> dict[str, Any]:
    """Everything measured, JSON-ready."""
    return {
        "environment": env,
        "quick": quick,
        "measurements": [m.to_json() for m in measurements],
        "summary": summary(measurements),
    }
