"""An assistant turn's reasoning goes back on the next Chat request under the field the server sent it in.

DeepSeek's thinking mode answers 400 ("The reasoning_content in the thinking mode must be passed back to the
API") when a tool-call turn comes back without its ``reasoning_content``; OpenAI rejects message fields it
does not know. So: ``reasoning_content`` back as ``reasoning_content``, OpenRouter's ``reasoning`` as
``reasoning``, and nothing to a server that sent none. Each case is a two-step agent run (or a two-run
session) against a local server replaying recordings from ``shared/wire``, or a scripted server; the expected
reasoning is read from the recording itself, not from the decoder under test.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from agent_wire_replay import recording, replay_server

from agentflow.agent.agent import Agent
from agentflow.agent.chat_client import ChatModelClient
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import AgentOptions
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.responses_model import OpenAIResponsesModel
from agentflow.testing import Reply, ScriptedServer

REASONING_KEYS = ("reasoning_content", "reasoning")


def get_player_name() -> str:
    """Get the player's name."""
    return "Ada"


def roll_dice() -> int:
    """Roll a six-sided die and return the result."""
    return 4


def lookup_population(country: str) -> str:
    """Look up the population of a country."""
    return "123"


def get_capital(country: str) -> str:
    """Get the capital of a country."""
    return "Paris"


TOOLS = [get_player_name, roll_dice, lookup_population, get_capital]


def recorded_reasoning(name: str) -> tuple[str | None, str | None]:
    """``(field, text)`` of the reasoning a recording's answer carries, read straight from its body."""
    record = recording(name)
    body: str = record["response_body"]
    if not record["stream"]:
        message = orjson.loads(body)["choices"][0]["message"]
        for key in REASONING_KEYS:
            if isinstance(message.get(key), str) and message[key]:
                return key, message[key]
        return None, None
    pieces: dict[str, list[str]] = {key: [] for key in REASONING_KEYS}
    for line in body.splitlines():
        if not line.startswith("data: {"):
            continue
        for choice in orjson.loads(line[len("data: ") :]).get("choices") or ():
            delta = choice.get("delta") or {}
            for key in REASONING_KEYS:
                if isinstance(delta.get(key), str):
                    pieces[key].append(delta[key])
    for key in REASONING_KEYS:
        if "".join(pieces[key]):
            return key, "".join(pieces[key])
    return None, None


def assistant_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant"]


def chat_agent(url: str, *, stream: bool, model: str = "deepseek-v4-flash") -> Agent:
    return Agent(
        OpenAIChatModel(base_url=url, api_key="sk-test", model=model),
        tools=TOOLS,
        options=AgentOptions(stream=stream),
    )


async def test_deepseek_tool_call_turn_goes_back_with_its_reasoning_content_as_recorded() -> None:
    """The conformance case: the recorded DeepSeek answer (reasoning_content, text and two tool calls) comes
    back on the second request of the run exactly as received, in the shape of the recorded request."""
    field, reasoning = recorded_reasoning("chat_deepseek_reasoning_content_tool_calls.json")
    assert field == "reasoning_content"
    assert reasoning
    async with replay_server("chat_deepseek_reasoning_content_tool_calls.json", "chat_text_stop.json") as (
        url,
        replay,
    ):
        agent = chat_agent(url, stream=False)
        async with agent:
            session = agent.session()
            await session.run("My guess is 4")
            items = session.items
    first, second = replay.bodies
    assert assistant_messages(first) == []
    (echoed,) = assistant_messages(second)
    assert echoed["reasoning_content"] == reasoning
    assert "reasoning" not in echoed
    answer = orjson.loads(recording("chat_deepseek_reasoning_content_tool_calls.json")["response_body"])
    sent = answer["choices"][0]["message"]
    assert echoed["content"] == sent["content"]
    assert [c["id"] for c in echoed["tool_calls"]] == [c["id"] for c in sent["tool_calls"]]
    # The same fields as the assistant turns of the request DeepSeek recorded (which it answered with 200).
    recorded_request = recording("chat_deepseek_reasoning_content_tool_calls.json")["request"]
    recorded_turns = [m for m in recorded_request["messages"] if m["role"] == "assistant"]
    assert all(set(echoed) == set(turn) for turn in recorded_turns)
    # Memory stays plain JSON, reasoning and all.
    assert orjson.loads(orjson.dumps(items)) == list(items)


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "streamed"])
async def test_a_scripted_deepseek_tool_call_turn_goes_back_with_its_reasoning_content(stream: bool) -> None:
    reasoning = "The user wants a roll. I will call roll_dice, then report the number."
    script = [
        Reply(reasoning=reasoning, tool_calls=[("roll_dice", {})], chunk_size=7),
        Reply(text="You got 4"),
    ]
    async with ScriptedServer(script) as server:
        agent = chat_agent(server.base_url, stream=stream)
        async with agent:
            result = await agent.run("roll")
    assert result.output_text == "You got 4"
    assert [r.body.get("stream") is True for r in server.requests] == [stream, stream]
    (echoed,) = assistant_messages(server.requests[1].body)
    assert echoed["reasoning_content"] == reasoning
    assert "reasoning" not in echoed
    assert [c["function"]["name"] for c in echoed["tool_calls"]] == ["roll_dice"]


