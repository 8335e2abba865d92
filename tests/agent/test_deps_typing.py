"""What type checkers see of a run's ``deps``: ``ToolContext[Deps]``, ``OutputContext[Deps]`` and
``PromptContext[Deps]`` type them; the bare names mean ``[Any]``; prompt functions, sync or async, are what
``Agent(system_prompt=..., instructions=...)`` takes.

``typed_uses`` is never run: ``test_the_deps_types_check`` runs ``mypy --strict`` over this file and the
docs' example (``docs/examples/dependencies.py``), so each ``assert_type`` is checked, and each ``# type:
ignore[...]`` too (``--strict`` reports an ignore that silences nothing).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, assert_type

import attrs
import pytest

from agentflow import Agent, AgentResult, OutputContext, OutputType, PromptContext, ToolContext, tool
from agentflow.testing.fake import FakeModelClient

ROOT = Path(__file__).resolve().parents[2]


@attrs.frozen
class Deps:
    user: str


@tool
async def typed_tool(ctx: ToolContext[Deps]) -> str:
    """Typed deps."""
    assert_type(ctx.deps, Deps)
    return ctx.deps.user


@tool
def bare_tool(ctx: ToolContext) -> str:
    """Untyped deps."""
    assert_type(ctx.deps, Any)
    return str(ctx.deps)


def misuse(ctx: ToolContext[Deps]) -> str:
    return str(ctx.deps.name)  # type: ignore[attr-defined]


def sync_prompt(run: PromptContext[Deps]) -> str:
    assert_type(run.deps, Deps)
    return f"You help {run.deps.user} (step {run.step})."


async def async_prompt(run: PromptContext[Deps]) -> str:
    return run.deps.user


def check(value: str, context: OutputContext[Deps]) -> str:
    assert_type(context.deps, Deps)
    return value


async def typed_uses() -> None:
    model = FakeModelClient([])
    agent = Agent(model, tools=[typed_tool, bare_tool], system_prompt=sync_prompt, instructions=async_prompt)
    assert_type(agent, Agent[str])
    assert_type(await agent.run("hi", deps=Deps("ada")), AgentResult[str])
    Agent(model, instructions=lambda run: f"step {run.step}")
    Agent(model, output_type=OutputType(str, validators=[check]))
    agent.as_tool(description="Helps.", deps=lambda deps: Deps(deps.user.upper()))
    Agent(model, instructions=3)  # type: ignore[call-overload]


def test_the_deps_types_check() -> None:
    pytest.importorskip("mypy")
    # In a process of its own: mypy changes the recursion limit and the garbage collector's thresholds.
    options = ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(ROOT / ".mypy_cache")]
    example = str(ROOT / "docs" / "examples" / "dependencies.py")
    command = [sys.executable, "-m", "mypy", *options, "--strict", "--no-error-summary", __file__, example]
    checked = subprocess.run(command, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
