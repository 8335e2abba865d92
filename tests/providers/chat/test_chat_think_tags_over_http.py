"""Inline ``<think>`` reasoning over real HTTP: a vLLM-style server (no reasoning parser) on 127.0.0.1.

The stream is written a byte at a time, so the tags, the SSE framing and the UTF-8 of the reasoning are cut
everywhere; the model still streams the block as reasoning and the rest as the answer. An agent run on such a
server ends with an answer and a memory free of the reasoning, which its reasoning events carry instead, and
sends no reasoning back on the next request.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from chat_local_server import LocalServer, json_reply, pieces, sse_body, sse_reply

from agentflow import UserMessage
from agentflow.agent.agent import Agent
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.options import AgentOptions
from agentflow.events import RunFinished
from agentflow.model.events import Event, ModelCompleted, ReasoningDelta, TextDelta
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.testing import Reply, ScriptedServer

REASONING = "用户问候我。\nThe user greets me; I should greet back.\n"
ANSWER = "Hello! How can I help?"

# What vLLM without ``--reasoning-parser`` streams for DeepSeek-R1: the tags are plain tokens of ``content``.
CONTENT_DELTAS = [
    "<th",
    "ink>\n",
    "用户问候我。\nThe user",
    " greets me; I should greet back.\n</",
    "think>",
    "\n\n",
    "Hello!",
    " How can I help?",
]


def vllm_stream(deltas: list[str]) -> bytes:
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "deepseek-r1"}
    chunks: list[Any] = [
        {
            **head,
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}],
        }
    ]
    chunks += [
        {
            **head,
            "choices": [
                {"index": 0, "delta": {"content": d, "reasoning_content": None}, "finish_reason": None}
            ],
        }
        for d in deltas
    ]
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    chunks.append({**head, "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 30}})
    return sse_body(*chunks)


def model_for(server: LocalServer | ScriptedServer, **options: Any) -> OpenAIChatModel:
    return OpenAIChatModel(base_url=server.base_url, api_key="sk-test", model="deepseek-r1", **options)


async def test_a_stream_written_byte_by_byte_streams_the_block_as_reasoning(server: LocalServer) -> None:
    server.add(sse_reply(pieces(vllm_stream(CONTENT_DELTAS), 1)))
    events = []
    async with model_for(server) as model, model.stream([UserMessage("hi")]) as stream:
        async for event in stream:
            events.append(event)
    reasoning = [e.text for e in events if isinstance(e, ReasoningDelta)]
    text = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(reasoning) == REASONING
    assert "".join(text) == ANSWER
    assert not any("think>" in piece for piece in [*reasoning, *text])
    completed = events[-1]
    assert isinstance(completed, ModelCompleted)
    message = completed.response.message
    assert (message.text, message.reasoning, message.reasoning_field) == (ANSWER, REASONING, None)
    assert completed.response.usage.total_tokens == 39


async def test_a_blocking_answer_has_its_block_split_off(server: LocalServer) -> None:
    content = f"<think>\n{REASONING}</think>\n\n{ANSWER}"
    server.add(
        json_reply(
            {"choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}
        )
    )
    async with model_for(server) as model:
        response = await model.chat([UserMessage("hi")])
    assert (response.message.text, response.message.reasoning) == (ANSWER, REASONING)


async def test_think_tags_none_streams_the_content_as_sent(server: LocalServer) -> None:
    server.add(sse_reply(pieces(vllm_stream(CONTENT_DELTAS), 7)))
    async with model_for(server, think_tags=None) as model:
        response = await model.stream([UserMessage("hi")]).collect()
    assert (response.message.text, response.message.reasoning) == ("".join(CONTENT_DELTAS), None)


def roll_dice() -> int:
    """Roll a six-sided die."""
    return 4


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "blocking"])
async def test_an_agent_run_keeps_the_reasoning_out_of_its_answer_and_memory(stream: bool) -> None:
    first_thought = "I should roll the die first."
    second_thought = "The die shows 4. 我应该告诉用户。"
    script = [
        Reply(text=f"<think>\n{first_thought}\n</think>\n\n", tool_calls=[("roll_dice", {})], chunk_size=3),
        Reply(text=f"<think>\n{second_thought}\n</think>\n\nYou rolled a 4.", chunk_size=3),
    ]
    memory = InMemoryMemory()
    events: list[Event] = []
    async with ScriptedServer(script) as server:
        agent = Agent(
            model_for(server), tools=[roll_dice], memory=memory, options=AgentOptions(stream=stream)
        )
        async with agent, agent.stream("Roll a die for me.") as run:
            async for event in run:
                events.append(event)
    assert [r.body.get("stream") is True for r in server.requests] == [stream, stream]

    result = run.result
    assert isinstance(events[-1], RunFinished)
    assert result.output_text == "You rolled a 4."
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert reasoning == f"{first_thought}\n{second_thought}\n"
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "You rolled a 4."
    assert not any("think>" in e.text for e in events if isinstance(e, TextDelta | ReasoningDelta))

    # Memory holds the answer and the tool call, and none of the reasoning (no field asked for it back).
    remembered = orjson.dumps(memory.items).decode()
    assert "think>" not in remembered
    assert first_thought not in remembered
    assert "我应该" not in remembered
    assert "You rolled a 4." in remembered
    # The next request carries the tool-call turn without the reasoning, in any form.
    (echoed,) = [m for m in server.requests[1].body["messages"] if m["role"] == "assistant"]
    assert echoed["content"] is None
    assert "reasoning_content" not in echoed
    assert "reasoning" not in echoed
    assert [c["function"]["name"] for c in echoed["tool_calls"]] == ["roll_dice"]
