"""``schema_value``: a value made up from a JSON schema passes agentflow's own validation of that schema.

The property is checked the way ``AutoModelClient`` relies on it: for a tool of every parameter type ``@tool``
supports (plain and strict, a required parameter and an optional one), whatever the seed, with optional
properties left out or filled in, the arguments pass the tool's ``parse_arguments``; for every structured
output type, the answer passes ``OutputType.parse``. Hand-written schemas pin the keywords agentflow never
writes (``allOf``, ``prefixItems``, draft 4 bounds, ``propertyNames``…) and the errors.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import pathlib
import typing
import uuid
from typing import Annotated, Any, Literal, NewType, NotRequired, Optional, TypedDict

import attrs
import fastjsonschema
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentflow.runtimes.output import OutputType
from agentflow.testing.schema_values import NULL_FOR_THE_DEFAULT, SchemaValueError, schema_value
from agentflow.tools import tool
from agentflow.tools.defaults import default_note
from agentflow.tools.formats import FORMATS
from agentflow.tools.schema import Param


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 5


@attrs.frozen
class Window:
    """A time window."""

    start: datetime.datetime
    days: int = 1
    _limit: int = attrs.field(default=10, alias="limit")


@dataclasses.dataclass(frozen=True)
class Point:
    x: float
    y: float = 0.0
    label: str | None = None


class Filter(TypedDict):
    field: str
    values: list[str]
    negate: NotRequired[bool]


@attrs.frozen
class Node:
    """A tree node."""

    value: int
    children: list[Node] = attrs.Factory(list)


@dataclasses.dataclass
class Employee:
    name: str
    team: Team | None = None


@dataclasses.dataclass
class Team:
    members: list[Employee]


@attrs.frozen
class Num:
    value: float


@attrs.frozen
class Add:
    left: Num | Add
    right: Num | Add


UserId = NewType("UserId", int)

TYPES: list[Any] = [
    str,
    int,
    float,
    bool,
    None,
    Any,
    list,
    dict,
    list[int],
    list[str],
    tuple[int, str],
    tuple[float, ...],
    set[str],
    frozenset[int],
    dict[str, int],
    dict[str, list[Point]],
    Optional[int],  # noqa: UP045 (the spelling is the point)
    int | str,
    str | float,
    Literal["a", "b"],
    Literal[1, 2.5, True, None],
    list[Literal["x", "y"]],
    Color,
    Priority,
    Window,
    Point,
    Filter,
    Node,
    Employee,
    Num | Add,
    Node | None,
    datetime.datetime,
    datetime.date,
    datetime.time,
    uuid.UUID,
    decimal.Decimal,
    pathlib.Path,
    UserId,
    list[datetime.datetime | None],
    Annotated[int, "a described int"],
    Annotated[int, Param(schema={"minimum": 5, "maximum": 9, "multipleOf": 2})],
    Annotated[int, Param(schema={"exclusiveMinimum": -3, "exclusiveMaximum": -1})],
    Annotated[float, Param(schema={"exclusiveMinimum": 0, "exclusiveMaximum": 1})],
    Annotated[float, Param(schema={"multipleOf": 0.1, "minimum": 0.25})],
    Annotated[float, Param(schema={"maximum": -100.5})],
    Annotated[str, Param(schema={"minLength": 3, "maxLength": 5})],
    Annotated[str, Param(schema={"maxLength": 0})],
    Annotated[str, Param(schema={"pattern": r"^[A-Z]{2}-\d{3}$"})],
    Annotated[str, Param(schema={"pattern": r"^(?=.*\d)(?=.*[a-z])\S{8,}$", "maxLength": 12})],
    Annotated[str, Param(schema={"format": "email"})],
    Annotated[str, Param(schema={"format": "uri"})],
    Annotated[str, Param(schema={"format": "ipv4"})],
    Annotated[str, Param(schema={"format": "ipv6"})],
    Annotated[str, Param(schema={"format": "hostname"})],
    Annotated[list[int], Param(schema={"minItems": 2, "maxItems": 3, "uniqueItems": True})],
    Annotated[list[Color], Param(schema={"minItems": 2, "uniqueItems": True})],
    Annotated[list[bool], Param(schema={"minItems": 2, "uniqueItems": True})],
    Annotated[dict[str, int], Param(schema={"minProperties": 2, "maxProperties": 2})],
]


def _tool_taking(tp: Any, *, strict: bool) -> Any:
    """A tool with a required parameter of ``tp`` and an optional one (``tp | None = None``)."""

    def fn(value: Any, extra: Any = None) -> None:
        """Takes a value."""

    fn.__annotations__ = {"value": tp, "extra": _optional(tp), "return": None}
    return tool(strict=strict)(fn)


def _optional(tp: Any) -> Any:
    if typing.get_origin(tp) is Annotated:  # its Param is unhashable, which Optional[...] needs
        base, *metadata = typing.get_args(tp)
        return Annotated[(Optional[base], *metadata)]  # noqa: UP045
    return Optional[tp]  # noqa: UP045


def _tools() -> list[Any]:
    out = []
    for tp in TYPES:
        for strict in (False, True):
            try:
                made = _tool_taking(tp, strict=strict)
            except TypeError:
                if not strict:
                    raise
                continue  # what strict mode cannot express (Any, dict, tuple[int, str])
            out.append(pytest.param(made, id=f"{'strict ' if strict else ''}{tp!r}"))
    return out


@pytest.mark.parametrize("made", _tools())
@given(seed=st.integers(min_value=0, max_value=10**6), fill=st.booleans())
@settings(max_examples=25, deadline=None)
def test_made_up_arguments_pass_the_tool_s_own_validation(made: Any, seed: int, fill: bool) -> None:
    arguments = schema_value(made.spec.parameters, seed=seed, fill_optional=fill)
    made.parse_arguments(orjson.dumps(arguments).decode())


@tool
def forecast(city: str, days: int = 3, unit: Literal["C", "F"] = "C") -> str:
    """The weather ahead."""
    return city


def test_optional_parameters_keep_their_defaults_unless_filled_in() -> None:
    assert schema_value(forecast.spec.parameters) == {"city": "a"}
    assert schema_value(forecast.spec.parameters, fill_optional=True) == {"city": "a", "days": 1, "unit": "C"}
    strict = tool(strict=True)(forecast.fn)
    # Strict mode lists every property as required; null there means "the default".
    assert schema_value(strict.spec.parameters) == {"city": "a", "days": None, "unit": None}
    assert strict.parse_arguments(schema_value(strict.spec.parameters)) == {"city": "a"}
    assert schema_value(strict.spec.parameters, fill_optional=True) == {"city": "a", "days": 1, "unit": "C"}


OUTPUT_TYPES: list[Any] = [
    Window,
    Point,
    Filter,
    Node,
    Employee,
    Num | Add,
    list[int],
    dict[str, int],
    tuple[int, str],
    Literal["yes", "no"],
    Color,
    Optional[Point],  # noqa: UP045
    decimal.Decimal,
    datetime.date,
    int,
    bool,
]


@pytest.mark.parametrize("tp", OUTPUT_TYPES, ids=repr)
@given(seed=st.integers(min_value=0, max_value=10**6), fill=st.booleans())
@settings(max_examples=20, deadline=None)
def test_a_made_up_answer_passes_the_output_type_s_parse(tp: Any, seed: int, fill: bool) -> None:
    spec = OutputType(tp)
    schema = spec.response_format()["json_schema"]["schema"]
    spec.parse(orjson.dumps(schema_value(schema, seed=seed, fill_optional=fill)).decode())
    spec.read_value(schema_value(spec.value_schema, seed=seed, fill_optional=fill))


def _valid(schema: dict[str, Any], value: Any) -> None:
    fastjsonschema.compile(schema, formats=dict(FORMATS))(value)


def test_the_same_seed_gives_the_same_value_and_another_seed_another() -> None:
    schema = _tool_taking(Window, strict=False).spec.parameters
    assert schema_value(schema, seed=7) == schema_value(schema, seed=7)
    assert schema_value(schema, seed=7) != schema_value(schema, seed=8)
    assert schema_value(schema) == {"value": {"start": "2024-01-01T12:00:00+00:00"}}


def test_the_seed_picks_the_member_of_a_union() -> None:
    schema = {"anyOf": [{"type": "string"}, {"type": "boolean"}, {"type": "null"}]}
    assert [type(schema_value(schema, seed=s)) for s in range(3)] == [str, bool, str]
    # A number or a string (a ``Decimal``) is always a number: a string would have to hold digits.
    assert schema_value({"type": ["string", "number"]}, seed=1) == 1.5
    assert schema_value({"anyOf": [{"type": "string"}, {"type": "number"}]}, seed=1) == 1.5


def test_a_recursive_type_is_expanded_then_ended() -> None:
    schema = _tool_taking(Node, strict=True).spec.parameters
    assert schema_value(schema)["value"] == {"value": 0, "children": None}  # null for the default
    assert schema_value(schema, fill_optional=True)["value"] == {
        "value": 0,
        "children": [{"value": 1, "children": [{"value": 2, "children": None}]}],
    }
    team = schema_value(_tool_taking(Employee, strict=False).spec.parameters)["value"]
    assert team == {"name": "a"}
    # Strict: ``team`` is required, and null is one of its values (not "the default"): it is expanded.
    team = schema_value(_tool_taking(Employee, strict=True).spec.parameters)["value"]
    innermost = {"name": "c", "team": None}
    assert team == {"name": "a", "team": {"members": [{"name": "b", "team": {"members": [innermost]}}]}}


def test_a_type_with_no_finite_value_is_an_error_not_a_hang() -> None:
    a = {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "required": ["a"]}
    schema = {"$ref": "#/$defs/A", "$defs": {"A": a}}
    with pytest.raises(SchemaValueError, match="nests too deeply"):
        schema_value(schema)


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"const": {"k": [1]}}, {"k": [1]}),
        ({"enum": [None, "x"]}, "x"),
        ({"type": "integer", "minimum": 10, "exclusiveMinimum": True}, 11),  # draft 4
        ({"type": "number", "minimum": 0, "maximum": 1}, 0.1),
        ({"type": "integer", "multipleOf": 7, "minimum": 1}, 7),
        ({"type": "number", "multipleOf": 0.01, "minimum": 19.005}, 19.01),
        (
            {"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}], "maxItems": 2},
            ["a", False],
        ),
        ({"type": "array", "contains": {"const": 3}}, [3]),
        (
            {
                "allOf": [
                    {"$ref": "#/$defs/A"},
                    {"required": ["b"], "properties": {"b": {"type": "integer"}}},
                ],
                "$defs": {
                    "A": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
                },
            },
            {"a": "a", "b": 1},
        ),
        ({"type": "object", "propertyNames": {"pattern": "^x_[0-9]$"}, "minProperties": 1}, {"x_0": "b"}),
        ({"type": "object", "additionalProperties": {"type": "boolean"}}, {"a": False}),
        ({"type": "object"}, {}),
        ({"$ref": "#/definitions/N", "definitions": {"N": {"type": "integer"}}}, 0),
        ({"anyOf": [{"$ref": "#/$defs/N"}], "description": "d", "$defs": {"N": {"type": "string"}}}, "a"),
        ({"type": "string", "format": "date-time", "pattern": "^2024"}, "2024-01-01T12:00:00+00:00"),
        (True, "a"),
        ({}, "a"),
    ],
)
def test_keywords_agentflow_does_not_write_are_read_too(schema: Any, expected: Any) -> None:
    value = schema_value(schema)
    assert value == expected
    if isinstance(schema, dict):
        _valid(schema, value)


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        (False, "accepts no value"),
        ({"type": "integer", "minimum": 3, "maximum": 2}, "no integer"),
        ({"type": "integer", "minimum": 1, "maximum": 3, "multipleOf": 5}, "multiple of 5"),
        ({"type": "number", "exclusiveMinimum": 1, "exclusiveMaximum": 1}, "no number"),
        ({"type": "string", "minLength": 4, "maxLength": 2}, "maxLength"),
        ({"type": "string", "pattern": "^(?!a)a$"}, "pattern"),
        ({"type": "string", "pattern": "("}, "pattern"),
        ({"type": "array", "items": {"type": "boolean"}, "minItems": 3, "uniqueItems": True}, "different"),
        (
            {"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}, "required": ["a"]},
            "points at",
        ),
        ({"anyOf": []}, "empty anyOf"),
        ({"enum": []}, "empty enum"),
    ],
)
def test_an_unsatisfiable_schema_is_a_schema_value_error(schema: Any, words: str) -> None:
    with pytest.raises(SchemaValueError, match=words):
        schema_value(schema)


def test_the_error_names_where_it_is() -> None:
    codes = {"type": "array", "items": {"pattern": "^(?!x)x$"}}
    schema = {"type": "object", "properties": {"codes": codes}, "required": ["codes"]}
    with pytest.raises(SchemaValueError) as caught:
        schema_value(schema)
    assert caught.value.path == ".codes[0]"
    assert str(caught.value).startswith("codes[0]: no string found that matches the pattern")


def test_strict_mode_s_marker_is_the_one_the_schema_writes() -> None:
    assert NULL_FOR_THE_DEFAULT in (default_note(3, null_means_default=True) or "").lower()
    assert NULL_FOR_THE_DEFAULT in (default_note(object(), null_means_default=True) or "").lower()


def test_a_bad_seed_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="seed"):
        schema_value({}, seed="1")  # type: ignore[arg-type]