@pytest.mark.parametrize(
    ("first", "second", "stream"),
    [
        ("chat_stream_deepseek_reasoning_content.json", "chat_stream_text_usage.json", True),
        ("chat_stream_openrouter_reasoning.json", "chat_stream_text_usage.json", True),
        ("chat_stream_text_usage.json", "chat_stream_text_usage.json", True),
        ("chat_text_stop.json", "chat_text_stop.json", False),
    ],
    ids=["deepseek-streamed", "openrouter-streamed", "openai-streamed", "openai-blocking"],
)
async def test_the_next_turn_sends_the_reasoning_back_under_the_recorded_field_only(
    first: str, second: str, stream: bool
) -> None:
    field, reasoning = recorded_reasoning(first)
    async with replay_server(first, second) as (url, replay):
        agent = chat_agent(url, stream=stream)
        async with agent:
            session = agent.session()
            await session.run("Hello")
            await session.run("And now?")
    (echoed,) = assistant_messages(replay.bodies[1])
    if field is None:
        # OpenAI never sends reasoning, so it is never sent any: its strict schema rejects unknown fields.
        assert set(echoed) == {"role", "content"}
    else:
        assert echoed[field] == reasoning
        # OpenRouter's reasoning blocks go back too, as it sent them (``test_openrouter_reasoning_details``).
        extra = {"reasoning_details"} if "openrouter" in first else set()
        assert set(echoed) == {"role", "content", field, *extra}


@pytest.mark.parametrize("stream", [False, True], ids=["blocking", "streamed"])
async def test_an_openai_tool_call_turn_goes_back_without_any_reasoning_key(stream: bool) -> None:
    names = (
        ("chat_stream_tool_call_single.json", "chat_stream_text_usage.json")
        if stream
        else ("chat_tool_call_single.json", "chat_text_stop.json")
    )
    async with replay_server(*names) as (url, replay):
        agent = chat_agent(url, stream=stream, model="gpt-4o-mini")
        async with agent:
            await agent.run("What is the capital of France?")
    (echoed,) = assistant_messages(replay.bodies[1])
    assert set(echoed) == {"role", "content", "tool_calls"}
    assert not any(key in m for m in replay.bodies[1]["messages"] for key in REASONING_KEYS)


async def test_openrouter_reasoning_of_a_blocking_answer_goes_back_as_reasoning() -> None:
    # No blocking OpenRouter recording carries reasoning: the recorded tool-call answer, with OpenRouter's
    # ``message.reasoning`` added.
    answer = orjson.loads(recording("chat_tool_call_single.json")["response_body"])
    answer["choices"][0]["message"]["reasoning"] = "Population lookups need the lookup tool."
    async with replay_server("chat_tool_call_single.json", "chat_text_stop.json") as (url, replay):
        replay.recordings[0] = {**replay.recordings[0], "response_body": orjson.dumps(answer).decode()}
        agent = chat_agent(url, stream=False, model="anthropic/claude-sonnet-4.5")
        async with agent:
            await agent.run("How many people live in Crumpet?")
    (echoed,) = assistant_messages(replay.bodies[1])
    assert echoed["reasoning"] == "Population lookups need the lookup tool."
    assert "reasoning_content" not in echoed


async def test_echo_reasoning_false_sends_none_back_but_memory_keeps_it() -> None:
    reasoning = "Thinking about dice."
    memory = InMemoryMemory()
    script = [Reply(reasoning=reasoning, tool_calls=[("roll_dice", {})]), Reply(text="4")]
    async with ScriptedServer(script) as server:
        model = OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="deepseek-v4-flash")
        agent = Agent(ChatModelClient(model, echo_reasoning=False), tools=TOOLS, memory=memory)
        async with agent:
            await agent.run("roll")
    (echoed,) = assistant_messages(server.requests[1].body)
    assert not any(key in echoed for key in REASONING_KEYS)
    assert [item.get("reasoning_content") for item in memory.items if item.get("role") == "assistant"] == [
        reasoning,
        None,
    ]


async def test_a_chat_conversation_moved_to_responses_sends_no_chat_reasoning() -> None:
    """A DeepSeek Chat turn kept its ``reasoning_content`` in memory; the same memory continued on Responses
    sends the turn's text and calls, never the Chat reasoning field (Responses rejects unknown fields)."""
    _, reasoning = recorded_reasoning("chat_deepseek_reasoning_content_tool_calls.json")
    memory = InMemoryMemory()
    async with replay_server("chat_deepseek_reasoning_content_tool_calls.json", "chat_text_stop.json") as (
        url,
        _,
    ):
        chat = Agent(
            OpenAIChatModel(base_url=url, api_key="sk-test", model="deepseek-v4-flash"),
            tools=TOOLS,
            memory=memory,
        )
        async with chat:
            await chat.run("My guess is 4")
    kept = [item for item in memory.items if item.get("role") == "assistant" and "tool_calls" in item]
    assert [item["reasoning_content"] for item in kept] == [reasoning]
    async with replay_server("responses_message.json") as (url, replay):
        responses = Agent(
            OpenAIResponsesModel(base_url=url, api_key="sk-test", model="gpt-4o-mini"),
            tools=TOOLS,
            memory=memory,
            options=AgentOptions(stream=False),
        )
        async with responses:
            await responses.run("Did I win?")
    (body,) = replay.bodies
    sent = body["input"]
    assert not any(key in item for item in sent for key in REASONING_KEYS if isinstance(item, dict))
    assert [item["call_id"] for item in sent if item.get("type") == "function_call"] == [
        c["id"] for c in kept[0]["tool_calls"]
    ]
    assert "Let me get your name and roll the die!" in orjson.dumps(sent).decode()
