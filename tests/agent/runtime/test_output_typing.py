"""What type checkers see of a run's output: ``Agent[T]``, ``AgentResult[T]``, ``AgentRun[T]``, ``Session[T]``
and ``OutputType[T]``.

``typed_runs`` is never run: ``test_the_output_types_check`` runs ``mypy --strict`` over this file, so each
``assert_type`` is checked, and each ``# type: ignore[...]`` too (``--strict`` reports an ignore that
silences nothing: the error it expects must still be there). The last test pins what makes the types true at
run time: a plain agent's output is its answer's text.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, Literal, assert_type

import attrs
import pytest

from agentflow import (
    Agent,
    AgentOptions,
    AgentResult,
    AgentRun,
    Agents,
    ModelSettings,
    OutputContext,
    OutputType,
    RejectOutput,
    Session,
    StopReason,
    run_sync,
)
from agentflow.agent.prompt import AgentModelResult
from agentflow.testing.fake import FakeModelClient, reply

ROOT = Path(__file__).resolve().parents[3]


@attrs.frozen
class City:
    name: str
    population: int


@attrs.frozen
class Summary:
    text: str


def check(city: City) -> None:
    if city.population < 0:
        raise RejectOutput("a population is never negative")


async def in_context(city: City, context: OutputContext) -> City:
    return city


def check_summary(summary: Summary) -> None:
    pass


async def typed_runs(model: FakeModelClient) -> None:
    plain = Agent(model)
    assert_type(plain, Agent[str])
    assert_type(await plain.run("hi"), AgentResult[str])
    assert_type((await plain.run("hi")).output, str | None)

    typed = Agent(model, output_type=City)
    assert_type(typed, Agent[City])
    result = await typed.run("Paris?")
    assert_type(result, AgentResult[City])
    assert_type(result.output, City | None)
    if result.output is not None:
        assert_type(result.output.population, int)
    _ = result.output.population  # type: ignore[union-attr]  # None when the run ended without an answer

    checked = Agent(model, output_type=OutputType(City, validators=[check, in_context]))
    assert_type(checked, Agent[City])
    assert_type(OutputType(City, validators=[lambda city: attrs.evolve(city, name="X")]), OutputType[City])
    assert_type(OutputType(list[City]), OutputType[list[City]])
    assert_type(Agent(model, output_type=list[int]), Agent[list[int]])
    assert_type(Agent(model, output_type=Literal["yes", "no"]), Agent[Any])
    # A union of classes: mypy types ``City | Summary`` as ``UnionType | type[City]``; not a City.
    assert_type(Agent(model, output_type=City | Summary), Agent[Any])
    assert_type(OutputType(City | Summary), OutputType[Any])
    assert_type(Agents.react(model, output_type=City | Summary), Agent[Any])
    assert_type(Agent(model, output_type=OutputType(Literal["yes", "no"])), Agent[Any])
    # A validator of another type is an error, not a silent OutputType[Any].
    OutputType(City, validators=[lambda summary: Summary(summary.text)])  # type: ignore[list-item]
    OutputType(City, validators=[check_summary])  # type: ignore[list-item]

    # A run's own output type.
    assert_type(await typed.run("Sum up.", output_type=Summary), AgentResult[Summary])
    assert_type(await typed.run("Sum up.", output_type=OutputType(Summary)), AgentResult[Summary])
    assert_type(await typed.run("Just talk.", output_type=None), AgentResult[str])
    assert_type(await plain.run("As data.", output_type=City), AgentResult[City])
    assert_type(await plain.run("Yes or no?", output_type=Literal["yes", "no"]), AgentResult[Any])
    assert_type(await plain.run("Either.", output_type=City | Summary), AgentResult[Any])

    # Streamed runs and sessions.
    async with typed.stream("Paris?") as run:
        assert_type(run, AgentRun[City])
        assert_type(run.result, AgentResult[City])
        assert_type(await run.wait(), AgentResult[City])
        assert_type(run.partial, AgentResult[City] | None)
    assert_type(typed.stream("Sum up.", output_type=Summary), AgentRun[Summary])
    assert_type(typed.stream("Just talk.", output_type=None), AgentRun[str])
    chat = typed.session()
    assert_type(chat, Session[City])
    assert_type(await chat.run("Paris?"), AgentResult[City])
    assert_type(chat.run_sync("Paris?"), AgentResult[City])

    # Blocking runs take a run's own output type too.
    assert_type(typed.run_sync("Paris?"), AgentResult[City])
    assert_type(typed.run_sync("Sum up.", output_type=Summary), AgentResult[Summary])
    assert_type(typed.run_sync("Sum up.", output_type=OutputType(Summary)), AgentResult[Summary])
    assert_type(typed.run_sync("Just talk.", output_type=None, run_id="r1"), AgentResult[str])
    assert_type(plain.run_sync("Yes or no?", output_type=Literal["yes", "no"]), AgentResult[Any])
    assert_type(chat.run_sync("Sum up.", output_type=Summary), AgentResult[Summary])
    assert_type(run_sync(typed, "Paris?"), AgentResult[City])
    assert_type(run_sync(plain, "As data.", output_type=City), AgentResult[City])
    assert_type(run_sync(typed, "Sum up.", output_type=OutputType(Summary)), AgentResult[Summary])
    assert_type(run_sync(typed, "Just talk.", output_type=None, run_id="r1"), AgentResult[str])
    assert_type(run_sync(typed, "Yes or no?", output_type=Literal["yes", "no"]), AgentResult[Any])

    # A run's own settings and options leave its output type alone, on every way of starting a run.
    cold = ModelSettings(temperature=0)
    short = AgentOptions(max_steps=3)
    assert_type(await typed.run("Paris?", settings=cold), AgentResult[City])
    assert_type(await typed.run("Paris?", options=short, settings=None), AgentResult[City])
    assert_type(
        await typed.run("Sum up.", output_type=Summary, settings=cold, options=short), AgentResult[Summary]
    )
    assert_type(await plain.run("Just talk.", output_type=None, options=short), AgentResult[str])
    assert_type(await chat.run("Paris?", settings=cold, options=short), AgentResult[City])
    assert_type(typed.stream("Paris?", settings=cold, options=short), AgentRun[City])
    assert_type(typed.stream("Sum up.", output_type=Summary, settings=cold), AgentRun[Summary])
    assert_type(typed.run_sync("Paris?", settings=cold, options=short), AgentResult[City])
    assert_type(chat.run_sync("Sum up.", output_type=Summary, options=short), AgentResult[Summary])
    assert_type(run_sync(typed, "Paris?", settings=cold, options=short), AgentResult[City])
    assert_type(run_sync(plain, "As data.", output_type=City, settings=cold), AgentResult[City])
    # Typed as what they are: a keyword that is not there, or a value of the wrong kind, is an error still.
    await plain.run("hi", temperature=0)  # type: ignore[call-overload]
    plain.stream("hi", max_steps=3)  # type: ignore[call-overload]
    plain.run_sync("hi", settings={"temperature": 0})  # type: ignore[call-overload]
    await plain.run("hi", options=cold)  # type: ignore[call-overload]
    Agent(model, temperature=0)  # type: ignore[call-overload]
    ModelSettings(max_tokens=5)  # type: ignore[call-arg]

    # The runtime shortcuts are typed as ``Agent(...)`` is.
    assert_type(Agents.react(model), Agent[str])
    assert_type(Agents.react(model, output_type=City), Agent[City])
    assert_type(Agents.react(model, output_type=Literal["yes", "no"]), Agent[Any])
    assert_type(Agents.codeact(model), Agent[str])
    assert_type(Agents.codeact(model, codeact=None, output_type=OutputType(City)), Agent[City])
    assert_type(Agents.codeact(model, output_type=list[int]), Agent[list[int]])
    assert_type(Agents.deep_research(model), Agent[str])
    assert_type(Agents.deep_research(model, planner="simple", output_type=City), Agent[City])
    assert_type(Agents.deep_research(model, output_type=Literal["yes", "no"]), Agent[Any])

    # A bare annotation still checks (its output is Any).
    def untyped(result: AgentResult, agent: Agent) -> Any:
        return result.output, agent.output_type


def test_the_output_types_check() -> None:
    pytest.importorskip("mypy")
    # In a process of its own: mypy changes the recursion limit and the garbage collector's thresholds.
    # The project's configuration and cache (warm after ``make typecheck``: then this takes about a second).
    options = ["--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(ROOT / ".mypy_cache")]
    command = [sys.executable, "-m", "mypy", *options, "--strict", "--no-error-summary", __file__]
    checked = subprocess.run(command, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


async def test_a_plain_agent_s_output_is_its_answer_s_text() -> None:
    # What makes ``Agent(model)`` an ``Agent[str]``: with no output type, the output is the answer's text.
    result = await Agent(FakeModelClient([reply("Hello.")])).run("Hi")
    assert result.output == result.output_text == "Hello."
    codeact = await Agent(
        FakeModelClient([reply('{"type": "final", "output": "42"}')]), runtime="codeact"
    ).run("?")
    assert codeact.output == codeact.output_text == "42"
    # And ``None`` as for a typed agent when the run ended without a final answer.
    refused = await Agent(FakeModelClient([AgentModelResult(refusal="No.")])).run("?")
    assert refused.stop_reason is StopReason.REFUSAL
    assert refused.output is None
