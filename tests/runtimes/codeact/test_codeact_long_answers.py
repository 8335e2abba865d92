"""A runaway model answer (a megabyte of braces) is read in bounded work: only its first
``MAX_ANSWER_CHARS`` characters, in time linear in them, and the reason says what was not read."""

from __future__ import annotations

from test_json_text_linear_scan import CountingText

from agentflow.runtimes.codeact_protocol import MAX_ANSWER_CHARS, FinalMessage, NotProtocol, parse_answer


def test_a_megabyte_of_braces_is_refused_with_a_reason_that_says_what_was_read() -> None:
    # Counted: a reader that scans the whole answer again for each candidate brace stops at once.
    text = CountingText("{" * 1_000_000 + "]")
    answer = parse_answer(text)
    assert isinstance(answer, NotProtocol)
    assert answer.text == text
    assert answer.reason == (
        "the JSON object is not complete (no closing brace) "
        f"(only the first {MAX_ANSWER_CHARS} of its 1000001 characters were read)"
    )


def test_a_protocol_object_at_the_start_of_a_long_answer_is_read() -> None:
    text = '{"type": "final", "output": "ok"}' + " and on" * 200_000
    assert parse_answer(text) == FinalMessage("ok")


def test_nothing_after_the_first_characters_is_read() -> None:
    answer = parse_answer("x" * MAX_ANSWER_CHARS + '{"type": "final", "output": "late"}')
    assert isinstance(answer, NotProtocol)
    assert answer.reason.startswith("the answer holds no JSON object (only the first 200000 of its")


def test_a_code_object_cut_at_the_read_limit_is_seen_after_a_stray_brace_in_the_prose() -> None:
    code = '{"type": "code", "code": "x = 1\\n' + "# filler\\n" * (MAX_ANSWER_CHARS // 10) + '"}'
    answer = parse_answer("Note {this is not JSON} first.\n" + code)
    assert isinstance(answer, NotProtocol)
    assert answer.cut_code
