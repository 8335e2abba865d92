"""``@tool`` schemas: every supported annotation, docstring styles, defaults, strict mode, errors."""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NewType, NotRequired, Optional, Required, TypedDict, Union

import attrs
import pytest

from agentflow.model.tools import ToolSpec
from agentflow.tools import Param, Tool, ToolContext, ToolRegistry, tool
from agentflow.tools.schema import shape_of


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@attrs.frozen
class Point:
    """A point on the map.

    Attributes:
        x: Horizontal position.
    """

    x: int
    y: int = 0
    label: str = attrs.field(default="", metadata={"description": "Shown next to the point"})


@dataclasses.dataclass
class Box:
    width: float
    tags: list[str] = dataclasses.field(default_factory=list)


class Filter(TypedDict, total=False):
    """Search filters."""

    query: Required[str]
    limit: int
    colors: NotRequired[list[Color]]


class Closed(TypedDict):
    name: str
    note: NotRequired[str]


UserId = NewType("UserId", int)


@attrs.frozen
class Node:
    children: list[Node]


def params(t: Tool[..., Any]) -> dict[str, Any]:
    properties: dict[str, Any] = t.spec.parameters["properties"]
    return properties


@pytest.mark.parametrize(
    ("annotation", "schema"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (None, {"type": "null"}),
        (Any, {}),
        (UserId, {"type": "integer"}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (list, {"type": "array"}),
        (Sequence[str], {"type": "array", "items": {"type": "string"}}),
        (set[str], {"type": "array", "items": {"type": "string"}}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (
            tuple[int, str],
            {
                "type": "array",
                "items": [{"type": "integer"}, {"type": "string"}],
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (tuple, {"type": "array"}),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (Mapping[str, Any], {"type": "object"}),
        (dict, {"type": "object"}),
        (Optional[int], {"type": ["integer", "null"]}),  # noqa: UP045 - the spelling under test
        (Union[int, str], {"type": ["integer", "string"]}),  # noqa: UP007
        (int | None, {"type": ["integer", "null"]}),
        (list[int] | None, {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]}),
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Literal[1, "x"], {"type": ["integer", "string"], "enum": [1, "x"]}),
        (Literal["a"] | None, {"type": ["string", "null"], "enum": ["a", None]}),
        (Literal["a"] | int, {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "integer"}]}),
        (Color, {"type": "string", "enum": ["red", "green"]}),
        (Level, {"type": "integer", "enum": [1, 2]}),
        (Annotated[str, "The city"], {"type": "string", "description": "The city"}),
        (
            Annotated[int, Param("Days ahead", schema={"minimum": 1, "maximum": 14})],
            {"type": "integer", "description": "Days ahead", "minimum": 1, "maximum": 14},
        ),
    ],
)
def test_annotation_maps_to_json_schema(annotation: Any, schema: dict[str, Any]) -> None:
    assert shape_of(annotation).schema == schema


def test_attrs_class_becomes_a_closed_object_with_descriptions_and_defaults() -> None:
    assert shape_of(Point).schema == {
        "description": "A point on the map.",
        "type": "object",
        "properties": {
            "x": {"type": "integer", "description": "Horizontal position."},
            "y": {"type": "integer", "default": 0},
            "label": {"type": "string", "description": "Shown next to the point", "default": ""},
        },
        "required": ["x"],
        "additionalProperties": False,
    }


def test_dataclass_becomes_an_object_without_the_generated_docstring() -> None:
    assert shape_of(Box).schema == {
        "type": "object",
        "properties": {
            "width": {"type": "number"},
            "tags": {"type": "array", "items": {"type": "string"}, "default": []},
        },
        "required": ["width"],
        "additionalProperties": False,
    }


def test_typeddict_required_and_not_required_keys() -> None:
    schema = shape_of(Filter).schema
    assert schema["description"] == "Search filters."
    assert schema["required"] == ["query"]
    assert schema["properties"]["colors"] == {
        "type": "array",
        "items": {"type": "string", "enum": ["red", "green"]},
    }
    assert shape_of(Closed).schema["required"] == ["name"]


