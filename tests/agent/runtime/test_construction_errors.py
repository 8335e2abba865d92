"""Bad agent configuration fails when it is built, with a typed error naming the field — never mid-run."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.memory import WindowedMemory
from agentflow.agent.options import AgentOptions, ModelSettings
from agentflow.model.tools import ToolChoice
from agentflow.testing.fake import FakeModelClient


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda: AgentOptions(timeout=math.nan), ValueError, "timeout"),
        (lambda: AgentOptions(tool_timeout=math.nan), ValueError, "tool_timeout"),
        (lambda: AgentOptions(stream="no"), TypeError, "stream"),
        (lambda: AgentOptions(final_answer_prompt=None), TypeError, "final_answer_prompt"),
        (lambda: ModelSettings(tool_choice=5), TypeError, "tool_choice"),
        (lambda: ModelSettings(tool_choice="sometimes"), ValueError, "tool_choice"),
        (lambda: ModelSettings(reasoning="low"), TypeError, "reasoning"),
        (lambda: ModelSettings(reasoning={"effort": 1}), TypeError, "reasoning effort"),
        (lambda: ModelSettings(extra_body=[1]), TypeError, "extra_body"),
        (lambda: ModelSettings(temperature=True), TypeError, "temperature"),
        (lambda: ModelSettings(temperature="0.2"), TypeError, "temperature"),
        (lambda: ModelSettings(max_output_tokens=1.5), TypeError, "max_output_tokens"),
        (lambda: ModelSettings(max_output_tokens=0), ValueError, "max_output_tokens"),
        (lambda: ModelSettings(temperature=math.nan), ValueError, "temperature"),
        (lambda: ModelSettings(temperature=-0.5), ValueError, "temperature"),
        (lambda: ModelSettings(top_p=math.inf), ValueError, "top_p"),
        (lambda: AgentOptions(max_tool_concurrency=0), ValueError, "max_tool_concurrency"),
        (lambda: AgentOptions(reset_tool_choice=None), TypeError, "reset_tool_choice"),
        (lambda: Agent(FakeModelClient([]), memory=WindowedMemory), TypeError, "max_items"),
        (lambda: Agent(FakeModelClient([]), memory=lambda size: None), TypeError, "no arguments"),
        (lambda: ModelSettings(parallel_tool_calls="yes"), TypeError, "parallel_tool_calls"),
        (lambda: Agent(FakeModelClient([]), system_prompt=123), TypeError, "system_prompt"),
        (lambda: Agent(FakeModelClient([]), instructions=["a"]), TypeError, "instructions"),
        (lambda: Agent(FakeModelClient([]), name=5), TypeError, "name"),
    ],
)
def test_bad_configuration_is_refused_at_construction(
    build: Callable[[], Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        build()


def test_every_accepted_form_of_the_settings_still_builds() -> None:
    settings = ModelSettings(
        model="m",
        temperature=0,
        top_p=0.5,
        max_output_tokens=100,
        tool_choice="required",
        parallel_tool_calls=False,
        reasoning={"effort": "low", "summary": "auto"},
        store=True,
        user="u",
        extra_body=None,
    )
    assert settings.extra_body == {}
    assert ModelSettings(tool_choice=ToolChoice.function("f")).tool_choice == ToolChoice.function("f")
    assert ModelSettings(tool_choice={"type": "file_search"}).tool_choice == {"type": "file_search"}
    assert AgentOptions(timeout=1, tool_timeout=math.inf, stream=True).stream is True


async def test_event_types_given_as_a_string_are_refused_whole() -> None:
    agent = Agent(FakeModelClient([]))
    with pytest.raises(TypeError, match="not a string: 'TextDelta'"):
        async with agent.stream("x", types="TextDelta"):  # type: ignore[arg-type]
            pass
