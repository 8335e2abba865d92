"""``PartialJson``: a JSON value read while it is written, fed in pieces split anywhere.

The properties, over realistic answers and generated values, split at every point and in random pieces: the
value read once the whole text is in equals ``json.loads`` of the JSON (orjson's, exact for large integers);
every value read before is a prefix of it (``is_prefix``), and each one a prefix of the next.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentflow.exact_json import loads as exact_loads
from agentflow.runtimes.partial_json import (
    MAX_CUTS,
    MAX_DEPTH,
    MAX_RESTARTS,
    NO_VALUE,
    PartialJson,
    is_prefix,
)

REPORT = {
    "title": 'Quarterly report: "Q3" \\ results',
    "sections": [
        {
            "heading": f"Section {i}",
            "body": "Lorem ipsum dolor sit amet, café ☕ 😀\n\ttabbed",
            "score": i * 1.5,
        }
        for i in range(3)
    ],
    "ratios": [-0.5, 1e-3, 2.5e10, 0, -7],
    "flags": {"draft": False, "final": True, "reviewer": None},
    "empty": {"list": [], "object": {}, "string": ""},
    "id": 123456789012345678901234567890,
}
CITIES = [{"name": "Paris", "population": 2102650}, {"name": "Lyon", "population": 522250}]


def texts() -> Iterator[tuple[str, Any]]:
    """Realistic answers: compact or indented, ASCII-escaped or not, bare, in prose and a fence, after a think
    block."""
    for value in (REPORT, CITIES, {"result": [1, 2, 3]}):
        for indent in (None, 2):
            for ascii_only in (True, False):
                text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
                whole = exact_loads(text)
                yield text, whole
                yield f"Here you go:\n```json\n{text}\n```\nAnything else?", whole
                yield f'<think>\nMaybe {{"draft": [1, 2]}}? No.\n</think>\n\n{text}', whole


def read_in_pieces(text: str, cuts: list[int]) -> tuple[PartialJson, list[Any]]:
    reader = PartialJson()
    values = []
    start = 0
    for end in [*cuts, len(text)]:
        reader.feed(text[start:end])
        start = end
        value = reader.value()
        if value is not NO_VALUE:
            values.append(value)
    return reader, values


def check(text: str, whole: Any, cuts: list[int]) -> None:
    reader, values = read_in_pieces(text, cuts)
    assert reader.complete
    assert values[-1] == whole
    for before, after in itertools.pairwise(values):
        assert is_prefix(before, after), (before, after)
    for value in values:
        assert is_prefix(value, whole), value


@pytest.mark.parametrize(("text", "whole"), list(texts()))
def test_every_split_point_reads_prefixes_of_the_whole(text: str, whole: Any) -> None:
    for size in (1, 2, 3, 5, 8, 13):
        check(text, whole, list(range(size, len(text), size)))
    # Two pieces, split anywhere.
    reader = PartialJson()
    for cut in range(1, len(text)):
        reader = PartialJson()
        reader.feed(text[:cut])
        partial = reader.value()
        if partial is not NO_VALUE:
            assert is_prefix(partial, whole), (text[:cut], partial)
        reader.feed(text[cut:])
        assert reader.value() == whole


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    value=st.one_of(st.lists(_JSON, max_size=4), st.dictionaries(st.text(max_size=6), _JSON, max_size=4)),
    indent=st.sampled_from([None, 1]),
    ascii_only=st.booleans(),
    data=st.data(),
)
def test_generated_values_in_random_pieces(
    value: Any, indent: int | None, ascii_only: bool, data: Any
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    try:
        whole = exact_loads(text)
    except orjson.JSONDecodeError:  # lone surrogates that hypothesis's text may hold: not JSON to orjson
        return
    cuts = sorted(set(data.draw(st.lists(st.integers(min_value=1, max_value=max(1, len(text) - 1))))))
    check(text, whole, cuts)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1, "b": 12', {"a": 1}),  # a number still being written
        ('{"a": -', {}),
        ('{"a": 1.5e', {}),
        ('{"a": [12]', {"a": [12]}),
        ("[1, 2", [1]),
        ("[1, 2 ", [1, 2]),  # ended by whitespace
        ('{"a": tr', {}),  # a partial literal
        ('{"a": true', {"a": True}),
        ('{"a": nul', {}),
        ('{"a": 1, "b', {"a": 1}),  # a key being written
        ('{"a": 1, "b"', {"a": 1}),
        ('{"a": 1, "b": ', {"a": 1}),
        ('{"a": 1,', {"a": 1}),
        ('{"a": "Par', {"a": "Par"}),  # strings are kept
        ('{"a": "x\\', {"a": "x"}),  # a backslash alone
        ('{"a": "x\\u00', {"a": "x"}),  # an escape being written
        ('{"a": "x\\u00e9', {"a": "xé"}),
        ('{"a": "x\\ud83d', {"a": "x"}),  # a high surrogate waits for its pair
        ('{"a": "x\\ud83d\\ude', {"a": "x"}),
        ('{"a": "x\\ud83d\\ude00', {"a": "x😀"}),
        ('{"a": [{"b": [', {"a": [{"b": []}]}),
        ('{"a": {}, "b": [[]', {"a": {}, "b": [[]]}),
        ('{"a": "line\none', {"a": "line\none"}),  # a raw line break, as parse reads it
        ("{", {}),
    ],
)
def test_what_is_left_out_and_what_is_kept(text: str, expected: Any) -> None:
    for size in (1, len(text)):
        reader = PartialJson()
        for start in range(0, len(text), size):
            reader.feed(text[start : start + size])
        assert reader.value() == expected
        assert not reader.complete


def test_nothing_before_a_bracket_is_a_value() -> None:
    reader = PartialJson()
    assert reader.value() is NO_VALUE
    assert reader.snapshot() is None
    reader.feed("Sure, here is the JSON: ```json\n")
    assert reader.value() is NO_VALUE
    reader.feed("{")
    assert reader.value() == {}


def test_the_version_changes_exactly_when_the_value_may() -> None:
    reader = PartialJson()
    reader.feed('{"a": 1')
    version = reader.version
    reader.feed("2")  # still a number being written
    assert reader.version == version
    reader.feed(",")
    assert reader.version != version
    version = reader.version
    reader.feed(' "b')  # a key being written
    assert reader.version == version
    reader.feed('": "x')
    assert reader.version != version


def test_a_bracket_in_prose_is_passed_over() -> None:
    reader = PartialJson()
    reader.feed("Use {curly braces} as ")
    assert reader.value() is NO_VALUE
    reader.feed('asked: {"a": [1')
    assert reader.value() == {"a": []}
    reader.feed("]}")
    assert reader.value() == {"a": [1]}
    assert reader.complete


def test_a_later_value_wins_once_it_holds_something_and_a_false_one_does_not() -> None:
    reader = PartialJson()
    reader.feed('Example: {"a": 1}. Answer: {')
    assert reader.value() == {"a": 1}  # an empty later value does not hide the complete one
    reader.feed('"b": 2')
    assert reader.value() == {"a": 1}  # still empty: "2" may go on
    reader.feed(", ")
    assert reader.value() == {"b": 2}
    assert not reader.complete
    reader = PartialJson()
    reader.feed('{"a": 1} and {not json} then')
    assert reader.value() == {"a": 1}
    assert reader.complete


def test_objects_only_when_asked() -> None:
    reader = PartialJson(opening="{")
    reader.feed('[1, 2] then {"a": [3')
    assert reader.value() == {"a": []}
    with pytest.raises(ValueError, match="opening"):
        PartialJson(opening="(")


@pytest.mark.parametrize("tag", [("<think>", "</think>"), ("<thinking>", "</thinking>")])
def test_a_leading_think_block_is_skipped_even_split_anywhere(tag: tuple[str, str]) -> None:
    open_tag, close_tag = tag
    text = f'  {open_tag}Try {{"a": 0}}? {close_tag}\n{{"a": 1}}'
    for size in (1, 2, 3, 7):
        reader = PartialJson()
        seen = []
        for start in range(0, len(text), size):
            reader.feed(text[start : start + size])
            seen.append(reader.value())
        assert {"a": 0} not in seen
        assert seen[-1] == {"a": 1}


def test_a_think_tag_later_in_the_text_is_just_text() -> None:
    reader = PartialJson()
    reader.feed('Use <think> tags: {"a": 1}')
    assert reader.value() == {"a": 1}


def test_reading_stops_after_too_many_false_starts() -> None:
    reader = PartialJson()
    reader.feed("{x} " * (MAX_RESTARTS + 1) + '{"a": 1}')
    assert reader.value() is NO_VALUE
    reader = PartialJson()
    reader.feed("{x} " * MAX_RESTARTS + '{"a": 1}')
    assert reader.value() == {"a": 1}


def test_cuts_leave_out_the_unfinished_parts_innermost_first() -> None:
    reader = PartialJson()
    reader.feed('{"title": "T", "items": [{"name": "a"}, {"name": "b", "tags": ["x", "y')
    assert [reader.value(cut) for cut in reader.cuts()] == [
        {"title": "T", "items": [{"name": "a"}, {"name": "b", "tags": ["x", "y"]}]},
        {"title": "T", "items": [{"name": "a"}, {"name": "b", "tags": ["x"]}]},
        {"title": "T", "items": [{"name": "a"}, {"name": "b"}]},
        {"title": "T", "items": [{"name": "a"}]},
        {"title": "T"},
    ]
    cuts = reader.cuts()
    reader.feed("ou")  # only the string being written changes: so does the first cut alone
    assert reader.cuts()[1:] == cuts[1:]
    assert reader.cuts()[0] != cuts[0]
    assert reader.value() == reader.value(reader.cuts()[0])
    reader = PartialJson()
    reader.feed('{"a": [1, 2')  # the number is left out already: nothing more in the innermost
    assert [reader.value(cut) for cut in reader.cuts()] == [{"a": [1]}, {}]
    reader.feed("]}")
    assert [reader.value(cut) for cut in reader.cuts()] == [{"a": [1, 2]}]  # complete: one cut
    reader.feed(' and {"b": [3')  # a later value: the complete one comes last
    assert [reader.value(cut) for cut in reader.cuts()] == [{"b": []}, {}, {"a": [1, 2]}]


def test_the_structure_changes_unless_only_a_string_being_written_grows() -> None:
    reader = PartialJson()
    assert reader.structure is None
    reader.feed('{"a": [{"b": "x')
    structure = reader.structure
    reader.feed("yz")
    assert reader.structure == structure
    reader.feed('"')
    assert reader.structure != structure


def test_is_prefix() -> None:
    assert is_prefix({"a": "x"}, {"a": "xy", "b": 1})
    assert not is_prefix({"b": 1}, {"a": 1, "b": 1})  # keys in order
    assert not is_prefix({"a": "x", "b": 1}, {"a": "xy", "b": 1})  # only the last member may be partial
    assert is_prefix([], [1])
    assert not is_prefix([1, 2], [1])
    assert not is_prefix(1, 1.0)
    assert not is_prefix(True, 1)


def nesting(value: Any) -> int:
    """How many arrays and objects deep ``value`` nests (without recursing: the values tested nest deeply)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            stack.extend(
                (member, depth + 1) for member in (item.values() if isinstance(item, dict) else item)
            )
    return deepest


