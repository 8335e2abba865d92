"""Finding JSON values in a model's free text (``agentflow.runtimes.json_text``), shared by CodeAct's protocol
reader and the model-backed planner."""

from __future__ import annotations

import pytest

from agentflow.runtimes.json_text import JsonSpan, json_spans


def values(text: str, *, opening: str = "{[", nested: bool = False) -> list[object]:
    return [span.value for span in json_spans(text, opening=opening, nested=nested) if span.error is None]


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1}',
        '```json\n{"a": 1}\n```',
        'Sure! Here it is:\n\n{"a": 1}\n\nAnything else?',
        '{not json} then {"a": 1}',
        'An unclosed { brace, then {"a": 1}',
        'A stray ] and } first, then {"a": 1}',
    ],
    ids=["bare", "fenced", "prose", "invalid-first", "unclosed-first", "stray-closers"],
)
def test_a_value_is_found_whatever_surrounds_it(text: str) -> None:
    assert values(text) == [{"a": 1}]


def test_objects_and_arrays_are_found_left_to_right() -> None:
    assert values('[1, 2] and {"b": [3]} and ["c"]') == [[1, 2], {"b": [3]}, ["c"]]


def test_opening_braces_only_skips_arrays() -> None:
    assert values('[1, 2] and {"b": [3]}', opening="{") == [{"b": [3]}]


def test_nested_values_are_offered_only_when_asked() -> None:
    text = '{"wrapper": {"type": "final"}}'
    assert values(text) == [{"wrapper": {"type": "final"}}]
    assert values(text, nested=True) == [{"wrapper": {"type": "final"}}, {"type": "final"}]


def test_an_invalid_span_is_skipped_and_the_values_inside_it_are_still_found() -> None:
    assert values('{"steps": ["a", "b"], oops}') == [["a", "b"]]


def test_brackets_quotes_and_escapes_inside_strings_do_not_count() -> None:
    text = r'{"code": "d = {\"a\": [1, \"]\"]}\nprint(\"}\")"}'
    assert values(text) == [{"code": 'd = {"a": [1, "]"]}\nprint("}")'}]


def test_raw_control_characters_in_strings_are_read_as_their_escapes() -> None:
    assert values('{"code": "x = 1\n\tx += 1"}') == [{"code": "x = 1\n\tx += 1"}]


def test_each_span_says_what_is_wrong_with_it() -> None:
    spans = list(json_spans('{"a": } [1} {"b": 2'))
    assert [(s.start, s.complete) for s in spans] == [(0, True), (8, True), (12, False)]
    assert spans[0].error is not None  # orjson's message
    assert spans[1] == JsonSpan(8, 11, error="the brackets do not match")
    assert spans[2] == JsonSpan(12, 19, error="the text ends before the bracket closes", complete=False)


def test_the_work_is_bounded_on_bracket_heavy_text() -> None:
    spans = list(json_spans("{" * 50_000 + "x"))
    assert len(spans) == 4  # max_unclosed: each of these scans to the end of the text, then the search stops
    assert not any(s.complete for s in spans)
    assert len(list(json_spans("[x] " * 1_000))) == 64  # max_spans
    assert len(list(json_spans("[x] " * 1_000, max_spans=None))) == 1_000


def test_text_without_brackets_has_no_spans() -> None:
    assert list(json_spans("The answer is 42.")) == []
    assert list(json_spans("")) == []
