"""Inline ``<think>…</think>`` reasoning, split off the answer by the Chat codecs (blocking and streamed).

Servers without a reasoning parser (vLLM, SGLang, older Ollama, LM Studio, llama.cpp, R1 / QwQ / Qwen3
deployments) put the reasoning at the start of ``content`` inside think tags. The codecs split a leading block
off as the reasoning, leave content that merely mentions a tag alone, and read a stream exactly as the same
content answered in one body, however the content is cut into deltas: the tags themselves split across deltas
at every character offset included.
"""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest

from agentflow.http.sse import SseEvent
from agentflow.model.errors import StreamCutOffError
from agentflow.model.events import (
    ModelCompleted,
    ModelEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallReady,
    ToolCallStarted,
)
from agentflow.model.messages import AiMessage
from agentflow.model.response import ChatResponse, FinishReason
from agentflow.providers.openai.chat_codec import decode_chat_response
from agentflow.providers.openai.chat_model import OpenAIChatModel
from agentflow.providers.openai.chat_stream import ChatStreamDecoder
from agentflow.providers.openai.think_tags import DEFAULT_THINK_TAGS, ThinkTags, ThinkTagSplitter

GREETING = "<think>\nThe user greets me. I should greet back.\n</think>\n\nHello! How can I help?"

# content → (text, reasoning) of the answer it makes.
CASES: dict[str, tuple[str, tuple[str | None, str | None]]] = {
    "block-then-answer": (GREETING, ("Hello! How can I help?", "The user greets me. I should greet back.\n")),
    "whitespace-before-the-block": (" \n\n<think>Hm.</think>\nHi", ("Hi", "Hm.")),
    "empty-block (Qwen3, thinking off)": ("<think>\n\n</think>\n\nHello", ("Hello", None)),
    "block-without-line-breaks": ("<think>a</think>b", ("b", "a")),
    "only-the-answer's-leading-line-breaks-go": ("<think>a</think>\r\n\n  - item", ("  - item", "a")),
    "unclosed: all reasoning": ("<think>\nStill weighing 2+2 and", (None, "Still weighing 2+2 and")),
    "unclosed, ending in part of the close tag": ("<think>2+2</thi", (None, "2+2</thi")),
    "a block and nothing after it": ("<think>a</think>\n\n", (None, "a")),
    "an empty block and nothing after it": ("<think></think>", (None, None)),
    "a second block is answer text": ("<think>a</think>\n\nb <think>c</think>", ("b <think>c</think>", "a")),
    "a mention is not a block": (
        "Wrap reasoning in <think> tags.",
        ("Wrap reasoning in <think> tags.", None),
    ),
    "a block after text is not split": ("Sure. <think>x</think> y", ("Sure. <think>x</think> y", None)),
    "a longer tag is not the tag": ("<thinking>x</thinking>y", ("<thinking>x</thinking>y", None)),
    "a partial tag alone is text": ("<thi", ("<thi", None)),
    "a close tag alone is text": ("</think>\n\nHi", ("</think>\n\nHi", None)),
    "multibyte": ("<think>思考：2+2=4。</think>\n\n答案是 4。", ("答案是 4。", "思考：2+2=4。")),
    "plain answer": ("Hello!", ("Hello!", None)),
    "whitespace only": ("\n\n", ("\n\n", None)),
}


def answer(**message: Any) -> dict[str, Any]:
    return {"choices": [{"message": {"role": "assistant", **message}, "finish_reason": "stop"}]}


def chunk(delta: dict[str, Any], finish: str | None = None) -> SseEvent:
    return SseEvent(
        orjson.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}).decode()
    )


def run_stream(
    deltas: list[dict[str, Any]], *, finish: str = "stop", think_tags: ThinkTags | None = DEFAULT_THINK_TAGS
) -> tuple[list[ModelEvent], ChatResponse]:
    """Every event of a stream of ``deltas`` (then a finish chunk and ``[DONE]``), and its response."""
    decoder = ChatStreamDecoder(think_tags=think_tags)
    events: list[ModelEvent] = []
    for delta in deltas:
        events.extend(decoder.feed(chunk(delta)))
    events.extend(decoder.feed(chunk({}, finish)))
    decoder.feed(SseEvent("[DONE]"))
    events.extend(decoder.finish())
    completed = events[-1]
    assert isinstance(completed, ModelCompleted)
    return events, completed.response


