"""Pydantic models and recursive types, end to end on both protocols over real HTTP: as an agent's output
type (the schema asked for, the answer read into the type, a refusal sent back) and as a tool's parameters
(the tool called with model instances, a validator's refusal fed back as ``TOOL_ERROR``).
"""

from __future__ import annotations

from typing import Any, Literal

import anyio
import attrs
import pytest

pytest.importorskip("pydantic")

from pydantic import BaseModel, Field, field_validator

from agentflow import (
    Agent,
    OpenAIChatModel,
    OpenAIResponsesModel,
    OutputRejected,
    OutputType,
    RunFinished,
)
from agentflow.model.events import Event
from agentflow.testing import Reply, ScriptedServer
from agentflow.tools import tool
from agentflow.tools.strict import strict_schema_problems

Protocol = Literal["chat", "responses"]
PROTOCOLS: list[Protocol] = ["chat", "responses"]


class LineItem(BaseModel):
    sku: str
    qty: int = Field(1, ge=1)

    @field_validator("sku")
    @classmethod
    def upper_case(cls, value: str) -> str:
        if not value.isupper():
            raise ValueError("sku must be upper case")
        return value


class Invoice(BaseModel):
    """An invoice."""

    customer: str
    items: list[LineItem]
    note: str | None = None


@attrs.frozen
class Topic:
    """A topic and its subtopics."""

    title: str
    subtopics: list[Topic] = attrs.Factory(list)


class Category(BaseModel):
    name: str
    children: list[Category] = []


booked: list[Invoice] = []


@tool(strict=True)
async def book(invoice: Invoice) -> str:
    """Book an invoice."""
    booked.append(invoice)
    return f"booked {len(invoice.items)} items"


def model_for(protocol: Protocol, server: ScriptedServer) -> Any:
    cls = OpenAIChatModel if protocol == "chat" else OpenAIResponsesModel
    return cls(base_url=server.base_url, api_key="sk-test", model="gpt-test")


def asked_schema(protocol: Protocol, body: dict[str, Any]) -> dict[str, Any]:
    """The ``json_schema`` a request asked for (Chat's ``response_format``, Responses' ``text.format``)."""
    if protocol == "chat":
        inner: dict[str, Any] = body["response_format"]["json_schema"]
        return inner
    return {k: v for k, v in body["text"]["format"].items() if k != "type"}


def tool_outputs(protocol: Protocol, body: dict[str, Any]) -> list[str]:
    """The tool results a request sends back to the model."""
    if protocol == "chat":
        return [m["content"] for m in body["messages"] if m["role"] == "tool"]
    return [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]


