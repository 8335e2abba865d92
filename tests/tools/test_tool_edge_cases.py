"""``@tool`` at its edges: integers beyond 64 bits, unions of objects, partials, strict-mode tuples."""

from __future__ import annotations

import functools
from decimal import Decimal
from typing import Any

import attrs
import orjson
import pytest

from agentflow.model.messages import ToolCall
from agentflow.tools import ToolArgumentsError, ToolExecutor, ToolRegistry, tool
from agentflow.tools.outcome import output_text

BIG = 123456789012345678901234567890


async def _noop(_: Any) -> None:
    return None


# -- integers beyond 64 bits -------------------------------------------------------------------------------


def test_big_integers_are_returned_to_the_model_with_every_digit() -> None:
    assert output_text(2**64) == "18446744073709551616"
    assert output_text({"total": 10**30}) == '{"total":1000000000000000000000000000000}'
    assert output_text([2**63, -(2**63) - 1]) == "[9223372036854775808,-9223372036854775809]"
    assert output_text({BIG: "key"}) == f'{{"{BIG}":"key"}}'


def test_decimals_are_numbers_when_a_float_says_them_exactly_else_their_digits() -> None:
    precise = "0.1000000000000000000000001"
    prices = {"price": Decimal("9.99"), "total": Decimal("12.50"), "rate": Decimal(precise)}
    assert output_text(prices) == f'{{"price":9.99,"total":12.5,"rate":"{precise}"}}'
    assert output_text([Decimal("NaN"), Decimal("-Infinity")]) == '["NaN","-Infinity"]'
    assert output_text(Decimal("2.5")) == "2.5"


@attrs.frozen
class Balance:
    cents: int


async def test_a_tool_returning_a_big_integer_succeeds() -> None:
    @tool
    def power(base: int, exp: int) -> int:
        """base ** exp"""
        return int(base**exp)

    @tool
    def balance() -> Balance:
        """The balance."""
        return Balance(10**25)

    executor = ToolExecutor([power, balance], emit=_noop)
    results = await executor.run_calls(
        [ToolCall("1", "power", '{"base": 2, "exp": 64}'), ToolCall("2", "balance")], run_id="r", step=0
    )
    assert [(r.ok, r.output) for r in results] == [
        (True, "18446744073709551616"),
        (True, '{"cents":10000000000000000000000000}'),
    ]
    assert results[0].value == 2**64


def test_big_integer_arguments_arrive_exactly() -> None:
    @tool
    def store(account: int, more: list[int], maybe: int | None = None) -> str:
        """Store account numbers."""
        return ""

    raw = f'{{"account": {BIG}, "more": [{10**20 + 1}, {-(2**63) - 1}], "maybe": {2**64}}}'
    assert store.parse_arguments(raw) == {
        "account": BIG,
        "more": [10**20 + 1, -(2**63) - 1],
        "maybe": 2**64,
    }
    assert ToolCall("c", "store", raw).parse_arguments()["account"] == BIG


def test_a_big_integer_where_a_string_belongs_is_reported() -> None:
    @tool
    def weather(city: str) -> str:
        """Weather."""
        return city

    with pytest.raises(ToolArgumentsError, match=r"arguments.city must be string, got the number 1234567"):
        weather.parse_arguments(f'{{"city": {BIG}}}')


# -- unions of object types --------------------------------------------------------------------------------


@attrs.frozen
class ById:
    key: int


@attrs.frozen
class ByName:
    key: str


@attrs.frozen
class Page:
    key: int
    size: int = 10


def test_a_union_of_objects_builds_the_member_whose_values_fit() -> None:
    @tool
    def lookup(item: ById | ByName) -> str:
        """Look an item up by id or by name."""
        return repr(item)

    assert lookup.parse_arguments('{"item": {"key": "hello"}}') == {"item": ByName("hello")}
    assert lookup.parse_arguments('{"item": {"key": 7}}') == {"item": ById(7)}


def test_a_union_member_in_strict_mode_takes_null_as_its_default() -> None:
    @tool(strict=True)
    def browse(where: ByName | Page) -> str:
        """Browse."""
        return repr(where)

    assert browse.parse_arguments('{"where": {"key": 3, "size": null}}') == {"where": Page(3)}
    assert browse.parse_arguments('{"where": {"key": "a"}}') == {"where": ByName("a")}


# -- functools.partial -------------------------------------------------------------------------------------


def search(query: str, limit: int = 5, lang: str = "en") -> str:
    """Search the web.

    Args:
        query: What to search for.
        limit: How many results.
        lang: Result language.
    """
    return f"{query}:{limit}:{lang}"


def test_a_partial_is_described_by_the_function_it_wraps() -> None:
    bound = tool(functools.partial(search, limit=3))
    assert bound.name == "search"
    assert bound.description == "Search the web."
    assert bound.spec.parameters["properties"] == {
        "query": {"type": "string", "description": "What to search for."},
        "lang": {"type": "string", "description": "Result language.", "default": "en"},
    }
    assert tool(name="top3")(functools.partial(search, limit=3)).name == "top3"


async def test_the_model_cannot_override_what_a_partial_bound() -> None:
    bound = tool(functools.partial(functools.partial(search, "fixed"), lang="fr"))
    assert list(bound.spec.parameters["properties"]) == ["limit"]
    for raw in ('{"limit": 1, "lang": "de"}', '{"query": "x"}'):
        with pytest.raises(ToolArgumentsError, match="unknown property"):
            bound.parse_arguments(raw)
    executor = ToolExecutor(ToolRegistry([bound]), emit=_noop)
    result = await executor.run_call(ToolCall("1", "search", '{"limit": 2}'), run_id="r", step=0)
    assert result.output == "fixed:2:fr"


# -- strict mode and tuples --------------------------------------------------------------------------------


def test_strict_mode_refuses_a_fixed_length_tuple() -> None:
    def move(to: tuple[int, int]) -> str:
        """Move to a point."""
        return ""

    with pytest.raises(
        TypeError, match=r"parameter 'to' of tool 'move': a fixed-length tuple\[int, int\]"
    ) as err:
        tool(strict=True)(move)
    assert (
        "use an attrs class or a TypedDict (named fields), tuple[X, ...] or list[X], or strict=False"
        in str(err.value)
    )
    loose = tool(move).spec.parameters["properties"]["to"]
    assert loose == {
        "type": "array",
        "items": [{"type": "integer"}, {"type": "integer"}],
        "minItems": 2,
        "maxItems": 2,
    }


def test_strict_mode_keeps_variable_length_tuples() -> None:
    @tool(strict=True)
    def total(values: tuple[int, ...]) -> int:
        """Sum."""
        return sum(values)

    assert total.spec.parameters["properties"]["values"] == {"type": "array", "items": {"type": "integer"}}
    assert total.parse_arguments(orjson.dumps({"values": [1, 2]}).decode()) == {"values": (1, 2)}
