"""Hosted tools (``{"type": "web_search"}``…) beside function tools in one ``ToolRegistry``: kept apart in
``hosted`` so the executor and ``specs`` see function tools only; a function tool mapping, which has nothing
to run, and a client-run tool type are refused with what to do instead."""

from __future__ import annotations

import pytest

from agentflow.tools import tool
from agentflow.tools.registry import ToolRegistry


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_hosted_tools_are_kept_apart_from_function_tools() -> None:
    search = {"type": "web_search", "search_context_size": "low"}
    registry = ToolRegistry([{"type": "code_interpreter", "container": {"type": "auto"}}, add, search])
    assert [spec.name for spec in registry.specs] == ["add"]
    assert registry.names == ("add",)
    assert len(registry) == 1
    assert list(registry) == [add]
    assert registry.hosted == ({"type": "code_interpreter", "container": {"type": "auto"}}, search)
    assert repr(registry) == "ToolRegistry(['add'], hosted=['code_interpreter', 'web_search'])"
    search["search_context_size"] = "high"  # the registry holds its own copy
    assert registry.hosted[1]["search_context_size"] == "low"
    with pytest.raises(TypeError):
        registry.hosted[1]["type"] = "file_search"  # type: ignore[index]


def test_a_registry_of_function_tools_has_no_hosted_tools() -> None:
    assert ToolRegistry([add]).hosted == ()
    assert repr(ToolRegistry([add])) == "ToolRegistry(['add'])"


def test_a_function_tool_mapping_is_refused_with_what_to_use() -> None:
    spec = {"type": "function", "name": "add", "parameters": {"type": "object"}}
    with pytest.raises(TypeError, match=r"no Python function to run; decorate the function with @tool"):
        ToolRegistry([spec])


@pytest.mark.parametrize("mapping", [{}, {"type": None}, {"type": ""}, {"name": "web_search"}])
def test_a_mapping_without_a_tool_type_is_refused(mapping: dict[str, object]) -> None:
    with pytest.raises(TypeError, match=r"string 'type'"):
        ToolRegistry([mapping])


@pytest.mark.parametrize("kind", ["custom", "computer_use_preview", "local_shell", "apply_patch"])
def test_a_tool_the_client_must_run_is_refused(kind: str) -> None:
    with pytest.raises(TypeError, match=rf"a '{kind}' tool is run by the client"):
        ToolRegistry([{"type": kind, "name": "x"}])


def test_a_hosted_tool_given_twice_is_refused() -> None:
    with pytest.raises(ValueError, match=r"given twice"):
        ToolRegistry([{"type": "web_search"}, add, {"type": "web_search"}])


def test_one_mapping_in_place_of_a_list_is_refused() -> None:
    with pytest.raises(TypeError, match=r"tools must be a list"):
        ToolRegistry({"type": "web_search"})  # type: ignore[arg-type]


def test_a_function_whose_first_parameter_is_called_cls_is_a_plain_tool() -> None:
    from agentflow.tools import tool

    def classify(cls: str, text: str) -> str:
        """Say whether ``text`` belongs to class ``cls``."""
        return f"{text} in {cls}"

    assert [p for p in tool(classify).spec.parameters["properties"]] == ["cls", "text"]
