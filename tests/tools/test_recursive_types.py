"""Recursive attrs classes, dataclasses and TypedDicts as tool parameters: ``$defs``/``$ref`` schemas.

A class met inside its own expansion is a ``$ref`` to a definition at the schema's root (the only recursion
OpenAI's strict mode accepts); everything else is written inline, as before, and a schema without recursion
has no ``$defs`` at all. Conversion and union checks follow the data, so they end where the data does.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from typing import Annotated, Any, NotRequired, TypedDict

import attrs
import fastjsonschema
import pytest

from agentflow.tools import ToolArgumentsError, tool
from agentflow.tools.arguments import ArgumentParser
from agentflow.tools.schema import Prop, object_shape, shape_of, strict_schema_problems
from agentflow.tools.schema_defs import Definitions, cyclic_names, ref


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


class Section(TypedDict):
    title: str
    sections: NotRequired[list[Section]]


@attrs.frozen
class Num:
    value: float


@attrs.frozen
class Add:
    left: Num | Add
    right: Num | Add


@attrs.frozen
class Leaf:
    """A leaf."""

    label: str


@attrs.frozen
class Tree:
    leaf: Leaf
    parent: Annotated[Tree | None, "The parent, if any"] = None
    first: Annotated[Tree, "A tree below"] | None = None


NODE_BODY = {
    "description": "A tree node.",
    "type": "object",
    "properties": {
        "value": {"type": "integer"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}, "default": []},
    },
    "required": ["value"],
    "additionalProperties": False,
}


def deep_node(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"value": 0, "children": []}
    for level in range(1, levels):
        node = {"value": level, "children": [node]}
    return node


def refs_with_siblings(schema: Any, where: str = "") -> list[str]:
    """Where a ``$ref`` has sibling keywords (OpenAI's strict mode refuses them)."""
    found = []
    if isinstance(schema, dict):
        if "$ref" in schema and len(schema) > 1:
            found.append(where)
        for key, value in schema.items():
            found += refs_with_siblings(value, f"{where}.{key}")
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            found += refs_with_siblings(value, f"{where}[{index}]")
    return found


def test_a_self_recursive_class_refers_to_a_definition_at_the_root() -> None:
    shape = shape_of(Node)
    # Written out at the root (an output type's root must be an object), defined once for the inner uses.
    assert shape.schema == {**NODE_BODY, "$defs": {"Node": NODE_BODY}}
    assert shape.class_description == "A tree node."


def test_a_recursive_strict_schema_is_a_strict_mode_one() -> None:
    schema = shape_of(Node, strict=True).schema
    children = {
        "anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Node"}}, {"type": "null"}],
        "description": "Default: []; null for the default",
    }
    assert schema["properties"]["children"] == children
    assert schema["$defs"]["Node"]["properties"]["children"] == children
    assert schema["required"] == ["value", "children"]
    assert strict_schema_problems(schema) == []


def test_the_converter_follows_the_data_down() -> None:
    convert = shape_of(Node).convert
    assert convert is not None
    data = {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}, {"value": 4}]}
    assert convert(data) == Node(1, [Node(2, [Node(3)]), Node(4)])
    assert shape_of(Node).accepts(data)
    assert not shape_of(Node).accepts({"value": 1, "children": [{"value": "x"}]})


def test_a_tool_gets_instances_of_the_recursive_class() -> None:
    seen: list[Node] = []

    @tool(strict=True)
    def walk(root: Node) -> int:
        """Walk a tree."""
        seen.append(root)
        return 0

    assert walk.spec.parameters["$defs"] == {"Node": shape_of(Node, strict=True).schema["$defs"]["Node"]}
    assert "$defs" not in walk.spec.parameters["properties"]["root"]  # one $defs, at the root
    kwargs = walk.parse_arguments('{"root": {"value": 1, "children": [{"value": 2, "children": null}]}}')
    assert kwargs == {"root": Node(1, [Node(2)])}


def test_an_error_deep_in_recursive_data_names_its_path() -> None:
    @tool
    def walk(root: Node) -> None:
        """Walk a tree."""

    with pytest.raises(ToolArgumentsError) as caught:
        walk.parse_arguments({"root": {"value": 1, "children": [{"value": 2, "children": [{"value": "x"}]}]}})
    assert (
        str(caught.value)
        == 'arguments.root.children[0].children[0].value must be integer, got the string "x"'
    )


@pytest.mark.parametrize("strict", [False, True])
def test_deep_recursive_data_converts(strict: bool) -> None:
    @tool(strict=strict)
    def walk(root: Node) -> None:
        """Walk a tree."""

    node = walk.parse_arguments({"root": deep_node(150)})["root"]
    depth = 0
    while node.children:
        node, depth = node.children[0], depth + 1
    assert depth == 149


