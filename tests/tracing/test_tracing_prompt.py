"""A ``chat`` span records the prompt its call sent (the ``AgentPrompt`` on ``ModelRequest``): with content,
exactly the messages the server received (a session's earlier turns and ``history=`` included, on Chat and
on Responses, blocking and streamed), the system prompt and instructions as ``gen_ai.system_instructions``,
the tools as ``gen_ai.tool.definitions``; always, the request's parameters. The prompt never reaches an
event's JSON or an SSE frame."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tracing_support import CONTENT_KEYS, add, attributes, named, one

from agentflow.agent.agent import Agent
from agentflow.agent.items import assistant_item, user_item
from agentflow.agent.options import ModelSettings
from agentflow.events import ModelRequest, RunFailed, RunStarted
from agentflow.model.events import Event, ModelCompleted
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.runtimes.prompt_functions import PromptContext
from agentflow.sse import encode_sse, sse_stream
from agentflow.testing import Reply, ScriptedServer
from agentflow.testing.fake import FakeModelClient, reply
from agentflow.tools import tool
from agentflow.tracing import instrument, traced

# -- what the server received, in the conventions' shapes (the expected values) ------------------------------


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "content": text}


def _joined(content: Any) -> str:
    return content if isinstance(content, str) else "".join(part["text"] for part in content)


def _chat_wire(body: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """A Chat Completions request as (system texts, messages): the leading system messages are the system
    prompt and the instructions."""
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    for message in body["messages"]:
        role = message["role"]
        if role == "system" and not messages:
            system.append(message["content"])
        elif role == "tool":
            part = {
                "type": "tool_call_response",
                "id": message["tool_call_id"],
                "response": message["content"],
            }
            messages.append({"role": "tool", "parts": [part]})
        elif role == "assistant":
            parts: list[dict[str, Any]] = []
            if message.get("reasoning_content"):
                parts.append({"type": "reasoning", "content": message["reasoning_content"]})
            if message.get("content"):
                parts.append(_text(_joined(message["content"])))
            for call in message.get("tool_calls") or ():
                function = call["function"]
                arguments = orjson.loads(function["arguments"])
                parts.append(
                    {"type": "tool_call", "id": call["id"], "name": function["name"], "arguments": arguments}
                )
            messages.append({"role": "assistant", "parts": parts})
        else:
            messages.append({"role": role, "parts": [_text(_joined(message["content"]))]})
    return system, messages


def _responses_wire(body: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """A Responses request as (system texts, messages): ``instructions`` is the system prompt, the system
    message first in ``input`` the instructions; a turn's items (reasoning, message, calls) one message."""
    system = [body["instructions"]] if body.get("instructions") else []
    items = list(body["input"])
    if items and items[0].get("role") == "system":
        system.append(_joined(items.pop(0)["content"]))
    messages: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type", "message")
        turn = messages[-1]["parts"] if messages and messages[-1]["role"] == "assistant" else None
        if kind == "function_call_output":
            part = {"type": "tool_call_response", "id": item["call_id"], "response": item["output"]}
            messages.append({"role": "tool", "parts": [part]})
        elif kind in ("function_call", "reasoning"):
            if kind == "function_call":
                arguments = orjson.loads(item["arguments"])
                new = {
                    "type": "tool_call",
                    "id": item["call_id"],
                    "name": item["name"],
                    "arguments": arguments,
                }
            else:
                new = {"type": "reasoning", "content": "\n\n".join(s["text"] for s in item["summary"])}
            if turn is None:
                messages.append({"role": "assistant", "parts": [new]})
            else:
                turn.append(new)
        elif item["role"] == "assistant" and turn is not None and all(p["type"] == "reasoning" for p in turn):
            turn.append(_text(_joined(item["content"])))
        else:
            messages.append({"role": item["role"], "parts": [_text(_joined(item["content"]))]})
    return system, messages


def _recorded(span: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]]]:
    system = [part["content"] for part in orjson.loads(span["gen_ai.system_instructions"])]
    return system, orjson.loads(span["gen_ai.input.messages"])


PROTOCOLS = [
    pytest.param(OpenAIChatModel, _chat_wire, id="chat"),
    pytest.param(OpenAIResponsesModel, _responses_wire, id="responses"),
]


def _instructions(run: PromptContext) -> str:
    return f"This is step {run.step}."


