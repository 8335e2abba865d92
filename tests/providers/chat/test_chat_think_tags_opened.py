"""A think block the chat template opened in the prompt: ``think_tags=("", "</think>")``.

DeepSeek-R1 and its distills end the generation prompt with ``<think>\\n``, so a server without a reasoning
parser answers with content that starts *inside* the block and has only the close tag:
``"The user greets me.\\n</think>\\n\\nHello!"``. An empty open tag says so: everything up to the close tag is
the reasoning, and a stream reads exactly as the same content answered in one body, however it is cut.
"""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest
from chat_local_server import LocalServer, json_reply, sse_body, sse_reply

from agentflow.http.sse import SseEvent
from agentflow.model.events import ModelCompleted, ModelEvent, ReasoningDelta, TextDelta
from agentflow.model.messages import UserMessage
from agentflow.model.response import ChatResponse
from agentflow.providers.openai.chat_codec import decode_chat_response
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.chat_stream import ChatStreamDecoder
from agentflow.providers.openai.think_tags import ThinkTags

OPENED: ThinkTags = ("", "</think>")

# content → (text, reasoning)
CASES: dict[str, tuple[str, tuple[str | None, str | None]]] = {
    "reasoning-then-answer": (
        "The user greets me.\n</think>\n\nHello! How can I help?",
        ("Hello! How can I help?", "The user greets me.\n"),
    ),
    "leading whitespace is dropped": ("\n\nHm.</think>\nHi", ("Hi", "Hm.")),
    "an empty block": ("\n\n</think>\n\nHello", ("Hello", None)),
    "no close tag: all reasoning (the token limit)": ("Still weighing 2+2", (None, "Still weighing 2+2")),
    "a later close tag is answer text": ("a</think>b </think>", ("b </think>", "a")),
    "an open tag inside is reasoning text": ("<think>a</think>b", ("b", "<think>a")),
    "multibyte": ("思考：2+2=4。</think>\n\n答案是 4。", ("答案是 4。", "思考：2+2=4。")),
}


def answer(content: str) -> dict[str, Any]:
    return {"choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}


def streamed(pieces: list[str]) -> tuple[list[ModelEvent], ChatResponse]:
    decoder = ChatStreamDecoder(think_tags=OPENED)
    events: list[ModelEvent] = []
    for piece in pieces:
        payload = {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
        events.extend(decoder.feed(SseEvent(orjson.dumps(payload).decode())))
    done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    events.extend(decoder.feed(SseEvent(orjson.dumps(done).decode())))
    decoder.feed(SseEvent("[DONE]"))
    events.extend(decoder.finish())
    completed = events[-1]
    assert isinstance(completed, ModelCompleted)
    return events, completed.response


def joined(events: list[ModelEvent], kind: type[TextDelta] | type[ReasoningDelta]) -> str | None:
    texts = [e.text for e in events if isinstance(e, kind)]
    return "".join(texts) if texts else None


@pytest.mark.parametrize(("content", "expected"), CASES.values(), ids=CASES.keys())
def test_content_up_to_the_close_tag_is_the_reasoning(
    content: str, expected: tuple[str | None, str | None]
) -> None:
    message = decode_chat_response(answer(content), think_tags=OPENED).message
    assert (message.text, message.reasoning) == expected


@pytest.mark.parametrize(("content", "expected"), CASES.values(), ids=CASES.keys())
def test_a_stream_cut_at_every_pair_of_offsets_reads_as_the_blocking_answer(
    content: str, expected: tuple[str | None, str | None]
) -> None:
    for first, second in itertools.combinations(range(len(content) + 1), 2):
        bounds = [0, first, second, len(content)]
        pieces = [content[a:b] for a, b in itertools.pairwise(bounds) if content[a:b]]
        events, response = streamed(pieces)
        assert (response.message.text, response.message.reasoning) == expected, pieces
        assert (joined(events, TextDelta), joined(events, ReasoningDelta)) == expected, pieces


def test_the_default_tags_leave_such_content_as_the_answer() -> None:
    content = "The user greets me.\n</think>\n\nHello!"
    assert decode_chat_response(answer(content)).message.text == content


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "blocking"])
async def test_the_model_option_over_http(server: LocalServer, stream: bool) -> None:
    content = "I should greet back.\n</think>\n\nHello!"
    if stream:
        chunks = [
            {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
            for piece in ("I should greet", " back.\n</thi", "nk>\n\nHel", "lo!")
        ]
        chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        server.add(sse_reply([sse_body(*chunks)]))
    else:
        server.add(json_reply(answer(content)))
    model = OpenAIChatModel(base_url=server.base_url, api_key="sk", model="r1-distill", think_tags=OPENED)
    async with model:
        if stream:
            async with model.stream([UserMessage("Hi")]) as events:
                response = await events.collect()
        else:
            response = await model.chat([UserMessage("Hi")])
    assert (response.message.text, response.message.reasoning) == ("Hello!", "I should greet back.\n")
    assert model.think_tags == OPENED