def streamed(pieces: list[str], **kwargs: Any) -> tuple[list[ModelEvent], ChatResponse]:
    return run_stream([{"content": piece} for piece in pieces], **kwargs)


def joined(events: list[ModelEvent], kind: type[TextDelta] | type[ReasoningDelta]) -> str | None:
    texts = [e.text for e in events if isinstance(e, kind)]
    return "".join(texts) if texts else None


def cuts(content: str, *points: int) -> list[str]:
    """``content`` cut at ``points`` (empty pieces dropped: a server sends none)."""
    bounds = [0, *points, len(content)]
    return [content[a:b] for a, b in itertools.pairwise(bounds) if content[a:b]]


# --- blocking -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("content", "expected"), CASES.values(), ids=CASES.keys())
def test_a_blocking_answer_opening_with_a_think_block_has_it_split_off(
    content: str, expected: tuple[str | None, str | None]
) -> None:
    message = decode_chat_response(answer(content=content)).message
    assert (message.text, message.reasoning) == expected
    assert message.reasoning_field is None  # inline reasoning names no field: nothing is sent back


def test_a_blocking_answer_keeps_its_think_block_when_splitting_is_off() -> None:
    message = decode_chat_response(answer(content=GREETING), think_tags=None).message
    assert (message.text, message.reasoning) == (GREETING, None)


def test_a_think_block_before_tool_calls_leaves_no_text() -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "roll", "arguments": "{}"}}
    payload = answer(content="<think>\nI need a die.\n</think>\n\n", tool_calls=[call])
    message = decode_chat_response(payload).message
    assert message.text is None
    assert message.reasoning == "I need a die.\n"
    assert [c.name for c in message.tool_calls] == ["roll"]


def test_a_blocking_reasoning_field_with_text_is_not_counted_twice_with_the_block() -> None:
    payload = answer(reasoning_content="2+2 is 4.", content="<think>2+2 is 4.</think>\n\n4")
    message = decode_chat_response(payload).message
    assert (message.text, message.reasoning, message.reasoning_field) == (
        "4",
        "2+2 is 4.",
        "reasoning_content",
    )


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"reasoning_content": ""}, ("2+2", None)),  # the block's reasoning is not sent back
        ({"reasoning_content": None}, ("2+2", None)),
        ({"reasoning": "other"}, ("other", "reasoning")),
    ],
)
def test_an_empty_reasoning_field_leaves_the_block_as_the_reasoning(
    fields: dict[str, Any], expected: tuple[str, str | None]
) -> None:
    message = decode_chat_response(answer(content="<think>2+2</think>\n\n4", **fields)).message
    assert message.text == "4"
    assert (message.reasoning, message.reasoning_field) == expected


def test_other_tags_can_be_named() -> None:
    payload = answer(content="[THINK]Hm.[/THINK]\n\nHi <think>")
    message = decode_chat_response(payload, think_tags=("[THINK]", "[/THINK]")).message
    assert (message.text, message.reasoning) == ("Hi <think>", "Hm.")


# --- streamed -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("content", "expected"), CASES.values(), ids=CASES.keys())
def test_a_stream_cut_at_every_offset_reads_as_the_blocking_answer(
    content: str, expected: tuple[str | None, str | None]
) -> None:
    for point in range(len(content) + 1):
        events, response = streamed(cuts(content, point))
        assert (response.message.text, response.message.reasoning) == expected, point
        assert (joined(events, TextDelta), joined(events, ReasoningDelta)) == expected, point


