"""A tool whose first parameter takes an object gets a lone dict as that parameter's value: ``save({})`` saves
an empty record, and a record whose keys happen to be parameter names is still the record. A tool whose first
parameter is not an object keeps the one-dict form (``get_weather({"city": "Rome"})``)."""

from __future__ import annotations

from typing import Any

import attrs
import orjson

from agentflow.agent.agent import Agent
from agentflow.runtimes.codeact import CodeActOptions, CodeActRuntime
from agentflow.sandbox import ProcessSandbox
from agentflow.sandbox.tool_parameters import (
    ParameterizedInvoker,
    ParameterNames,
    first_takes_object,
    tool_parameters,
)
from agentflow.testing import FakeModelClient, reply
from agentflow.tools import tool

from .conftest import HostTools, echo


def invoker(tools: HostTools) -> ParameterizedInvoker:
    return ParameterizedInvoker(
        tools,
        {
            "save": ParameterNames(("record", "overwrite"), first_takes_object=True),
            "get_weather": ("city", "days"),
        },
    )


async def test_a_lone_dict_is_the_object_parameter_s_value(sandbox: ProcessSandbox) -> None:
    tools = HostTools(save=echo, get_weather=echo)
    code = (
        "[save({}), save({'record': 1, 'overwrite': True}), save({'a': 1}, overwrite=True), "
        "save(record={'a': 2}), get_weather({'city': 'Rome'})]"
    )
    result = await sandbox.execute(code, invoker(tools), tools.names)
    assert result.ok, result.error
    assert result.value == [
        {"record": {}},
        {"record": {"record": 1, "overwrite": True}},
        {"record": {"a": 1}, "overwrite": True},
        {"record": {"a": 2}},
        {"city": "Rome"},
    ]


async def test_the_stub_says_how_a_dict_is_read(sandbox: ProcessSandbox) -> None:
    tools = HostTools(save=echo, get_weather=echo)
    result = await sandbox.execute("[save.__doc__, get_weather.__doc__]", invoker(tools), tools.names)
    save_doc, weather_doc = result.value
    assert "a dict alone is record" in save_doc
    assert "keywords or one dict" in weather_doc


@attrs.frozen
class Record:
    name: str


def test_which_first_parameters_take_an_object() -> None:
    @tool
    def save(record: dict[str, Any], overwrite: bool = False) -> None:
        """Save."""

    @tool
    def store(record: Record | None = None) -> None:
        """Store."""

    @tool
    def weather(city: str, days: int = 1) -> None:
        """Weather."""

    @tool
    def ping() -> None:
        """Ping."""

    assert [first_takes_object(t.spec) for t in (save, store, weather, ping)] == [True, True, False, False]
    specs = [save.spec, weather.spec]
    known = tool_parameters(ParameterizedInvoker.for_specs(echo_invoker, specs))
    assert known == {"save": ("record", "overwrite"), "weather": ("city", "days")}
    assert [getattr(names, "first_takes_object", None) for names in known.values()] == [True, False]


async def echo_invoker(name: str, arguments: dict[str, Any]) -> Any:
    raise AssertionError("not called")


saved: list[Any] = []


@tool
async def save_record(record: dict[str, Any], overwrite: bool = False) -> str:
    """Save a record."""
    saved.append((record, overwrite))
    return "saved"


async def test_codeact_code_saves_an_empty_record() -> None:
    saved.clear()
    code = "save_record({}); save_record({'overwrite': 1})"
    answer = orjson.dumps({"type": "code", "language": "python", "code": code}).decode()
    agent = Agent(
        FakeModelClient([reply(answer)]), runtime=CodeActRuntime(CodeActOptions()), tools=[save_record]
    )
    await agent.run("save")
    await agent.aclose()
    assert saved == [({}, False), ({"overwrite": 1}, False)]
