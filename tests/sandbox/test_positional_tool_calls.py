"""Code calls a tool with positional arguments, in the order of the tool's parameters, as the guide shows
it (``get_weather(city, days=1)``); keywords and the one-dict form work as before."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agentflow.agent.agent import Agent
from agentflow.model.tools import ToolSpec
from agentflow.result import ToolResult
from agentflow.runtimes.codeact import CodeActOptions, CodeActRuntime
from agentflow.sandbox import CodeErrorType, ProcessSandbox
from agentflow.sandbox.tool_parameters import ParameterizedInvoker, parameter_order, tool_parameters
from agentflow.testing import FakeModelClient, reply
from agentflow.tools import tool

from .conftest import HostTools, echo


@pytest.fixture
def weather() -> tuple[HostTools, ParameterizedInvoker]:
    tools = HostTools(get_weather=echo, store=echo, ping=echo)
    order = {"get_weather": ("city", "days"), "store": ("record",), "ping": ()}
    return tools, ParameterizedInvoker(tools, order)


async def test_positional_arguments_take_the_parameters_in_order(
    sandbox: ProcessSandbox, weather: tuple[HostTools, ParameterizedInvoker]
) -> None:
    tools, invoker = weather
    code = "[get_weather('Paris'), get_weather('Rome', 3), get_weather('Oslo', days=2)]"
    result = await sandbox.execute(code, invoker, tools.names)
    assert result.ok, result.error
    assert result.value == [{"city": "Paris"}, {"city": "Rome", "days": 3}, {"city": "Oslo", "days": 2}]


async def test_keywords_and_one_dict_still_work(
    sandbox: ProcessSandbox, weather: tuple[HostTools, ParameterizedInvoker]
) -> None:
    tools, invoker = weather
    code = "[get_weather(city='Paris'), get_weather({'city': 'Rome'}), get_weather({'city': 'X'}, days=1)]"
    result = await sandbox.execute(code, invoker, tools.names)
    assert result.value == [{"city": "Paris"}, {"city": "Rome"}, {"city": "X", "days": 1}]


async def test_a_dict_that_is_not_the_arguments_is_the_first_parameter(
    sandbox: ProcessSandbox, weather: tuple[HostTools, ParameterizedInvoker]
) -> None:
    tools, invoker = weather
    result = await sandbox.execute("store({'name': 'a', 'size': 2})", invoker, tools.names)
    assert result.value == {"record": {"name": "a", "size": 2}}


async def test_too_many_positional_arguments_name_the_tool_s_parameters(
    sandbox: ProcessSandbox, weather: tuple[HostTools, ParameterizedInvoker]
) -> None:
    tools, invoker = weather
    result = await sandbox.execute("get_weather('Paris', 3, 'extra')", invoker, tools.names)
    assert result.error_type is CodeErrorType.EXCEPTION
    assert result.error is not None
    assert (
        "TypeError: tool 'get_weather' takes at most 2 positional arguments (city, days) but 3 were given"
        in result.error
    )
    none = await sandbox.execute("ping(1)", invoker, tools.names)
    assert none.error is not None
    assert "tool 'ping' takes no positional arguments but 1 was given" in none.error
    assert tools.calls == []


async def test_a_positional_argument_given_again_by_keyword_is_a_type_error(
    sandbox: ProcessSandbox, weather: tuple[HostTools, ParameterizedInvoker]
) -> None:
    tools, invoker = weather
    result = await sandbox.execute("get_weather('Paris', city='Rome')", invoker, tools.names)
    assert result.error is not None
    assert "TypeError: get_weather() got multiple values for argument 'city'" in result.error
    assert tools.calls == []


async def test_without_a_parameter_order_positional_arguments_are_refused_as_before(
    sandbox: ProcessSandbox, weather: tuple[HostTools, ParameterizedInvoker]
) -> None:
    tools, _ = weather
    result = await sandbox.execute("get_weather('Paris')", tools, tools.names)
    assert result.error is not None
    assert "tool 'get_weather' takes keyword arguments or one dict of arguments, not str" in result.error


async def test_the_order_follows_the_step_s_tools(
    sandbox: ProcessSandbox, weather: tuple[HostTools, ParameterizedInvoker]
) -> None:
    tools, invoker = weather
    assert (await sandbox.execute("get_weather('Paris', 2)", invoker, tools.names)).ok
    swapped = ParameterizedInvoker(tools, {"get_weather": ("days", "city")})
    result = await sandbox.execute("get_weather(2, 'Paris')", swapped, tools.names)
    assert result.value == {"days": 2, "city": "Paris"}


def test_the_parameter_order_is_the_schema_s_and_odd_invokers_have_none() -> None:
    spec = ToolSpec("f", "", {"type": "object", "properties": {"city": {}, "days": {}}, "required": ["city"]})
    assert parameter_order(spec) == ("city", "days")
    assert parameter_order(ToolSpec("g", "", {"type": "object"})) == ()

    async def plain(name: str, args: dict[str, Any]) -> ToolResult:
        return ToolResult("c", name, "")

    assert tool_parameters(plain) == {}
    assert tool_parameters(ParameterizedInvoker.for_specs(plain, [spec])) == {"f": ("city", "days")}


@tool
async def get_weather(city: str, days: int = 1) -> dict[str, Any]:
    """Weather for a city."""
    return {"city": city, "days": days}


async def test_codeact_code_may_call_a_tool_positionally() -> None:
    answers = [
        reply(
            orjson.dumps({"type": "code", "language": "python", "code": "get_weather('Paris', 3)"}).decode()
        )
    ]
    agent = Agent(FakeModelClient(answers), runtime=CodeActRuntime(CodeActOptions()), tools=[get_weather])
    result = await agent.run("weather?")
    await agent.aclose()
    assert orjson.loads(result.output_text) == {"city": "Paris", "days": 3}
