"""``json_spans`` finds where every span closes in time linear in the text, however many spans overlap, and
still finds exactly what a scan from each bracket on its own would find."""

from __future__ import annotations

from typing import Any, SupportsIndex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentflow.runtimes.json_text import json_spans

_READS_PER_CHARACTER = 8


class TooManyReads(Exception):
    """The scanner read the text far more often than a linear scan would."""


class CountingText(str):
    """A text that counts how often it is indexed (a scanner's character reads) and stops a scan that reads
    it more than ``_READS_PER_CHARACTER`` times per character, so a quadratic scanner fails fast."""

    reads: int
    limit: int

    def __new__(cls, text: str) -> CountingText:
        counted = super().__new__(cls, text)
        counted.reads = 0
        counted.limit = _READS_PER_CHARACTER * len(text) + 64
        return counted

    def __getitem__(self, key: SupportsIndex | slice) -> str:
        self.reads += 1
        if self.reads > self.limit:
            raise TooManyReads(f"more than {self.limit} reads of a text of {len(self)} characters")
        return str.__getitem__(self, key)  # a plain str, as orjson wants


N = 20_000


@pytest.mark.parametrize(
    ("text", "options"),
    [
        ("{" * N + "]", {}),  # every span runs to the end, then does not match
        ("[" * N + "x", {"max_unclosed": N}),  # every span runs off the end of the text
        ("{[" * (N // 2) + "}", {}),
        ('{"' * N, {"max_unclosed": N}),  # brackets alternately inside and outside strings
        ("[" + "{}" * N, {"nested": True, "max_unclosed": N}),  # one long span over many closed ones
        ('{"' + '{\\"' * 64 + '"' + "{}" * N + "]", {"max_unclosed": N}),  # scans that differ, then meet
    ],
    ids=["braces", "unclosed", "mixed", "quotes", "siblings", "converging"],
)
def test_every_span_s_end_is_found_in_linear_time(text: str, options: dict[str, Any]) -> None:
    counted = CountingText(text)
    spans = list(json_spans(counted, max_spans=None, **options))
    assert spans  # each bracket of the text was tried (no span limit), in a bounded number of reads
    assert counted.reads <= counted.limit


def _reference_end(text: str, start: int) -> tuple[int, str | None]:
    """The obvious scan from one bracket (quadratic over all brackets): the oracle for the fast one."""
    closing = {"{": "}", "[": "]"}
    stack = [closing[text[start]]]
    in_string = escaped = False
    for index in range(start + 1, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in closing:
            stack.append(closing[char])
        elif char in "}]":
            if char != stack.pop():
                return index + 1, "the brackets do not match"
            if not stack:
                return index + 1, None
    return len(text), "the text ends before the bracket closes"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet='{}[]"\\ a1,:\n', max_size=40))
def test_each_span_ends_where_a_scan_from_its_own_bracket_ends(text: str) -> None:
    spans = list(json_spans(text, nested=True, max_spans=None, max_unclosed=len(text) + 1))
    assert [s.start for s in spans] == [i for i, char in enumerate(text) if char in "{["]
    for span in spans:
        end, problem = _reference_end(text, span.start)
        assert span.end == end
        if problem is not None:
            assert span.error == problem
            assert span.complete == (problem != "the text ends before the bracket closes")


def test_a_hostile_text_gets_control_characters_escaped_only_up_to_a_budget() -> None:
    # Each nested object needs its raw line breaks escaped; the budget (twice the text, plus 64 KiB) covers
    # the first two here, so a third such span is reported with orjson's complaint instead.
    body = '"' + "x\n" * 40_000 + '"'
    text = '{"a": ' * 3 + body + "}" * 3
    decoded = [span.error is None for span in json_spans(text, opening="{", nested=True)]
    assert decoded == [True, True, False]
    # One wrapper around the object a model meant is within the budget.
    assert [s.error for s in json_spans('{"a": {"code": "x\ny"}}', opening="{", nested=True)] == [None, None]
