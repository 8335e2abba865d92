"""A blocking answer is the choice whose ``index`` is 0, as in a stream, whatever order ``choices`` come in
(``n > 1``); a server that numbers none 0 still has its first choice read."""

from __future__ import annotations

from typing import Any

from agentflow.providers.openai.chat_codec import decode_chat_response


def choice(index: Any, text: str) -> dict[str, Any]:
    return {"index": index, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}


def test_the_choice_with_index_0_is_the_answer_whatever_its_position() -> None:
    payload = {"choices": [choice(1, "second"), choice(0, "first")]}
    assert decode_chat_response(payload).message.text == "first"


def test_choices_in_order_and_without_an_index_read_the_first() -> None:
    assert decode_chat_response({"choices": [choice(0, "a"), choice(1, "b")]}).message.text == "a"
    plain = [{"message": {"role": "assistant", "content": "a"}}, {"message": {"content": "b"}}]
    assert decode_chat_response({"choices": plain}).message.text == "a"


def test_without_a_choice_0_the_first_choice_is_read() -> None:
    assert decode_chat_response({"choices": [choice(2, "x"), choice(3, "y")]}).message.text == "x"