async def _run(agent: Agent[Any], text: str, *, streamed: bool, **options: Any) -> None:
    if not streamed:
        await agent.run(text, **options)
        return
    async with agent.stream(text, **options) as run:
        async for _ in run:
            pass


# -- the messages, as the server received them ---------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
@pytest.mark.parametrize(("model_class", "wire"), PROTOCOLS)
async def test_each_call_of_a_session_s_tool_run_records_what_the_server_received(
    model_class: Any, wire: Any, streamed: bool, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    script = [
        Reply(text="Hi, I count."),
        Reply(reasoning="The user wants a sum.", tool_calls=[("add", {"a": 1, "b": 2})]),
        Reply(text="It is 3."),
    ]
    async with ScriptedServer(script) as server, model_class(base_url=server.base_url, model="m1") as model:
        agent = Agent(model, tools=[add], system_prompt="You add numbers.", instructions=_instructions)
        instrument(agent, tracer_provider=provider, capture_content=True)
        chat = agent.session()
        await chat.run("Hello")
        if streamed:
            async with chat.stream("Add 1 and 2.") as run:
                async for _ in run:
                    pass
        else:
            await chat.run("Add 1 and 2.")
        bodies = [request.body for request in server.requests]

    calls = [attributes(s) for s in named(exporter.get_finished_spans(), "chat m1")]
    assert len(calls) == len(bodies) == 3
    for call, body in zip(calls, bodies, strict=True):
        assert body is not None
        assert _recorded(call) == wire(body)
        assert "agentflow.input.dropped_messages" not in call
    # The second run's last call: the first run's turn, the question, the tool call (with the reasoning
    # that came with it) and its result; the instructions of its own step.
    system, messages = _recorded(calls[2])
    assert system[1] == "This is step 1."
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "tool"]
    assert messages[3]["parts"][0] == {"type": "reasoning", "content": "The user wants a sum."}
    assert messages[4]["parts"][0]["response"] == "3"
    if streamed:
        assert calls[2]["gen_ai.request.stream"] is True