def test_a_value_nested_too_deeply_stops_growing_until_it_is_whole() -> None:
    deep = "[" * 200 + "]" * 200
    text = f'{{"a": [1, {deep}, 2], "b": 3}}'
    whole = orjson.loads(text)
    for size in (1, 7, 20):
        reader = PartialJson()
        values = []
        for start in range(0, len(text), size):
            reader.feed(text[start : start + size])
            values.append(reader.value())
        assert values[-1] == whole
        assert all(nesting(value) <= MAX_DEPTH for value in values[:-1])
        frozen = values[-2]  # what the value was when the bracket opening level MAX_DEPTH + 1 was read
        assert frozen["a"][0] == 1
        assert nesting(frozen) == MAX_DEPTH
        for before, after in itertools.pairwise(values):
            assert is_prefix(before, after)


def test_reading_a_deep_value_costs_the_same_at_any_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    # A prompt-injected answer may nest thousands of levels deep: the cuts (and what decoding them costs)
    # stay bounded, and ``version`` builds none.
    depth = 5000
    text = '{"name": "x", "tags": ' + "[" * depth
    reader = PartialJson()
    versions = set()
    built = 0
    cuts_of = PartialJson._cuts

    def counting(self: PartialJson, keep: int, string: bool) -> Any:
        nonlocal built
        built += 1
        return cuts_of(self, keep, string)

    monkeypatch.setattr(PartialJson, "_cuts", counting)
    for start in range(0, len(text), 20):
        reader.feed(text[start : start + 20])
        versions.add(reader.version)
        assert built <= 1  # once, when the value stopped growing
    assert len(versions) <= MAX_DEPTH // 20 + 3  # unchanged once the value stops growing
    cuts = reader.cuts()
    assert len(cuts) <= MAX_CUTS + 2
    assert sum(len(suffix) for _, _, suffix in cuts) <= (MAX_CUTS + 1) * MAX_DEPTH
    assert all(nesting(reader.value(cut)) <= MAX_DEPTH for cut in cuts)
    assert reader.value()["name"] == "x"
    assert nesting(reader.value()) == MAX_DEPTH
    reader.feed("]" * depth + "}")
    assert reader.complete
    assert reader.value() is NO_VALUE  # orjson refuses more than 1024 levels, as OutputType.parse does


def test_a_deep_open_value_leaves_out_its_innermost_and_outermost_levels_only() -> None:
    reader = PartialJson()
    reader.feed('{"a": ' + "[" * 100)  # 101 levels open: 100 to leave out one at a time
    cuts = reader.cuts()
    assert len(cuts) == 1 + MAX_CUTS
    values = [reader.value(cut) for cut in cuts]
    assert [nesting(value) for value in values] == [
        *range(101, 101 - MAX_CUTS // 2 - 1, -1),
        *range(MAX_CUTS // 2, 0, -1),
    ]
    assert values[-1] == {}