def test_function_signature_becomes_the_parameters_schema() -> None:
    @tool
    async def search(query: str, limit: int = 10, color: Color = Color.RED, at: Point | None = None) -> str:
        """Search the catalogue."""
        return query

    assert search.spec == ToolSpec(
        name="search",
        description="Search the catalogue.",
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer", "default": 10},
                "color": {"type": "string", "enum": ["red", "green"], "default": "red"},
                "at": {"anyOf": [shape_of(Point).schema, {"type": "null"}], "default": None},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        strict=None,
    )


def test_a_default_without_a_json_form_is_left_out_of_the_schema_but_still_applies() -> None:
    sentinel = object()

    @tool
    def f(x: Any = sentinel) -> bool:
        return x is sentinel

    assert params(f)["x"] == {}
    assert f.parse_arguments("") == {}


def test_tool_context_parameter_is_injected_not_described() -> None:
    @tool
    async def fetch(url: str, ctx: ToolContext) -> str:
        return url

    assert list(params(fetch)) == ["url"]
    assert fetch.context_parameter == "ctx"


@pytest.mark.parametrize(
    "doc",
    [
        # Google
        """Fetch a page.

        Downloads it first.

        Args:
            url: The address.
            retries (int): How many
                attempts to make.

        Returns:
            The body.
        """,
        # NumPy
        """Fetch a page.

        Downloads it first.

        Parameters
        ----------
        url : str
            The address.
        retries : int, optional
            How many attempts to make.
        """,
        # reST
        """Fetch a page.

        Downloads it first.

        :param url: The address.
        :param int retries: How many attempts to make.
        :returns: The body.
        """,
    ],
    ids=["google", "numpy", "rest"],
)
def test_docstring_styles_give_description_and_parameter_descriptions(doc: str) -> None:
    def fetch(url: str, retries: int = 1) -> str:
        return url

    fetch.__doc__ = doc
    t = tool(fetch)
    assert t.spec.description == "Fetch a page.\n\nDownloads it first."
    assert params(t)["url"]["description"] == "The address."
    assert params(t)["retries"]["description"] == "How many attempts to make."


def test_annotated_description_wins_over_the_docstring() -> None:
    @tool
    def f(city: Annotated[str, "From the annotation"]) -> str:
        """Do it.

        Args:
            city: From the docstring.
        """
        return city

    assert params(f)["city"]["description"] == "From the annotation"


def test_decorator_options_override_name_and_description_and_set_timeout() -> None:
    @tool(name="lookup-v2", description="Look things up.", timeout=2.5)
    def lookup(key: str) -> str:
        """Ignored."""
        return key

    assert (lookup.name, lookup.description, lookup.timeout) == ("lookup-v2", "Look things up.", 2.5)
    assert lookup("k") == "k"  # calling the Tool calls the function


def test_strict_mode_requires_every_property_and_makes_optional_ones_nullable() -> None:
    @tool(strict=True)
    def book(city: str, nights: int = 1, at: Point | None = None) -> str:
        return city

    schema = book.spec.parameters
    assert book.spec.strict is True
    assert schema["required"] == ["city", "nights", "at"]
    assert schema["properties"]["nights"] == {"type": ["integer", "null"]}
    assert "default" not in str(schema)
    point = schema["properties"]["at"]["anyOf"][0]
    assert point["required"] == ["x", "y", "label"]
    assert point["additionalProperties"] is False
    # A null for an optional parameter means "use the default".
    assert book.parse_arguments('{"city": "Oslo", "nights": null, "at": null}') == {
        "city": "Oslo",
        "at": None,
    }


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        (dict[str, int], "strict mode"),
        (Any, "strict mode"),
        (list, "strict mode"),
    ],
)
def test_strict_mode_rejects_what_it_cannot_express(annotation: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        shape_of(annotation, strict=True)


class Opaque:
    pass


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        (Opaque, "unsupported annotation"),
        (dict[int, str], "mapping keys must be str"),
        (Node, "recursive type Node"),
        (Literal[b"x"], "Literal values"),
    ],
)
def test_unsupported_annotations_fail_at_decoration_time(annotation: Any, message: str) -> None:
    def f(x: int) -> None:
        pass

    f.__annotations__["x"] = annotation
    with pytest.raises(TypeError, match=message) as info:
        tool(f)
    assert "parameter 'x' of tool 'f'" in str(info.value)


def test_an_optional_tool_context_is_injected_too() -> None:
    @tool
    async def fetch(url: str, ctx: ToolContext | None = None) -> str:
        return url

    assert (list(params(fetch)), fetch.context_parameter) == (["url"], "ctx")


