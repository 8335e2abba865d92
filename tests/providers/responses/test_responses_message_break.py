"""Separate assistant messages in one response (a gpt-5 "commentary" preamble, then the answer) are joined
by a blank line in ``output_text``, and a stream sends that break as a ``TextDelta`` of its own, so the
deltas add up to the same text; the parts of one message stay joined as they are. Glued together, the
preamble ran into the answer (``'Let me answer that.{"name": "Paris"}'``)."""

from __future__ import annotations

from typing import Any

import pytest
from responses_support import run_decoder, sse_body

from agentflow.model.events import ModelCompleted, TextDelta
from agentflow.providers.openai.responses_codec import build_response


def _message(*texts: str, id: str = "msg_1") -> dict[str, Any]:
    return {
        "id": id,
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []} for text in texts],
    }


def _refusal_only(id: str) -> dict[str, Any]:
    return {
        "id": id,
        "type": "message",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "no"}],
    }


def _envelope(output: list[dict[str, Any]], status: str = "completed") -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "status": status, "model": "gpt-5", "output": output}


@pytest.mark.parametrize(
    ("output", "text"),
    [
        (
            [_message("Let me answer that.", id="a"), _message('{"name": "Paris"}', id="b")],
            'Let me answer that.\n\n{"name": "Paris"}',
        ),
        ([_message("Hel", "lo")], "Hello"),  # parts of one message: as they are
        ([_message("A", id="a"), _refusal_only("r"), _message("", id="e"), _message("B", id="b")], "A\n\nB"),
        ([], ""),
    ],
)
def test_output_text_separates_messages_by_a_blank_line(output: list[dict[str, Any]], text: str) -> None:
    assert build_response(_envelope(output), output).output_text == text


def _streamed(*messages: tuple[str, list[str]]) -> list[dict[str, Any]]:
    """A faithful stream: each message added, its text deltas, done; then completed with the output."""
    events: list[dict[str, Any]] = [{"type": "response.created", "response": _envelope([], "in_progress")}]
    output = []
    for index, (item_id, deltas) in enumerate(messages):
        item = _message("".join(deltas), id=item_id)
        output.append(item)
        events.append(
            {"type": "response.output_item.added", "output_index": index, "item": {**item, "content": []}}
        )
        for delta in deltas:
            events.append(
                {
                    "type": "response.output_text.delta",
                    "item_id": item_id,
                    "output_index": index,
                    "content_index": 0,
                    "delta": delta,
                }
            )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": _envelope(output)})
    return events


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (
            (("a", ["Let me ", "answer that."]), ("b", ['{"name": ', '"Paris"}'])),
            'Let me answer that.\n\n{"name": "Paris"}',
        ),
        (
            (("a", ["One."]), ("b", ["", "Two."]), ("c", ["Three."])),
            "One.\n\nTwo.\n\nThree.",
        ),  # the break waits
        ((("a", [""]), ("b", ["Only."])), "Only."),  # nothing before it: no break
        ((("a", ["Same", " message"]),), "Same message"),
    ],
)
def test_streamed_text_deltas_add_up_to_output_text(
    messages: tuple[tuple[str, list[str]], ...], expected: str
) -> None:
    events, error = run_decoder(sse_body(*_streamed(*messages)))
    assert error is None
    text = "".join(event.text for event in events if isinstance(event, TextDelta))
    completed = events[-1]
    assert isinstance(completed, ModelCompleted)
    assert completed.response.output_text == text == expected


def test_a_message_without_deltas_is_caught_up_after_the_break() -> None:
    first, second = _message("Preamble.", id="a"), _message("Answer.", id="b")
    body = sse_body(
        {"type": "response.output_item.done", "output_index": 0, "item": first},
        {"type": "response.output_item.done", "output_index": 1, "item": second},
        {"type": "response.completed", "response": _envelope([first, second])},
    )
    events, error = run_decoder(body)
    assert error is None
    assert [event.text for event in events if isinstance(event, TextDelta)] == [
        "Preamble.",
        "\n\n",
        "Answer.",
    ]


def test_a_cut_off_partial_keeps_each_message_text_apart() -> None:
    events = _streamed(("a", ["One."]), ("b", ["Two"]))[:-2]  # cut before message b is done
    _, error = run_decoder(sse_body(*events))
    partial = getattr(error, "partial", None)
    assert partial is not None
    assert [item["content"][0]["text"] for item in partial.output] == ["One.", "Two"]
    assert partial.output_text == "One.\n\nTwo"
