"""Pydantic models as tool parameter types: pydantic's schema made OpenAI-ready, pydantic's validation.

The schema is pydantic's own (aliases, ``Field`` constraints, docstrings), with nested models written inline,
closed objects and, in strict mode, every property required; the arguments are validated by the model, so its
validators run and the tool gets model instances; a refusal names the path and pydantic's reason.
"""

from __future__ import annotations

import datetime
import subprocess
import sys
from typing import Annotated, Any, Literal

import attrs
import pytest

pydantic = pytest.importorskip("pydantic")

from pydantic import (  # noqa: E402
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    field_validator,
    model_validator,
)

from agentflow.tools import ToolArgumentsError, tool  # noqa: E402
from agentflow.tools.schema import shape_of, strict_schema_problems  # noqa: E402
from agentflow.tools.schema_pydantic import is_pydantic_model  # noqa: E402


class Address(BaseModel):
    """A postal address."""

    street: str
    city: str = Field(description="City name")
    zip_code: str | None = Field(None, alias="zipCode", pattern=r"^\d{5}$")


class Order(BaseModel):
    """An order."""

    sku: str
    qty: int = Field(1, ge=1)
    ship_to: Address = Field(description="Where to ship")
    bill_to: Address | None = None
    tags: set[str] = set()

    @field_validator("sku")
    @classmethod
    def upper_case(cls, value: str) -> str:
        if not value.isupper():
            raise ValueError("sku must be upper case")
        return value


class Range(BaseModel):
    lo: int
    hi: int

    @model_validator(mode="after")
    def ordered(self) -> Range:
        if self.lo > self.hi:
            raise ValueError("lo must not exceed hi")
        return self


class Cat(BaseModel):
    kind: Literal["cat"] = "cat"
    meows: int


class Dog(BaseModel):
    kind: Literal["dog"] = "dog"
    barks: int


@attrs.frozen
class Fish:
    fins: int


class Comment(BaseModel):
    """A comment and its replies."""

    text: str
    replies: list[Comment] = []
    parent: Comment | None = Field(None, description="What it answers")


@attrs.frozen
class AttrsComment:
    text: str
    replies: list[AttrsComment]


AttrsComment.__name__ = "Comment"  # as if from another module: both are recursive and called Comment


class Person(BaseModel):
    name: str
    employer: Company | None = None


class Company(BaseModel):
    staff: list[Person]


class Loose(BaseModel):
    meta: dict[str, int]
    anything: Any = None


class Tags(RootModel[list[str]]):
    pass


class Pair(BaseModel):
    a: str
    b: str

    @field_validator("a", "b")
    @classmethod
    def short(cls, value: str) -> str:
        if len(value) > 2:
            raise ValueError("too long")
        return value


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")

    a: int


class Shelter(BaseModel):
    pet: Cat | Dog = Field(discriminator="kind")


class Stamped(BaseModel):
    """A model validated strictly: JSON mode still reads a date-time and a tuple from JSON."""

    model_config = ConfigDict(strict=True)

    at: datetime.datetime
    codes: tuple[int, ...]