def test_a_stream_cut_at_every_pair_of_offsets_reads_as_the_blocking_answer() -> None:
    # Both tags split, each at every offset: the open tag in the first cut, the close tag in the second…
    expected = ("Hello! How can I help?", "The user greets me. I should greet back.\n")
    for first, second in itertools.combinations(range(1, len(GREETING)), 2):
        events, response = streamed(cuts(GREETING, first, second))
        assert (response.message.text, response.message.reasoning) == expected, (first, second)
        assert (joined(events, TextDelta), joined(events, ReasoningDelta)) == expected, (first, second)


def test_a_stream_of_one_character_deltas_reads_as_the_blocking_answer() -> None:
    for content, expected in CASES.values():
        _, response = streamed(list(content))
        assert (response.message.text, response.message.reasoning) == expected, content


def test_reasoning_events_come_before_the_answer_and_carry_no_tags() -> None:
    events, _ = streamed(
        ["<thi", "nk>\nThe user greets", " me. I should greet back.\n</th", "ink>\n", "\nHello!"]
    )
    kinds = [type(e).__name__ for e in events if isinstance(e, TextDelta | ReasoningDelta)]
    assert kinds == ["ReasoningDelta", "ReasoningDelta", "TextDelta"]
    assert not any("<" in e.text for e in events if isinstance(e, TextDelta | ReasoningDelta))


def test_an_ordinary_first_delta_is_passed_on_at_once() -> None:
    decoder = ChatStreamDecoder()
    assert decoder.feed(chunk({"content": "Hi"})) == [TextDelta("Hi")]
    # Decided at the first delta: a tag later on is answer text, passed on as it comes.
    assert decoder.feed(chunk({"content": "<think>"})) == [TextDelta("<think>")]


def test_no_more_is_held_back_than_could_still_be_a_tag() -> None:
    open_tag, close_tag = DEFAULT_THINK_TAGS
    for content, _ in CASES.values():
        splitter = ThinkTagSplitter()
        fed = ""
        for character in content:
            fed += character
            splitter.feed(character)
            held = "".join(piece for _, piece in splitter.pending())
            leading = len(fed) - len(fed.lstrip())
            assert len(held) <= max(leading + len(open_tag) - 1, len(close_tag) - 1), (content, fed)
            if splitter.done:
                break


def test_a_stream_ended_inside_the_block_was_all_reasoning() -> None:
    events, response = streamed(["<think>\nCounting to a mil", "lion: 1, 2, 3</thi"], finish="length")
    assert response.finish_reason is FinishReason.LENGTH
    assert response.message.text is None
    assert response.message.reasoning == "Counting to a million: 1, 2, 3</thi"
    assert joined(events, ReasoningDelta) == response.message.reasoning


def test_a_cut_off_stream_inside_the_block_keeps_the_held_back_part_in_its_partial() -> None:
    decoder = ChatStreamDecoder()
    decoder.feed(chunk({"content": "<think>Mid-thought </th"}))
    with pytest.raises(StreamCutOffError) as cut:
        decoder.finish()
    partial = cut.value.partial
    assert isinstance(partial, ChatResponse)
    assert (partial.message.text, partial.message.reasoning) == (None, "Mid-thought </th")


def test_a_streamed_think_block_before_tool_calls_leaves_no_text() -> None:
    deltas: list[dict[str, Any]] = [
        {"role": "assistant", "content": ""},
        {"content": "<think>\nI need"},
        {"content": " a die.\n</think>\n\n"},
        {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "roll"}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]},
    ]
    events, response = run_stream(deltas, finish="tool_calls")
    assert response.message.text is None
    assert response.message.reasoning == "I need a die.\n"
    assert [c.name for c in response.message.tool_calls] == ["roll"]
    order = [type(e) for e in events if isinstance(e, ReasoningDelta | ToolCallStarted | ToolCallReady)]
    assert order == [ReasoningDelta, ReasoningDelta, ToolCallStarted, ToolCallReady]


def test_an_unclosed_block_before_tool_calls_is_all_reasoning() -> None:
    deltas: list[dict[str, Any]] = [
        {"content": "<think>I need a die</"},
        {
            "tool_calls": [
                {"index": 0, "id": "c", "type": "function", "function": {"name": "roll", "arguments": ""}}
            ]
        },
    ]
    events, response = run_stream(deltas, finish="tool_calls")
    assert (response.message.text, response.message.reasoning) == (None, "I need a die</")
    assert joined(events, ReasoningDelta) == "I need a die</"
    assert [c.name for c in response.message.tool_calls] == ["roll"]


