"""What the CodeAct prompt says about each tool, and that code can call it as said: what a tool returns,
strict tools' optional parameters, nested and recursive types written compactly, the sandbox's limits."""

from __future__ import annotations

import dataclasses
from typing import Any

import attrs
import orjson
import pytest
from codeact_support import code, final

from agentflow.agent.agent import Agent
from agentflow.model.tools import ToolSpec
from agentflow.result import StopReason
from agentflow.runtimes.codeact import CodeActOptions, CodeActRuntime
from agentflow.runtimes.codeact_prompt import tools_guide
from agentflow.sandbox import ExecutionLimits
from agentflow.testing import FakeModelClient, reply
from agentflow.tools import Tool, tool


def guide(*tools: Any) -> str:
    """The tools part of the guide."""
    return tools_guide(tools, "", react=True).split("\n\n")[0]


@dataclasses.dataclass
class Forecast:
    """A forecast."""

    temp_c: float
    summary: str


@tool
async def forecast(city: str) -> Forecast:
    """Get the forecast.

    Args:
        city: The city.

    Returns:
        The forecast for the next 24 hours.
    """
    return Forecast(1.0, "mild")


@tool
async def lookup(ids: list[int]) -> dict[str, float]:
    """Look up prices by id."""
    return {}


# --- what a tool returns -----------------------------------------------------------------------------------


def test_the_guide_says_what_each_tool_returns() -> None:
    text = guide(forecast, lookup)
    assert (
        "  city: str, required. The city.\n  returns: dict {temp_c: float, summary: str}. The forecast "
        in text
    )
    assert "  ids: list of int, required\n  returns: dict of float" in text


class Opaque:
    """A value JSON cannot describe."""


def test_a_return_the_schema_cannot_describe_is_told_by_its_docstring_or_not_at_all() -> None:
    class Local:
        pass

    @tool
    def described() -> Opaque:
        """Make one.

        Returns:
            A handle to pass to other tools.
        """
        return Opaque()

    @tool
    def silent(x: int):  # type: ignore[no-untyped-def]
        """No annotation, no Returns section."""
        return x

    @tool
    def unresolvable(x: int) -> Local:  # a local class: the string annotation cannot be resolved
        """Make a local one."""
        return Local()

    assert "  returns: A handle to pass to other tools." in guide(described)
    assert "returns" not in guide(silent)
    assert "returns" not in guide(unresolvable)
    assert unresolvable.spec.parameters["required"] == ["x"]


def test_the_return_description_never_reaches_the_tool_spec() -> None:
    @tool
    async def same(city: str) -> None:
        """Get the forecast.

        Args:
            city: The city.
        """

    # What a ReAct model is sent: the same spec with or without a return annotation and Returns section.
    assert forecast.spec == attrs.evolve(same.spec, name="forecast")
    assert forecast.returns is not None
    assert "returns" not in orjson.dumps(attrs.asdict(forecast.spec)).decode()


def test_a_tool_from_a_spec_reads_its_functions_return() -> None:
    async def handler(city: str) -> list[str]:
        """Handle.

        Returns:
            Matching cities.
        """
        return [city]

    made = Tool.from_spec(ToolSpec("cities", "Find cities.", {"type": "object", "properties": {}}), handler)
    assert "  returns: list of str. Matching cities." in guide(made)


# --- strict tools ------------------------------------------------------------------------------------------


@attrs.frozen
class Node:
    """A tree node."""

    name: str
    children: list[Node] = attrs.Factory(list)


@tool(strict=True)
async def find(query: str, limit: int | None = 5, lang: str = "en", root: Node | None = None) -> list[Any]:
    """Find things."""
    return [query, limit, lang, None if root is None else attrs.asdict(root)]


def test_a_strict_tools_optional_parameters_are_shown_optional_with_their_defaults() -> None:
    text = guide(find)
    assert '- find(query, limit=5, lang="en", root=None)' in text
    assert '  query: str, required\n  limit: int or None, default 5\n  lang: str, default "en"' in text
    assert "null for the default" not in text  # a strict-mode note, not for code


def test_a_hand_written_strict_schema_shows_its_nullable_properties_as_optional() -> None:
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string"}, "page": {"type": ["integer", "null"]}},
        "required": ["q", "page"],
        "additionalProperties": False,
    }
    made = Tool.from_spec(ToolSpec("search", "Search.", schema, strict=True), lambda q, page: [q, page])
    assert "- search(q, page=None)\n  Search.\n  q: str, required\n  page: int or None, optional" in guide(
        made
    )


async def test_code_may_leave_out_a_strict_tools_optional_arguments() -> None:
    schema = {
        "type": "object",
        "properties": {"q": {"type": "string"}, "page": {"type": ["integer", "null"]}},
        "required": ["q", "page"],
        "additionalProperties": False,
    }
    search = Tool.from_spec(ToolSpec("search", "Search.", schema, strict=True), lambda q, page: [q, page])
    source = (
        "[find(query='x'), find(query='y', root={'name': 'a', 'children': [{'name': 'b'}]}), search(q='z')]"
    )
    fake = FakeModelClient([reply(code(source))])
    agent = Agent(fake, runtime=CodeActRuntime(), tools=[find, search])
    result = await agent.run("Find.")
    await agent.aclose()
    assert result.stop_reason is StopReason.FINAL_ANSWER
    assert orjson.loads(result.output_text) == [
        ["x", 5, "en", None],
        ["y", 5, "en", {"name": "a", "children": [{"name": "b", "children": []}]}],
        ["z", None],
    ]
    assert orjson.loads(result.tool_calls[0].arguments) == {
        "query": "x",
        "limit": 5,
        "lang": "en",
        "root": None,
    }


# --- types written compactly -------------------------------------------------------------------------------


def test_nested_objects_are_written_compactly_without_schema_noise() -> None:
    spec = ToolSpec(
        "order",
        "Place an order.",
        {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {
                        "title": "Item",
                        "type": "object",
                        "description": "An item.",
                        "properties": {
                            "sku": {"type": "string", "description": "Stock keeping unit"},
                            "qty": {"type": "integer", "default": 1, "minimum": 1},
                            "note": {"type": "string"},
                            "at": {"type": "string", "format": "date-time"},
                        },
                        "required": ["sku", "at"],
                        "additionalProperties": False,
                    },
                }
            },
            "required": ["items"],
        },
    )
    text = guide(spec)
    assert (
        "  items: list of dict {sku: str (Stock keeping unit), qty: int = 1, note: str (optional), "
        "at: str (date-time)}, required"
    ) in text
    assert "title" not in text
    assert "additionalProperties" not in text


def test_a_recursive_parameter_is_named_once_and_defined_in_its_where_line() -> None:
    @tool
    async def plant(tree: Node, depth: int = 3) -> Node:
        """Plant a tree."""
        return tree

    text = guide(plant)
    assert "  tree: Node, required. A tree node.\n" in text
    assert "  returns: Node\n" in text
    assert text.endswith("  where Node is dict {name: str, children: list of Node = []}")
    assert text.count("children") == 1


# --- the sandbox's limits ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("max_processes", "told"), [(0, True), (4, False)])
async def test_the_prompt_says_threads_are_unavailable_only_when_they_are(
    max_processes: int, told: bool
) -> None:
    fake = FakeModelClient([reply(final("ok"))])
    limits = ExecutionLimits(max_processes=max_processes)
    agent = Agent(fake, runtime=CodeActRuntime(CodeActOptions(limits=limits)))
    await agent.run("Hi.")
    await agent.aclose()
    system = fake.prompts[0].system_prompt
    assert system is not None
    assert ("The code cannot start threads or processes" in system) is told