class Handler(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    callback: Fish


ADDRESS = {
    "description": "A postal address.",
    "properties": {
        "street": {"type": "string"},
        "city": {"description": "City name", "type": "string"},
        "zipCode": {"anyOf": [{"pattern": r"^\d{5}$", "type": "string"}, {"type": "null"}], "default": None},
    },
    "required": ["street", "city"],
    "title": "Address",
    "type": "object",
    "additionalProperties": False,
}


def keywords(schema: Any) -> set[str]:
    """Every key of every mapping in ``schema`` (property names too)."""
    if isinstance(schema, dict):
        return set(schema).union(*(keywords(v) for v in schema.values()))
    if isinstance(schema, list):
        return set().union(*(keywords(v) for v in schema))
    return set()


def refs_with_siblings(schema: Any) -> bool:
    if isinstance(schema, dict):
        return ("$ref" in schema and len(schema) > 1) or any(refs_with_siblings(v) for v in schema.values())
    return isinstance(schema, list) and any(refs_with_siblings(v) for v in schema)


def test_the_schema_is_pydantics_with_nested_models_inline_and_objects_closed() -> None:
    schema = shape_of(Order).schema
    assert schema == {
        "description": "An order.",
        "properties": {
            "sku": {"type": "string"},
            "qty": {"default": 1, "minimum": 1, "type": "integer"},
            # The field's own description first, then the model's docstring (as for attrs classes).
            "ship_to": {**ADDRESS, "description": "Where to ship\n\nA postal address."},
            "bill_to": {"anyOf": [ADDRESS, {"type": "null"}], "default": None},
            "tags": {"default": [], "items": {"type": "string"}, "type": "array", "uniqueItems": True},
        },
        "required": ["sku", "ship_to"],
        "title": "Order",
        "type": "object",
        "additionalProperties": False,
    }
    assert shape_of(Order).class_description == "An order."


def test_the_strict_schema_requires_everything_and_states_the_defaults() -> None:
    schema = shape_of(Order, strict=True).schema
    assert strict_schema_problems(schema) == []
    assert schema["required"] == ["sku", "qty", "ship_to", "bill_to", "tags"]
    assert schema["properties"]["qty"] == {
        "anyOf": [{"minimum": 1, "type": "integer"}, {"type": "null"}],
        "description": "Default: 1; null for the default",
    }
    # Set: no uniqueItems (strict mode refuses it; the set drops duplicates), null for the default.
    assert schema["properties"]["tags"] == {
        "anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}],
        "description": "Default: []; null for the default",
    }
    # Where None is a value (an Optional with default None), null stays it: no note, already nullable.
    assert schema["properties"]["bill_to"]["anyOf"][1] == {"type": "null"}
    assert "default" not in keywords(schema)
    assert schema["properties"]["ship_to"]["required"] == ["street", "city", "zipCode"]


def test_a_tool_is_called_with_model_instances_and_nulls_take_the_defaults() -> None:
    calls: list[Order] = []

    @tool(strict=True)
    def place(order: Order, note: str | None = None) -> str:
        """Place an order."""
        calls.append(order)
        return "ok"

    assert strict_schema_problems(place.spec.parameters) == []
    kwargs = place.parse_arguments(
        '{"order": {"sku": "AB", "qty": null, "bill_to": null, "tags": ["a", "a"],'
        ' "ship_to": {"street": "Main", "city": "Oslo", "zipCode": "01234"}}, "note": null}'
    )
    order = kwargs["order"]
    assert isinstance(order, Order)
    assert order == Order(sku="AB", ship_to=Address(street="Main", city="Oslo", zipCode="01234"), tags={"a"})
    assert order.qty == 1  # null: pydantic's default
    assert order.ship_to.zip_code == "01234"  # by its alias


def test_a_field_validator_that_refuses_names_the_field_and_pydantics_reason() -> None:
    @tool
    def place(order: Order) -> None:
        """Place an order."""

    with pytest.raises(ToolArgumentsError) as caught:
        place.parse_arguments({"order": {"sku": "ab", "ship_to": {"street": "s", "city": "c"}}})
    assert str(caught.value) == "arguments.order.sku is not valid: Value error, sku must be upper case"
    assert caught.value.path == "order.sku"


def test_every_refused_field_is_named_at_once() -> None:
    @tool
    def pairs(items: list[Pair]) -> None:
        """Pairs."""

    with pytest.raises(ToolArgumentsError) as caught:
        pairs.parse_arguments({"items": [{"a": "x", "b": "y"}, {"a": "long", "b": "longer"}]})
    assert str(caught.value) == (
        "arguments.items[1].a is not valid: Value error, too long; "
        "arguments.items[1].b is not valid: Value error, too long"
    )


def test_a_model_validator_that_refuses_names_the_model() -> None:
    with pytest.raises(
        ToolArgumentsError, match=r"^arguments\.span is not a valid Range: Value error, lo must"
    ):
        tool(_spans).parse_arguments({"span": {"lo": 3, "hi": 1}})


def _spans(span: Range) -> None:
    """Spans."""


def test_aliases_are_the_names_on_the_wire() -> None:
    class Query(BaseModel):
        model_config = ConfigDict(alias_generator=lambda name: name.upper())

        text: str
        limit: int = Field(10, validation_alias=AliasChoices("LIMIT", "max"))

    schema = shape_of(Query).schema
    assert list(schema["properties"]) == ["TEXT", "LIMIT"]
    convert = shape_of(Query).convert
    assert convert is not None
    assert convert({"TEXT": "hi", "LIMIT": 3}) == Query(TEXT="hi", LIMIT=3)


def test_a_union_picks_the_pydantic_member_the_value_fits() -> None:
    @tool
    def adopt(pet: Cat | Dog | Fish, more: list[Cat | Dog] | None = None) -> None:
        """Adopt."""

    kwargs = adopt.parse_arguments({"pet": {"barks": 2}, "more": [{"meows": 1}, {"kind": "dog", "barks": 3}]})
    assert kwargs == {"pet": Dog(barks=2), "more": [Cat(meows=1), Dog(barks=3)]}
    assert adopt.parse_arguments({"pet": {"fins": 4}}) == {"pet": Fish(4)}
    assert adopt.parse_arguments({"pet": {"kind": "cat", "meows": 9}})["pet"] == Cat(meows=9)


def test_a_union_error_describes_the_pydantic_members_by_title() -> None:
    @tool
    def adopt(pet: Cat | Dog) -> None:
        """Adopt."""

    with pytest.raises(ToolArgumentsError) as caught:
        adopt.parse_arguments({"pet": {"barks": "loud"}})
    assert str(caught.value) == (
        "arguments.pet must be Cat (an object with meows (optional: kind)) or Dog (an object with barks "
        "(optional: kind)), got an object with barks; closest: arguments.pet.barks must be integer, got the "
        'string "loud"'
    )


def test_a_discriminated_union_keeps_its_tag_required_in_strict_mode() -> None:
    schema = shape_of(Shelter, strict=True).schema
    cat, dog = schema["properties"]["pet"]["anyOf"]  # oneOf, which strict mode refuses, becomes anyOf
    # The tag's one value, not a nullable "default": a null would fit both members.
    assert cat["properties"]["kind"] == {"const": "cat", "type": "string"}
    assert dog["required"] == ["kind", "barks"]
    assert "discriminator" not in keywords(shape_of(Shelter).schema)  # its mapping named inlined $defs
    assert strict_schema_problems(schema) == []
    convert = shape_of(Shelter, strict=True).convert
    assert convert is not None
    assert convert({"pet": {"kind": "dog", "barks": 1}}) == Shelter(pet=Dog(barks=1))


def test_a_strict_pydantic_model_is_validated_as_json() -> None:
    convert = shape_of(Stamped).convert
    assert convert is not None
    stamped = convert({"at": "2024-05-31T14:30:00+02:00", "codes": [1, 2]})
    assert stamped.at.hour == 14
    assert stamped.codes == (1, 2)


def test_a_recursive_model_is_defined_once_and_written_out_at_the_root() -> None:
    shape = shape_of(Comment, strict=True)
    schema = shape.schema
    assert list(schema["$defs"]) == ["Comment"]
    body = {k: v for k, v in schema.items() if k != "$defs"}
    assert body == schema["$defs"]["Comment"]
    assert body["type"] == "object"  # not pydantic's root {"$ref": …}: OpenAI wants an object there
    assert body["properties"]["replies"] == {
        "anyOf": [{"items": {"$ref": "#/$defs/Comment"}, "type": "array"}, {"type": "null"}],
        "description": "Default: []; null for the default",
    }
    assert body["properties"]["parent"] == {
        "anyOf": [{"$ref": "#/$defs/Comment"}, {"type": "null"}],
        "description": "What it answers",
    }
    assert strict_schema_problems(schema) == []
    assert not refs_with_siblings(schema)
    assert shape.convert is not None
    data = {"text": "a", "replies": [{"text": "b", "replies": None, "parent": None}], "parent": None}
    assert shape.convert(data) == Comment(text="a", replies=[Comment(text="b")])


def test_deep_recursive_data_is_validated_past_pydantics_json_depth() -> None:
    @tool(strict=True)
    def thread(root: Comment) -> None:
        """A thread."""

    node: dict[str, Any] = {"text": "0", "replies": None, "parent": None}
    for level in range(1, 180):  # pydantic's JSON parser stops at 200 levels, ~100 of this tree
        node = {"text": str(level), "replies": [node], "parent": None}
    comment = thread.parse_arguments({"root": node})["root"]
    depth = 0
    while comment.replies:
        comment, depth = comment.replies[0], depth + 1
    assert depth == 179


def test_mutually_recursive_models() -> None:
    shape = shape_of(Person, strict=True)
    assert sorted(shape.schema["$defs"]) == ["Company", "Person"]
    assert strict_schema_problems(shape.schema) == []
    assert shape.convert is not None
    data = {"name": "Ada", "employer": {"staff": [{"name": "Bob", "employer": None}]}}
    assert shape.convert(data) == Person(name="Ada", employer=Company(staff=[Person(name="Bob")]))


def test_a_model_used_twice_is_defined_once() -> None:
    @tool
    def both(a: Comment, b: Annotated[list[Comment], "more"]) -> None:
        """Both."""

    assert list(both.spec.parameters["$defs"]) == ["Comment"]
    kwargs = both.parse_arguments({"a": {"text": "x"}, "b": [{"text": "y", "replies": [{"text": "z"}]}]})
    assert kwargs["b"][0].replies[0].text == "z"


def test_a_pydantic_and_an_attrs_recursive_class_of_one_name_get_two_definitions() -> None:
    @tool
    def mixed(a: Comment, items: list[AttrsComment | Comment]) -> None:
        """Mixed."""

    schema = mixed.spec.parameters
    defs = schema["$defs"]
    attrs_member, pydantic_member = schema["properties"]["items"]["items"]["anyOf"]
    # Each class's references lead to its own body, whatever name the clash left it.
    attrs_name = attrs_member["properties"]["replies"]["items"]["$ref"].removeprefix("#/$defs/")
    assert defs[attrs_name] == attrs_member
    pydantic_name = pydantic_member["properties"]["replies"]["items"]["$ref"].removeprefix("#/$defs/")
    assert attrs_name != pydantic_name
    assert defs[pydantic_name] == pydantic_member
    assert defs[pydantic_name]["title"] == "Comment"
    kwargs = mixed.parse_arguments(
        {
            "a": {"text": "a", "replies": [{"text": "b"}]},
            "items": [
                {"text": "c", "replies": [{"text": "d", "replies": []}]},
                {"text": "e", "parent": None},
            ],
        }
    )
    assert kwargs == {
        "a": Comment(text="a", replies=[Comment(text="b")]),
        "items": [AttrsComment("c", [AttrsComment("d", [])]), Comment(text="e")],
    }


def test_what_strict_mode_cannot_express_is_refused_there_and_plain_otherwise() -> None:
    with pytest.raises(TypeError, match=r"pydantic model Loose at meta: an object with free-form keys"):
        shape_of(Loose, strict=True)

    def f(x: Open) -> None:
        """F."""

    with pytest.raises(TypeError, match=r"parameter 'x' of tool 'f'.*extra keys \(extra='allow'\)"):
        tool(strict=True)(f)
    schema = shape_of(Loose).schema
    assert schema["properties"]["meta"] == {"additionalProperties": {"type": "integer"}, "type": "object"}
    assert shape_of(Loose).convert is not None


def test_a_root_model_is_its_root_type() -> None:
    shape = shape_of(Tags, strict=True)
    assert shape.schema == {"items": {"type": "string"}, "title": "Tags", "type": "array"}
    assert shape.convert is not None
    assert shape.convert(["a", "b"]) == Tags(["a", "b"])


def test_a_model_default_is_shown_by_its_aliases() -> None:
    @tool
    def ship(to: Address = Address(street="Main", city="Oslo", zipCode="01234")) -> None:  # noqa: B008
        """Ship."""

    assert ship.spec.parameters["properties"]["to"]["default"] == {
        "street": "Main",
        "city": "Oslo",
        "zipCode": "01234",
    }


def test_detection_needs_no_import_and_importing_agentflow_loads_no_pydantic() -> None:
    assert is_pydantic_model(Order)
    assert not is_pydantic_model(BaseModel)
    assert not is_pydantic_model(Fish)
    assert not is_pydantic_model(Order(sku="A", ship_to=Address(street="s", city="c")))
    code = "import sys, agentflow, agentflow.tools; sys.exit('pydantic' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_a_model_pydantic_cannot_describe_is_refused_at_decoration_time() -> None:
    def f(x: Handler) -> None:
        """F."""

    with pytest.raises(TypeError, match=r"parameter 'x' of tool 'f': pydantic cannot describe Handler"):
        tool(f)