def tool_spec(protocol: Protocol, body: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = body["tools"][0]
    return spec["function"] if protocol == "chat" else spec


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_pydantic_output_type_is_asked_for_strictly_and_read_into_the_model(
    protocol: Protocol,
) -> None:
    answer = '{"customer": "ACME", "items": [{"sku": "AB", "qty": null}], "note": null}'
    async with (
        ScriptedServer([Reply(text=answer, chunk_size=5)]) as server,
        Agent(model_for(protocol, server), output_type=Invoice) as agent,
    ):
        with anyio.fail_after(10):
            events: list[Event] = []
            async with agent.stream("Invoice ACME for AB.") as run:
                async for event in run:
                    events.append(event)
    result = run.result
    assert result is not None
    assert result.output == Invoice(customer="ACME", items=[LineItem(sku="AB")])
    asked = asked_schema(protocol, server.requests[0].body)
    assert (asked["name"], asked["strict"]) == ("Invoice", True)
    assert asked["schema"]["required"] == ["customer", "items", "note"]
    assert asked["schema"]["properties"]["items"]["items"]["required"] == ["sku", "qty"]
    assert strict_schema_problems(asked["schema"]) == []
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.to_dict()["result"]["output"] == {
        "customer": "ACME",
        "items": [{"sku": "AB", "qty": 1}],
        "note": None,
    }


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_validator_refusing_the_answer_sends_its_reason_back(protocol: Protocol) -> None:
    turns = [
        Reply(text='{"customer": "ACME", "items": [{"sku": "ab", "qty": 2}], "note": null}'),
        Reply(text='{"customer": "ACME", "items": [{"sku": "AB", "qty": 2}], "note": null}'),
    ]
    async with (
        ScriptedServer(turns) as server,
        Agent(model_for(protocol, server), output_type=Invoice) as agent,
    ):
        events: list[Event] = []
        with anyio.fail_after(10):
            async with agent.stream("Invoice ACME.") as run:
                async for event in run:
                    events.append(event)
    assert run.result is not None
    assert run.result.output == Invoice(customer="ACME", items=[LineItem(sku="AB", qty=2)])
    rejected = [e for e in events if isinstance(e, OutputRejected)]
    assert [r.error for r in rejected] == [
        "output.items[0].sku is not valid: Value error, sku must be upper case"
    ]
    second = server.requests[1].body
    retry = (
        second["messages"][-1]["content"] if protocol == "chat" else second["input"][-1]["content"][0]["text"]
    )
    assert "output.items[0].sku is not valid: Value error, sku must be upper case" in retry


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_recursive_output_type_asks_with_definitions_and_reads_the_tree(protocol: Protocol) -> None:
    answer = (
        '{"title": "AI", "subtopics": [{"title": "ML", "subtopics": [{"title": "Deep learning", '
        '"subtopics": null}]}, {"title": "Agents", "subtopics": []}]}'
    )
    async with (
        ScriptedServer([Reply(text=answer)]) as server,
        Agent(model_for(protocol, server), output_type=Topic) as agent,
    ):
        with anyio.fail_after(10):
            result = await agent.run("Outline AI.")
    assert result.output == Topic("AI", [Topic("ML", [Topic("Deep learning")]), Topic("Agents")])
    asked = asked_schema(protocol, server.requests[0].body)
    schema = asked["schema"]
    assert (asked["name"], asked["strict"]) == ("Topic", True)
    assert schema["type"] == "object"  # the root is the object itself, not a $ref (OpenAI wants an object)
    assert schema["$defs"]["Topic"]["properties"]["subtopics"]["anyOf"][0]["items"] == {
        "$ref": "#/$defs/Topic"
    }
    assert strict_schema_problems(schema) == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_list_of_recursive_pydantic_models_is_wrapped_with_its_definitions_at_the_root(
    protocol: Protocol,
) -> None:
    answer = (
        '{"result": [{"name": "a", "children": [{"name": "b", "children": null}]}, '
        '{"name": "c", "children": []}]}'
    )
    async with (
        ScriptedServer([Reply(text=answer)]) as server,
        Agent(model_for(protocol, server), output_type=list[Category]) as agent,
    ):
        with anyio.fail_after(10):
            result = await agent.run("Categories?")
    assert result.output == [Category(name="a", children=[Category(name="b")]), Category(name="c")]
    schema = asked_schema(protocol, server.requests[0].body)["schema"]
    assert list(schema["$defs"]) == ["Category"]
    assert schema["properties"]["result"]["items"]["title"] == "Category"
    assert strict_schema_problems(schema) == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_tool_with_pydantic_parameters_gets_model_instances_and_validator_errors_go_back(
    protocol: Protocol,
) -> None:
    booked.clear()
    bad = {"invoice": {"customer": "ACME", "items": [{"sku": "ab", "qty": 1}], "note": None}}
    good = {"invoice": {"customer": "ACME", "items": [{"sku": "AB", "qty": None}], "note": "rush"}}
    turns = [
        Reply(tool_calls=[("book", bad, "call_1")]),
        Reply(tool_calls=[("book", good, "call_2")]),
        Reply(text="Booked."),
    ]
    async with (
        ScriptedServer(turns) as server,
        Agent(model_for(protocol, server), tools=[book]) as agent,
    ):
        with anyio.fail_after(10):
            result = await agent.run("Book the ACME invoice.")
    assert result.output_text == "Booked."
    assert booked == [Invoice(customer="ACME", items=[LineItem(sku="AB")], note="rush")]
    spec = tool_spec(protocol, server.requests[0].body)
    assert spec["strict"] is True
    assert strict_schema_problems(spec["parameters"]) == []
    first_error = tool_outputs(protocol, server.requests[1].body)
    assert first_error == [
        'TOOL_ERROR: {"errorType":"invalid_arguments","error":"arguments.invoice.items[0].sku is not valid: '
        'Value error, sku must be upper case","tool":"book","callId":"call_1"}'
    ]
    assert tool_outputs(protocol, server.requests[2].body)[-1] == "booked 1 items"


def test_an_answer_leaving_out_optional_fields_gets_pydantics_defaults() -> None:
    # What a server that ignores the strict schema sends: read with the plain schema, defaults applied.
    spec = OutputType(Invoice)
    assert spec.strict is True
    assert spec.parse('{"customer": "ACME", "items": [{"sku": "AB"}]}') == Invoice(
        customer="ACME", items=[LineItem(sku="AB")]
    )


def test_a_model_strict_mode_cannot_express_gets_a_plain_schema() -> None:
    class Tally(BaseModel):
        counts: dict[str, int]

    spec = OutputType(Tally)
    assert spec.strict is False
    assert spec.schema["properties"]["counts"] == {
        "additionalProperties": {"type": "integer"},
        "type": "object",
    }
    assert spec.parse('{"counts": {"a": 1}}') == Tally(counts={"a": 1})