@pytest.fixture
def default_recursion_limit() -> Iterator[None]:
    """Python's default limit: a test run in-process (mypy's API) may have raised it for good."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(before)


@pytest.mark.usefixtures("default_recursion_limit")
def test_data_deeper_than_the_stack_is_refused_not_crashed() -> None:
    @tool
    def walk(root: Node) -> None:
        """Walk a tree."""

    # Already decoded (orjson itself refuses JSON text this deep); the validator or the converter runs out
    # of stack, which is the arguments' fault.
    with pytest.raises(ToolArgumentsError, match=r"^walk arguments nest too deeply$"):
        walk.parse_arguments({"root": deep_node(5000)})
    with pytest.raises(ToolArgumentsError, match="nest too deeply"):
        walk.parse_arguments({"root": deep_node(400)})


def test_mutual_recursion_defines_the_class_the_cycle_starts_at() -> None:
    shape = shape_of(Employee, strict=True)
    assert list(shape.schema["$defs"]) == ["Employee"]
    team = shape.schema["properties"]["team"]["anyOf"][0]
    assert team["properties"]["members"] == {"type": "array", "items": {"$ref": "#/$defs/Employee"}}
    assert strict_schema_problems(shape.schema) == []
    assert shape.convert is not None
    data = {"name": "Ada", "team": {"members": [{"name": "Bob", "team": {"members": []}}]}}
    assert shape.convert(data) == Employee("Ada", Team([Employee("Bob", Team([]))]))


def test_a_tool_over_both_classes_of_a_cycle_defines_both() -> None:
    @tool
    def staff(person: Employee, team: Team) -> None:
        """Staff a team."""

    assert sorted(staff.spec.parameters["$defs"]) == ["Employee", "Team"]
    assert staff.parse_arguments({"person": {"name": "A"}, "team": {"members": [{"name": "B"}]}}) == {
        "person": Employee("A"),
        "team": Team([Employee("B")]),
    }


def test_a_recursive_typeddict_stays_a_dict() -> None:
    shape = shape_of(Section)
    assert shape.schema["$defs"]["Section"]["properties"]["sections"] == {
        "type": "array",
        "items": {"$ref": "#/$defs/Section"},
    }
    data = {"title": "a", "sections": [{"title": "b", "sections": [{"title": "c"}]}]}
    assert shape.convert is not None
    assert shape.convert(data) == data
    assert shape.accepts(data)
    assert not shape.accepts({"title": "a", "sections": [{"title": 1}]})


def test_a_recursive_union_picks_its_members_all_the_way_down() -> None:
    shape = shape_of(Num | Add)
    assert shape.convert is not None
    one, two = {"value": 1}, {"value": 2.5}
    assert shape.convert({"left": one, "right": {"left": two, "right": one}}) == Add(
        Num(1.0), Add(Num(2.5), Num(1.0))
    )
    assert shape.convert(one) == Num(1.0)
    assert not shape.accepts({"left": one, "right": {"left": two, "right": {"value": "x"}}})


def test_a_union_error_inside_a_reference_names_the_closest_member() -> None:
    @tool
    def calc(expr: Num | Add) -> None:
        """Calculate."""

    with pytest.raises(ToolArgumentsError) as caught:
        calc.parse_arguments(
            {"expr": {"left": {"value": 1}, "right": {"left": {"value": 1}, "right": {"value": "x"}}}}
        )
    # Each union on the way down names the member the value's keys point to, down to the value at fault.
    either = "must be an object with value or an object with left, right, got an object with"
    assert str(caught.value).split("; closest: ") == [
        f"arguments.expr {either} left, right",
        f"arguments.expr.right {either} left, right",
        f"arguments.expr.right.right {either} value",
        'arguments.expr.right.right.value must be number, got the string "x"',
    ]


def test_a_described_reference_keeps_its_description_beside_not_on_the_ref() -> None:
    for strict in (False, True):
        schema = shape_of(Tree, strict=strict).schema
        assert refs_with_siblings(schema) == []
        assert strict_schema_problems(schema) == [] or not strict
    parent = shape_of(Tree, strict=True).schema["properties"]["parent"]
    assert parent == {
        "anyOf": [{"$ref": "#/$defs/Tree"}, {"type": "null"}],
        "description": "The parent, if any",
    }
    first = shape_of(Tree, strict=True).schema["properties"]["first"]
    assert first == {
        "anyOf": [{"anyOf": [{"$ref": "#/$defs/Tree"}], "description": "A tree below"}, {"type": "null"}]
    }


@attrs.frozen
class Other:
    """Another tree, whose class is also called ``Node`` (from another module, say)."""

    label: str
    below: list[Other]


Other.__name__ = "Node"


def test_two_recursive_classes_of_one_name_get_two_definitions() -> None:
    @tool
    def both(a: Node, b: Other) -> None:
        """Both."""

    defs = both.spec.parameters["$defs"]
    assert sorted(defs) == ["Node", "Node2"]
    assert defs["Node2"]["properties"]["below"]["items"] == {"$ref": "#/$defs/Node2"}
    assert both.spec.parameters["properties"]["b"]["properties"]["below"]["items"] == {
        "$ref": "#/$defs/Node2"
    }
    assert both.parse_arguments(
        {"a": {"value": 1}, "b": {"label": "x", "below": [{"label": "y", "below": []}]}}
    ) == {
        "a": Node(1),
        "b": Other("x", [Other("y", [])]),
    }


def test_an_output_wrapper_lifts_the_definitions_to_its_root() -> None:
    shape = object_shape([Prop("result", shape_of(list[Node]), required=True)])
    assert shape.schema["$defs"] == {"Node": NODE_BODY}
    assert shape.schema["properties"]["result"] == {"type": "array", "items": NODE_BODY}
    assert shape.convert is not None
    assert shape.convert({"result": [{"value": 1}]}) == {"result": [Node(1)]}


def test_fastjsonschema_validates_through_the_references() -> None:
    schema = shape_of(Node, strict=True).schema
    validate = fastjsonschema.compile(schema)
    validate({"value": 1, "children": [{"value": 2, "children": None}]})
    with pytest.raises(fastjsonschema.JsonSchemaValueException):
        validate({"value": 1, "children": [{"value": 2, "children": [{"value": 3, "extra": 1}]}]})
    parser = ArgumentParser("t", schema, shape_of(Node, strict=True).convert, root="output")
    assert parser.parse({"value": 1, "children": None}) == Node(1)


def test_a_schema_without_recursion_has_no_definitions() -> None:
    @attrs.frozen
    class Flat:
        leaf: Leaf
        leaves: list[Leaf]

    assert "$defs" not in str(shape_of(Flat, strict=True).schema)
    assert shape_of(Flat).schema["properties"]["leaf"] == {
        "description": "A leaf.",
        "type": "object",
        "properties": {"label": {"type": "string"}},
        "required": ["label"],
        "additionalProperties": False,
    }


def test_definitions_rename_a_clashing_name_in_the_schema_that_brings_it() -> None:
    defs = Definitions()
    first = defs.take({"$ref": "#/$defs/A", "$defs": {"A": {"type": "integer"}}})
    second = defs.take({"items": {"$ref": "#/$defs/A"}, "$defs": {"A": {"type": "string"}}})
    same = defs.take({"$ref": "#/$defs/A", "$defs": {"A": {"type": "integer"}}})
    assert (first, second, same) == (ref("A"), {"items": ref("A2")}, ref("A"))
    assert defs.rooted({"type": "object"})["$defs"] == {"A": {"type": "integer"}, "A2": {"type": "string"}}
    # A renamed definition changes the bodies that refer to it, which may then clash in turn.
    chained = defs.take(
        {"$ref": "#/$defs/B", "$defs": {"B": {"items": {"$ref": "#/$defs/A"}}, "A": {"type": "null"}}}
    )
    assert chained == ref("B")
    after = defs.rooted({})["$defs"]
    assert after["A3"] == {"type": "null"}
    assert after["B"] == {"items": ref("A3")}


def test_cyclic_names_finds_the_recursive_definitions_only() -> None:
    defs = {
        "A": {"properties": {"b": ref("B")}},
        "B": {"items": ref("A")},
        "C": {"properties": {"a": ref("A")}},
        "D": {"anyOf": [ref("D"), {"type": "null"}]},
        "E": {"enum": [{"$ref": "#/$defs/E"}]},  # data, not a reference
    }
    assert cyclic_names(defs) == {"A", "B", "D"}


def test_strict_problems_report_dangling_and_described_references() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/Missing"}, "b": {"$ref": "#/$defs/X", "description": "x"}},
        "required": ["a", "b"],
        "additionalProperties": False,
        "$defs": {"X": {"type": "integer"}},
    }
    assert strict_schema_problems(schema) == [
        "parameters.a refers to #/$defs/Missing, which the root's $defs does not define",
        "parameters.b must have no keyword beside $ref (put the $ref in a one-member anyOf)",
    ]