@pytest.mark.parametrize(
    "deltas",
    [
        [
            {"reasoning_content": "2+2 "},
            {"reasoning_content": "is 4."},
            {"content": "<think>2+2 is 4.</think>\n\n4"},
        ],
        [{"reasoning_content": "2+2 is 4.", "content": "<think>2+2 is 4."}, {"content": "</think>\n\n4"}],
        [
            {"reasoning": "2+2 is 4."},
            {"content": "<think>"},
            {"content": "2+2 is 4.</"},
            {"content": "think>4"},
        ],
    ],
    ids=["field-first", "same-delta", "openrouter-field"],
)
def test_a_streamed_reasoning_field_is_not_counted_twice_with_the_block(deltas: list[dict[str, Any]]) -> None:
    events, response = run_stream(deltas)
    assert (response.message.text, response.message.reasoning) == ("4", "2+2 is 4.")
    assert joined(events, ReasoningDelta) == "2+2 is 4."
    assert joined(events, TextDelta) == "4"


def test_an_empty_reasoning_field_opener_leaves_the_streamed_block_as_the_reasoning() -> None:
    deltas = [
        {"role": "assistant", "content": None, "reasoning_content": ""},
        {"content": "<think>2+2</think>4"},
    ]
    _, response = run_stream(deltas)
    message = response.message
    assert (message.text, message.reasoning, message.reasoning_field) == ("4", "2+2", None)


def test_a_stream_keeps_its_think_block_when_splitting_is_off() -> None:
    events, response = streamed(cuts(GREETING, 3, 40), think_tags=None)
    assert (response.message.text, response.message.reasoning) == (GREETING, None)
    assert not any(isinstance(e, ReasoningDelta) for e in events)


def test_a_stream_reads_other_tags_when_named() -> None:
    _, response = streamed(["[THI", "NK]Hm.[/TH", "INK]\n\nHi"], think_tags=("[THINK]", "[/THINK]"))
    assert (response.message.text, response.message.reasoning) == ("Hi", "Hm.")


def test_content_parts_after_held_whitespace_keep_it_as_text() -> None:
    deltas: list[dict[str, Any]] = [{"content": "\n"}, {"content": [{"type": "text", "text": "Hi"}]}]
    _, response = run_stream(deltas)
    assert (response.message.text, response.message.reasoning) == ("\nHi", None)


@pytest.mark.parametrize(("content", "expected"), CASES.values(), ids=CASES.keys())
def test_a_blocking_answer_and_its_stream_agree(
    content: str, expected: tuple[str | None, str | None]
) -> None:
    blocking = decode_chat_response(answer(content=content)).message
    _, response = streamed(cuts(content, len(content) // 2))
    assert response.message == AiMessage(blocking.text, (), blocking.reasoning)


# --- the option -----------------------------------------------------------------------------------


def test_the_model_splits_think_tags_by_default_and_takes_none_or_another_pair() -> None:
    assert OpenAIChatModel(model="m").think_tags == ("<think>", "</think>")
    assert OpenAIChatModel(model="m", think_tags=None).think_tags is None
    assert OpenAIChatModel(model="m", think_tags=["<reasoning>", "</reasoning>"]).think_tags == (  # type: ignore[arg-type]
        "<reasoning>",
        "</reasoning>",
    )


@pytest.mark.parametrize(
    ("tags", "error"),
    [
        ("<think>", TypeError),
        (("<think>",), TypeError),
        (("<think>", 1), TypeError),
        (("<think>", ""), ValueError),
        (("<t>", "<t>"), ValueError),
        ((" <think>", "</think>"), ValueError),
    ],
)
def test_a_malformed_think_tags_option_fails_at_construction(tags: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="think"):
        OpenAIChatModel(model="m", think_tags=tags)