@pytest.mark.parametrize("streamed", [False, True], ids=["blocking", "streamed"])
@pytest.mark.parametrize(("model_class", "wire"), PROTOCOLS)
async def test_history_items_are_among_the_messages_of_each_call(
    model_class: Any, wire: Any, streamed: bool, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    script = [Reply(tool_calls=[("add", {"a": 1, "b": 2})]), Reply(text="3, Ada.")]
    # A Chat-shaped assistant item: on Responses it goes out converted, and reads the same.
    history = [user_item("I am Ada."), assistant_item("Hello Ada.")]
    async with ScriptedServer(script) as server, model_class(base_url=server.base_url, model="m1") as model:
        agent = Agent(model, tools=[add])
        instrument(agent, tracer_provider=provider, capture_content=True)
        await _run(agent, "Add 1 and 2.", streamed=streamed, history=history)
        bodies = [request.body for request in server.requests]

    calls = [attributes(s) for s in named(exporter.get_finished_spans(), "chat m1")]
    for call, body in zip(calls, bodies, strict=True):
        assert body is not None
        assert _recorded(call) == wire(body)
    first = orjson.loads(calls[0]["gen_ai.input.messages"])
    assert first == [
        {"role": "user", "parts": [_text("I am Ada.")]},
        {"role": "assistant", "parts": [_text("Hello Ada.")]},
        {"role": "user", "parts": [_text("Add 1 and 2.")]},
    ]


async def test_the_tool_definitions_are_the_tools_the_server_was_offered(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    async with (
        ScriptedServer([Reply(text="Hi.")]) as server,
        OpenAIChatModel(base_url=server.base_url, model="m1") as model,
    ):
        agent = Agent(model, tools=[add])
        instrument(agent, tracer_provider=provider, capture_content=True)
        await agent.run("Hello")
        (request,) = server.requests

    assert request.body is not None
    offered = [
        {
            "type": "function",
            "name": f["name"],
            "description": f["description"],
            "parameters": f["parameters"],
        }
        for f in (t["function"] for t in request.body["tools"])
    ]
    call = attributes(one(exporter.get_finished_spans(), "chat m1"))
    assert orjson.loads(call["gen_ai.tool.definitions"]) == offered
    assert (offered[0]["name"], offered[0]["description"]) == ("add", "Add two numbers.")


async def test_hosted_tools_are_defined_by_their_type_alone(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    mcp = {"type": "mcp", "server_label": "docs", "headers": {"Authorization": "Bearer sk-secret"}}
    agent = Agent(FakeModelClient([reply("Hi.")]), tools=[add, {"type": "web_search"}, mcp])
    instrument(agent, tracer_provider=provider, capture_content=True)

    await agent.run("Hello")

    call = attributes(one(exporter.get_finished_spans(), "chat"))
    definitions = orjson.loads(call["gen_ai.tool.definitions"])
    assert [(d["type"], d["name"]) for d in definitions] == [
        ("function", "add"),
        ("web_search", "web_search"),
        ("mcp", "docs"),
    ]
    assert "sk-secret" not in call["gen_ai.tool.definitions"]


async def test_system_instructions_follow_a_prompt_function_step_by_step(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    script = [reply(tool_calls=[("add", {"a": 1, "b": 2})]), reply("3.")]
    agent = Agent(FakeModelClient(script), tools=[add], instructions=_instructions)
    instrument(agent, tracer_provider=provider, capture_content=True)

    await agent.run("Add.")

    steps = [
        orjson.loads(attributes(s)["gen_ai.system_instructions"])
        for s in named(exporter.get_finished_spans(), "chat")
    ]
    assert steps[0][0] == steps[1][0]  # the system prompt (the runtime's: ReAct's)
    assert [step[1] for step in steps] == [_text("This is step 0."), _text("This is step 1.")]


# -- parameters: not content, recorded always ----------------------------------------------------------------


async def test_the_request_parameters_are_recorded_without_content(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    settings = ModelSettings(
        temperature=0.2,
        top_p=0.9,
        max_output_tokens=300,
        response_format={"type": "json_object"},
        extra_body={"seed": 7, "stop": ["END"], "top_k": 40, "frequency_penalty": 0.5, "n": 1},
    )
    async with (
        ScriptedServer([Reply(text='{"a": 1}')]) as server,
        OpenAIChatModel(base_url=server.base_url, model="m1") as model,
    ):
        agent = Agent(model, settings=settings, system_prompt="Secret plan.")
        instrument(agent, tracer_provider=provider)
        await agent.run("Hello")
        (request,) = server.requests

    assert request.body is not None
    call = attributes(one(exporter.get_finished_spans(), "chat m1"))
    assert {
        k: v for k, v in call.items() if k.startswith("gen_ai.request.") or k == "gen_ai.output.type"
    } == {
        "gen_ai.request.model": "m1",
        "gen_ai.request.temperature": request.body["temperature"],
        "gen_ai.request.top_p": request.body["top_p"],
        "gen_ai.request.max_tokens": 300,
        "gen_ai.request.seed": request.body["seed"],
        "gen_ai.request.stop_sequences": ("END",),
        "gen_ai.request.top_k": 40.0,
        "gen_ai.request.frequency_penalty": 0.5,
        "gen_ai.output.type": "json",
    }  # n=1: the conventions record a choice count only when it is not 1
    assert not CONTENT_KEYS & set(call)


# -- size: each text cut at content_limit, the messages within messages_limit --------------------------------


async def test_content_limit_cuts_instructions_tool_definitions_and_images(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    @tool
    def lookup(query: str) -> str:
        """Look something up in a very large catalogue of things that go on and on."""
        return query

    image = "data:image/png;base64," + "A" * 100
    history = [user_item("What is this?", [image, "https://example.com/cat.png"])]
    agent = Agent(FakeModelClient([reply("A cat.")]), tools=[lookup], system_prompt="Answer " * 20)
    instrument(agent, tracer_provider=provider, capture_content=True, content_limit=30)

    await agent.run("Well?", history=history)

    call = attributes(one(exporter.get_finished_spans(), "chat"))
    system = orjson.loads(call["gen_ai.system_instructions"])
    assert all(len(part["content"]) <= 30 for part in system)
    assert system[0]["content"].endswith("…")
    (definition,) = orjson.loads(call["gen_ai.tool.definitions"])
    assert definition["description"] == "Look something up in a very l…"
    assert isinstance(definition["parameters"], str)  # its JSON is longer than the limit: text, cut
    assert len(definition["parameters"]) == 30
    question = orjson.loads(call["gen_ai.input.messages"])[0]
    assert question["parts"] == [
        _text("What is this?"),
        {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "A" * 29 + "…"},
        {"type": "uri", "modality": "image", "uri": "https://example.com/cat.png"},
    ]


async def test_older_messages_give_way_to_the_messages_limit(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    history = [user_item(f"Earlier question {n}.") for n in range(20)]
    agent = Agent(FakeModelClient([reply("Done.")]))
    instrument(agent, tracer_provider=provider, capture_content=True, messages_limit=300)

    await agent.run("The question.", history=history)

    call = attributes(one(exporter.get_finished_spans(), "chat"))
    shown = orjson.loads(call["gen_ai.input.messages"])
    assert len(str(call["gen_ai.input.messages"])) <= 300
    assert shown[-1] == {"role": "user", "parts": [_text("The question.")]}  # the newest first
    assert shown[0]["parts"][0]["content"] == f"Earlier question {21 - len(shown)}."
    assert len(shown) + call["agentflow.input.dropped_messages"] == 21


# -- items of every shape ------------------------------------------------------------------------------------


async def test_responses_output_items_read_as_one_assistant_turn(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    history = [
        user_item("Find it."),
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-secret"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "it"}},
        {"type": "reasoning", "id": "rs_2", "summary": [{"type": "summary_text", "text": "Found it."}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Here."}]},
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 1, "b": 2}'},
        {"type": "function_call_output", "call_id": "c1", "output": "3"},
    ]
    agent = Agent(FakeModelClient([reply("Done.")]), tools=[add])
    instrument(agent, tracer_provider=provider, capture_content=True)

    await agent.run("Thanks.", history=history)

    call = attributes(one(exporter.get_finished_spans(), "chat"))
    assert "gAAAA-secret" not in call["gen_ai.input.messages"]  # encrypted reasoning: never shown
    assert orjson.loads(call["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [_text("Find it.")]},
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "server_tool_call",
                    "name": "web_search",
                    "server_tool_call": {"type": "web_search_call"},
                    "id": "ws_1",
                },
                {"type": "reasoning", "content": "Found it."},
                _text("Here."),
                {"type": "tool_call", "id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}},
            ],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "3"}]},
        {"role": "user", "parts": [_text("Thanks.")]},
    ]


# -- a ModelRequest without its prompt -----------------------------------------------------------------------


def test_a_model_request_without_a_prompt_records_no_prompt(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = Agent(FakeModelClient([]))
    ((_, recorder),) = traced(agent, tracer_provider=provider, capture_content=True)
    for event in (
        RunStarted("Hello", "react", run_id="run_1"),
        ModelRequest("m1", 1, run_id="run_1"),  # built by hand: no prompt
        ModelCompleted(reply("Hi."), run_id="run_1"),
        RunFailed("ValueError", "stopped", run_id="run_1"),
    ):
        recorder(event)

    call = attributes(one(exporter.get_finished_spans(), "chat m1"))
    assert call["agentflow.model.items"] == 1
    assert "gen_ai.output.messages" in call
    unknown = {"gen_ai.input.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions"}
    assert not unknown & set(call)
    assert not any(key.startswith("gen_ai.request.") and key != "gen_ai.request.model" for key in call)


# -- never in an event's JSON --------------------------------------------------------------------------------


async def test_the_prompt_rides_on_model_request_but_never_in_its_json_or_an_sse_frame() -> None:
    secret = "hunter2"
    agent = Agent(FakeModelClient([reply("Hi.")]), system_prompt=f"The code is {secret}.", tools=[add])
    history = [user_item(f"Remember {secret}."), assistant_item("Noted.")]

    events: list[Event] = []
    async with agent.stream("Hello", history=history) as run:
        frames = [frame async for frame in sse_stream(_kept(run, events))]

    (request,) = [e for e in events if isinstance(e, ModelRequest)]
    assert request.prompt is not None
    assert secret in str(request.prompt.system_prompt)
    assert len(request.prompt.items) == request.items == 3
    assert "prompt" not in request.to_dict()
    assert secret not in repr(request)
    for errors in ("public", "full"):
        assert secret.encode() not in encode_sse(request, errors=errors)  # type: ignore[arg-type]
    assert all(secret.encode() not in frame for frame in frames)
    assert any(frame.startswith(b"event: model_request") for frame in frames)


async def _kept(run: Any, events: list[Event]) -> Any:
    async for event in run:
        events.append(event)
        yield event
