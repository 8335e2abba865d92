"""Tool arguments: JSON text → validated, converted keyword arguments, or a precise ``ToolArgumentsError``."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Literal, TypedDict

import attrs
import orjson
import pytest

from agentflow.tools import Param, ToolArgumentsError, tool


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@attrs.frozen
class Point:
    x: int
    y: int = 0


@attrs.frozen
class Positive:
    value: int = attrs.field(validator=attrs.validators.gt(0))


@attrs.frozen
class Private:
    _secret: str


@dataclasses.dataclass
class Box:
    width: float
    color: Color = Color.RED


class Item(TypedDict):
    name: str
    color: Color


@tool
def everything(
    color: Color | None = None,
    level: Level = Level.LOW,
    point: Point | None = None,
    points: list[Point] | None = None,
    by_name: dict[str, Point] | None = None,
    pair: tuple[int, Color] | None = None,
    many: tuple[Color, ...] = (),
    tags: set[str] | None = None,
    box: Box | None = None,
    items: list[Item] | None = None,
    ratio: float = 1.0,
    count: int = 0,
    either: Point | Color | int | None = None,
    mode: Literal["fast", "slow"] = "fast",
) -> None:
    """Accepts everything."""


def test_empty_arguments_mean_an_empty_object() -> None:
    assert everything.parse_arguments("") == {}
    assert everything.parse_arguments("  \n") == {}
    assert everything.parse_arguments("{}") == {}


def test_values_are_converted_to_the_annotated_types() -> None:
    kwargs = everything.parse_arguments(
        """{"color": "green", "level": 2, "point": {"x": 1}, "points": [{"x": 1, "y": 2}],
            "by_name": {"home": {"x": 3}}, "pair": [7, "red"], "many": ["red", "green"],
            "tags": ["a", "b", "a"], "box": {"width": 2}, "items": [{"name": "n", "color": "red"}],
            "ratio": 2, "count": 3.0, "mode": "slow"}"""
    )
    assert kwargs == {
        "color": Color.GREEN,
        "level": Level.HIGH,
        "point": Point(1),
        "points": [Point(1, 2)],
        "by_name": {"home": Point(3)},
        "pair": (7, Color.RED),
        "many": (Color.RED, Color.GREEN),
        "tags": {"a", "b"},
        "box": Box(2.0),
        "items": [{"name": "n", "color": Color.RED}],
        "ratio": 2.0,
        "count": 3,
        "mode": "slow",
    }
    assert type(kwargs["ratio"]) is float
    assert type(kwargs["count"]) is int
    assert type(kwargs["box"].width) is float


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"either": {"x": 5}}', Point(5)),
        ('{"either": "red"}', Color.RED),
        ('{"either": 4}', 4),
        ('{"either": null}', None),
    ],
)
def test_a_union_converts_to_the_member_the_value_fits(raw: str, expected: Any) -> None:
    assert everything.parse_arguments(raw)["either"] == expected


def test_in_a_float_int_union_an_integer_stays_an_int() -> None:
    @tool
    def f(x: float | int, y: float | None = None) -> None:
        pass

    assert f.parse_arguments('{"x": 3, "y": 2}') == {"x": 3, "y": 2.0}
    assert type(f.parse_arguments('{"x": 3}')["x"]) is int
    assert type(f.parse_arguments('{"x": 3.5}')["x"]) is float


def test_attrs_private_fields_are_passed_by_their_init_alias() -> None:
    @tool
    def f(p: Private) -> str:
        return p._secret

    assert f.spec.parameters["properties"]["p"]["properties"] == {"secret": {"type": "string"}}
    assert f.parse_arguments('{"p": {"secret": "s"}}') == {"p": Private("s")}


@pytest.mark.parametrize(
    ("raw", "message", "path"),
    [
        ("{", "everything arguments are not valid JSON: unexpected end of data", ""),
        ("[1, 2]", "everything arguments must be a JSON object, got an array", ""),
        ('"x"', 'everything arguments must be a JSON object, got the string "x"', ""),
        ("null", "everything arguments must be a JSON object, got null", ""),
        ('{"count": "3"}', 'arguments.count must be integer, got the string "3"', "count"),
        ('{"count": true}', "arguments.count must be integer, got true", "count"),
        ('{"count": 1.5}', "arguments.count must be integer, got the number 1.5", "count"),
        (
            '{"mode": "medium"}',
            'arguments.mode must be one of "fast", "slow", got the string "medium"',
            "mode",
        ),
        (
            '{"color": "blue"}',
            'arguments.color must be one of "red", "green", null, got the string "blue"',
            "color",
        ),
        ('{"point": {"y": 1}}', "arguments.point is missing the required property 'x'", "point"),
        (
            '{"points": [{"x": 1}, {"x": "2"}]}',
            'arguments.points[1].x must be integer, got the string "2"',
            "points[1].x",
        ),
        ('{"pair": [1]}', "arguments.pair must contain at least 2 items", "pair"),
        (
            '{"pair": [1, "blue"]}',
            'arguments.pair[1] must be one of "red", "green", got the string "blue"',
            "pair[1]",
        ),
        (
            '{"colour": "red", "sizes": 1}',
            "arguments has unknown properties 'colour', 'sizes' (expected: color, level, point",
            "",
        ),
        ('{"point": {"x": 1, "z": 2}}', "arguments.point has unknown property 'z' (expected: x, y)", "point"),
        (
            '{"by_name": {"home": {"x": "1"}}}',
            'arguments.by_name.home.x must be integer, got the string "1"',
            "",
        ),
        ('{"points": {"x": 1}}', "arguments.points must be array or null, got an object", "points"),
    ],
)
def test_invalid_arguments_give_the_path_and_the_reason(raw: str, message: str, path: str) -> None:
    with pytest.raises(ToolArgumentsError) as info:
        everything.parse_arguments(raw)
    assert str(info.value).startswith(message)
    if path:
        assert info.value.path == path


def test_every_mistake_is_named_at_once_so_the_model_fixes_them_in_one_turn() -> None:
    raw = {
        "count": "3",
        "colour": "red",
        "points": [{"x": "1"}, {"x": 2, "z": 0}],
        "by_name": {"home": {"x": "1"}, "work": {"y": 1}},
        "mode": "medium",
    }
    with pytest.raises(ToolArgumentsError) as info:
        everything.parse_arguments(raw)
    assert str(info.value).split("; ") == [
        "arguments has unknown property 'colour' (expected: color, level, point, points, by_name, pair, "
        "many, tags, box, items, ratio, count, either, mode)",
        'arguments.count must be integer, got the string "3"',
        'arguments.points[0].x must be integer, got the string "1"',
        "arguments.points[1] has unknown property 'z' (expected: x, y)",
        'arguments.by_name.home.x must be integer, got the string "1"',
        "arguments.by_name.work is missing the required property 'x'",
        'arguments.mode must be one of "fast", "slow", got the string "medium"',
    ]
    assert info.value.path == ""  # the first mistake's


def test_a_long_list_of_mistakes_is_cut() -> None:
    with pytest.raises(ToolArgumentsError) as info:
        everything.parse_arguments({"points": [{"x": str(n)} for n in range(25)]})
    assert str(info.value).count("must be integer") == 10
    assert str(info.value).endswith("; and more")


def test_missing_required_arguments_are_named() -> None:
    @tool
    def book(city: str, nights: int) -> None:
        pass

    with pytest.raises(
        ToolArgumentsError, match="arguments is missing the required properties 'city', 'nights'"
    ):
        book.parse_arguments("{}")


def test_a_value_the_schema_allows_but_the_type_rejects_is_an_arguments_error() -> None:
    @tool
    def f(p: Positive) -> None:
        pass

    with pytest.raises(ToolArgumentsError, match=r"^arguments\.p is not a valid Positive: .*value"):
        f.parse_arguments('{"p": {"value": 0}}')


def test_param_schema_keywords_are_enforced() -> None:
    @tool
    def f(days: Annotated[int, Param(schema={"minimum": 1})]) -> None:
        pass

    with pytest.raises(ToolArgumentsError, match=r"arguments\.days must be bigger than or equal to 1"):
        f.parse_arguments('{"days": 0}')


def test_already_decoded_arguments_are_accepted() -> None:
    assert everything.parse_arguments({"color": "red"}) == {"color": Color.RED}


def test_a_whole_number_written_as_a_float_finds_its_enum_or_literal_member() -> None:
    # JSON has one number type: the model may write 2.0 for the member 2 (true is still not 1).
    @tool
    def f(level: Level, pick: Literal[1, 2] = 1, either: Level | str = "x") -> None:
        pass

    kwargs = f.parse_arguments('{"level": 2.0, "pick": 2.0, "either": 1.0}')
    assert kwargs == {"level": Level.HIGH, "pick": 2, "either": Level.LOW}
    assert type(kwargs["pick"]) is int
    with pytest.raises(ToolArgumentsError, match=r"arguments\.level must be one of 1, 2, got true"):
        f.parse_arguments('{"level": true}')


@attrs.frozen
class Checked:
    name: str

    def __attrs_post_init__(self) -> None:
        if not self.name:
            raise LookupError("name must not be empty")


def test_whatever_a_class_constructor_raises_is_an_arguments_error() -> None:
    @tool
    def f(c: Checked) -> None:
        pass

    with pytest.raises(
        ToolArgumentsError, match=r"^arguments\.c is not a valid Checked: LookupError: name must not be empty"
    ):
        f.parse_arguments('{"c": {"name": ""}}')


@attrs.frozen
class ById:
    key: int


@attrs.frozen
class ByEmail:
    email: str
    verified: bool = False


@tool
def find(q: ById | ByEmail) -> None:
    """Find someone."""


@pytest.mark.parametrize(
    ("raw", "closest"),
    [
        ('{"q": {"key": 1.5}}', "; closest: arguments.q.key must be integer, got the number 1.5"),
        (
            '{"q": {"email": "a@b.c", "verified": "yes"}}',
            '; closest: arguments.q.verified must be boolean, got the string "yes"',
        ),
        ('{"q": {"id": 3}}', ""),  # no alternative is closer than the other
        ('{"q": {"email": "x", "key": 1}}', ""),
    ],
)
def test_a_union_of_classes_names_its_alternatives_and_the_closest_ones_error(raw: str, closest: str) -> None:
    with pytest.raises(ToolArgumentsError) as info:
        find.parse_arguments(raw)
    keys = ", ".join(orjson.loads(raw)["q"])
    assert str(info.value) == (
        "arguments.q must be an object with key or an object with email (optional: verified), "
        f"got an object with {keys}{closest}"
    )
    assert info.value.path == "q"


def test_an_int_enum_given_a_name_is_told_the_choices() -> None:
    @tool
    def f(level: Level) -> None:
        pass

    with pytest.raises(
        ToolArgumentsError, match=r'^arguments\.level must be one of 1, 2, got the string "HIGH"$'
    ):
        f.parse_arguments('{"level": "HIGH"}')


@attrs.frozen
class Line:
    sku: str
    qty: int = attrs.field(default=1, validator=attrs.validators.gt(0))


def test_a_value_a_class_refuses_is_reported_at_its_path() -> None:
    @tool
    def order(lines: list[Line], by_shop: dict[str, tuple[Line, ...]] | None = None) -> None:
        pass

    with pytest.raises(ToolArgumentsError) as info:
        order.parse_arguments('{"lines": [{"sku": "a"}, {"sku": "b", "qty": 0}]}')
    assert str(info.value) == "arguments.lines[1] is not a valid Line: ValueError: 'qty' must be > 0: 0"
    assert (info.value.path, info.value.reason) == ("lines[1]", str(info.value)[len("arguments.lines[1] ") :])
    with pytest.raises(ToolArgumentsError, match=r"^arguments\.by_shop\.north\[0\] is not a valid Line"):
        order.parse_arguments('{"lines": [], "by_shop": {"north": [{"sku": "c", "qty": -1}]}}')


@attrs.frozen
class SmallOrder:
    qty: int = attrs.field(validator=[attrs.validators.ge(1), attrs.validators.le(10)])


@attrs.frozen
class BulkOrder:
    qty: int = attrs.field(validator=attrs.validators.gt(10))


def test_a_union_tries_the_next_class_when_one_refuses_the_value() -> None:
    @tool
    def order(o: SmallOrder | BulkOrder) -> None:
        pass

    assert order.parse_arguments('{"o": {"qty": 3}}') == {"o": SmallOrder(3)}
    assert order.parse_arguments('{"o": {"qty": 50}}') == {"o": BulkOrder(50)}
    # When every class refuses it, the first one's reason is given.
    with pytest.raises(
        ToolArgumentsError, match=r"^arguments\.o is not a valid SmallOrder: .*'qty' must be >= 1"
    ):
        order.parse_arguments('{"o": {"qty": 0}}')
    with pytest.raises(
        ToolArgumentsError, match=r"closest: arguments\.o\.qty must be integer, got the number 1\.5$"
    ):
        order.parse_arguments('{"o": {"qty": 1.5}}')  # both alternatives fail alike


@attrs.define
class Tag:
    name: str


class Filter(TypedDict):
    name: str


@pytest.mark.parametrize("item", [Tag, list[str], Filter, tuple[int, Tag] | None])
def test_a_set_of_unhashable_items_is_refused_at_decoration_time(item: Any) -> None:
    # Else every call would fail as invalid_arguments, blaming the model for the author's annotation.
    def label(tags: set[Tag]) -> None:
        pass

    label.__annotations__["tags"] = set[item]  # type: ignore[valid-type]
    with pytest.raises(
        TypeError, match="parameter 'tags' of tool 'label': the items of a set must be hashable"
    ):
        tool(label)
    label.__annotations__["tags"] = frozenset[tuple[int, str]]
    assert tool(label).parse_arguments('{"tags": [[1, "a"]]}') == {"tags": frozenset({(1, "a")})}


def test_a_hand_written_schema_with_references_outside_defs_still_tells_the_mistake() -> None:
    # Listing every mistake compiles parts of the schema alone; "#/definitions/..." and "#/properties/..."
    # references cannot stand alone, and used to crash the run instead of reaching the model.
    from agentflow.tools.arguments import ArgumentParser

    item = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/definitions/A"}, "b": {"$ref": "#/properties/a"}},
        "required": ["a"],
        "additionalProperties": False,
        "definitions": {"A": item},
    }
    parser = ArgumentParser("f", schema, None)
    assert parser.parse('{"a": {"x": 1}, "b": {"x": 2}}') == {"a": {"x": 1}, "b": {"x": 2}}
    with pytest.raises(ToolArgumentsError, match=r'arguments\.a\.x must be integer, got the string "no"'):
        parser.parse('{"a": {"x": "no"}, "b": {"y": 1}}')
