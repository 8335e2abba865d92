"""Helpers of the CLI and demo tests: a clean environment and the command run as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import orjson

ROOT = Path(__file__).resolve().parents[2]
# Variables the CLI and the demo read: removed, so that no test ever reaches a real endpoint.
_MODEL_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENTFLOW_MODEL", "NO_COLOR")


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without the model variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in _MODEL_VARIABLES}
    env.update(extra)
    return env


async def run_module(
    module: str, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """``python -m module args…`` to completion (never raises on a non-zero exit code)."""
    return await anyio.run_process(
        [sys.executable, "-m", module, *args],
        check=False,
        env=dict(env if env is not None else clean_env()),
        cwd=ROOT,
    )


async def agentflow(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """``python -m agentflow args…`` to completion."""
    return await run_module("agentflow", *args, env=env)


def json_events(stdout: bytes) -> list[dict[str, Any]]:
    """Every line of ``--json`` output, parsed (each must be one JSON object)."""
    lines = stdout.decode().splitlines()
    assert lines, "no output"
    events = [orjson.loads(line) for line in lines]
    assert all(isinstance(e, dict) and "type" in e for e in events)
    return events


def types(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ``type`` of each event."""
    return [str(e["type"]) for e in events]


def stderr_lines(process: subprocess.CompletedProcess[bytes]) -> list[str]:
    """The process's stderr, as lines."""
    return process.stderr.decode().splitlines()