def test_generators_are_refused_as_tools() -> None:
    async def stream() -> Any:
        yield 1

    def gen() -> Any:
        yield 1

    for fn in (stream, gen):
        with pytest.raises(TypeError, match="generator"):
            tool(fn)


def test_signatures_that_cannot_be_described_fail_clearly() -> None:
    def no_hint(x):  # type: ignore[no-untyped-def]
        return x

    def star(*args: int) -> None:
        pass

    def kw(**kwargs: int) -> None:
        pass

    def positional(x: int, /) -> None:
        pass

    def two_contexts(a: ToolContext, b: ToolContext) -> None:
        pass

    for fn, message in [
        (no_hint, "add a type annotation"),
        (star, r"\*args/\*\*kwargs"),
        (kw, r"\*args/\*\*kwargs"),
        (positional, "positional-only"),
        (two_contexts, "only one parameter"),
    ]:
        with pytest.raises(TypeError, match=message):
            tool(fn)  # type: ignore[call-overload]


def test_tool_names_must_be_what_model_apis_accept() -> None:
    def f() -> None:
        pass

    with pytest.raises(ValueError, match="not valid"):
        tool(name="has space")(f)
    with pytest.raises(ValueError, match="timeout"):
        tool(timeout=0)(f)
    assert tool(timeout=math.inf)(f).timeout == math.inf


def test_decorator_options_are_checked_where_they_are_written() -> None:
    with pytest.raises(ValueError, match="not valid"):
        tool(name="has space")
    with pytest.raises(ValueError, match="timeout"):
        tool(timeout=-1)


def test_from_spec_takes_the_schema_as_given() -> None:
    spec = ToolSpec(
        "echo",
        "Echo it back",
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    )

    async def echo(text: str, ctx: ToolContext) -> str:
        return text

    t = Tool.from_spec(spec, echo, timeout=3)
    assert (t.spec, t.is_async, t.context_parameter, t.timeout) == (spec, True, "ctx", 3)
    assert t.parse_arguments('{"text": "hi"}') == {"text": "hi"}
    with pytest.raises(ValueError, match="invalid parameters schema"):
        Tool.from_spec(ToolSpec("bad", "", {"type": "nonsense"}), echo)


def test_a_tool_built_directly_knows_whether_its_function_is_async() -> None:
    async def ping() -> str:
        return "pong"

    t = Tool(ToolSpec("ping"), ping)
    assert t.is_async
    assert t.parse_arguments("") == {}
    with pytest.raises(ValueError, match="not valid"):
        Tool(ToolSpec("bad name"), ping)


def test_callable_objects_and_methods_become_tools() -> None:
    class Counter:
        def __init__(self) -> None:
            self.n = 0

        def bump(self, by: int = 1) -> int:
            """Bump the counter."""
            self.n += by
            return self.n

    class AsyncEcho:
        async def __call__(self, text: str) -> str:
            return text

    counter = Counter()
    bump = tool(counter.bump)
    assert (bump.name, list(params(bump)), bump.is_async) == ("bump", ["by"], False)
    echo = tool(name="echo")(AsyncEcho())
    assert (list(params(echo)), echo.is_async) == (["text"], True)


def test_registry_rejects_duplicates_and_normalises_names() -> None:
    def lookup(key: str) -> str:
        return key

    registry = ToolRegistry([lookup])
    assert [s.name for s in registry.specs] == ["lookup"]
    for raw in ("lookup", " lookup\n", "functions.lookup", "lookup<|channel|>commentary"):
        assert registry.normalize_name(raw) == "lookup"
        assert registry.resolve(raw) is registry["lookup"]
    assert registry.normalize_name(" missing ") == "missing"
    assert registry.resolve("missing") is None
    with pytest.raises(ValueError, match="two tools are named 'lookup'"):
        ToolRegistry([lookup, tool(lookup)])
    with pytest.raises(TypeError, match="tools must be a list of tools or functions, got function"):
        ToolRegistry(lookup)  # type: ignore[arg-type]  # a single tool, not in a list


def test_an_exact_registered_name_wins_over_normalisation() -> None:
    def a() -> str:
        return "a"

    prefixed = tool(name="functions_a")(a)
    registry = ToolRegistry([a, prefixed])
    assert registry.resolve("functions_a") is prefixed
    assert registry.resolve("functions.a") is registry["a"]
