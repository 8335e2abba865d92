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
from agentflow.tools import Param, Tool, ToolArgumentsError, ToolContext, ToolRegistry, tool
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
        (list, {"type": "array", "items": {}}),
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
        (tuple, {"type": "array", "items": {}}),
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


def _arrays(schema: Any) -> list[dict[str, Any]]:
    """Every array schema in ``schema``, however deeply nested."""
    found: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        if schema.get("type") == "array":
            found.append(schema)
        for value in schema.values():
            found.extend(_arrays(value))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(_arrays(value))
    return found


def _keywords(schema: Any) -> set[str]:
    """Every key of every mapping in ``schema``."""
    if isinstance(schema, dict):
        return set(schema).union(*(_keywords(v) for v in schema.values()))
    if isinstance(schema, list):
        return set().union(*(_keywords(v) for v in schema))
    return set()


def test_every_array_schema_has_items_as_openai_requires() -> None:
    # OpenAI answers 400 "array schema missing items" for an array without "items", strict or not.
    @tool
    def tag(  # type: ignore[type-arg]
        paths: list, ids: list[Any], names: set, rows: tuple, seq: Sequence, cells: list[list]
    ) -> str:
        return "ok"

    arrays = _arrays(tag.spec.parameters)
    assert len(arrays) == 7
    assert all("items" in a for a in arrays)
    assert params(tag)["cells"] == {"type": "array", "items": {"type": "array", "items": {}}}
    assert tag.parse_arguments(
        '{"paths": [1, "a"], "ids": [null], "names": [], "rows": [[]], "seq": [], "cells": [[1, {}]]}'
    )["rows"] == ([],)


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
    assert schema["properties"]["nights"] == {
        "type": ["integer", "null"],
        "description": "Default: 1; null for the default",
    }
    assert "default" not in _keywords(schema)  # Azure's strict mode refuses the keyword
    point = schema["properties"]["at"]["anyOf"][0]
    assert point["required"] == ["x", "y", "label"]
    assert point["additionalProperties"] is False
    # A null for an optional parameter means "use the default".
    assert book.parse_arguments('{"city": "Oslo", "nights": null, "at": null}') == {
        "city": "Oslo",
        "at": None,
    }


def test_strict_mode_tells_defaults_in_the_description_and_keeps_null_a_value_where_it_is_one() -> None:
    @tool(strict=True)
    def search(
        q: str,
        days: Annotated[int, "Days back."] = 7,
        limit: int | None = 10,
        lang: Literal["en", "fr"] | None = "en",
        since: str | None = None,
    ) -> None:
        """Search."""

    props = params(search)
    assert "default" not in _keywords(props)
    assert props["days"]["description"] == "Days back. (default: 7; null for the default)"
    assert props["limit"]["description"] == "Default: 10"
    assert props["lang"]["description"] == 'Default: "en"'
    assert "description" not in props["since"]  # null is the default: nothing to tell
    # null is the default where the type has no null; where it has one, null is None and 10 is sent as 10.
    raw = '{"q": "x", "days": null, "limit": null, "lang": "en", "since": null}'
    assert search.parse_arguments(raw) == {"q": "x", "limit": None, "lang": "en", "since": None}


def test_a_strict_schema_without_parameters_still_lists_its_required_ones() -> None:
    @tool(strict=True)
    def now() -> str:
        return "12:00"

    assert now.spec.parameters == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }
    assert "required" not in tool(now.fn).spec.parameters  # non-strict: left out, as before


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


@attrs.frozen
class Address:
    """A postal address."""

    street: str


def test_a_parameter_description_goes_before_its_class_docstring() -> None:
    # Two parameters of one documented class must not both read as the class docstring alone.
    @tool
    def ship(
        sender: Address, recipient: Annotated[Address, "Where it is delivered."], note: Box | None = None
    ) -> str:
        """Ship a parcel.

        Args:
            sender: Where it is picked up.
            note: A note.
        """
        return "ok"

    assert params(ship)["sender"]["description"] == "Where it is picked up.\n\nA postal address."
    assert params(ship)["recipient"]["description"] == "Where it is delivered.\n\nA postal address."
    assert params(ship)["note"]["description"] == "A note."  # Box has no docstring of its own
    assert shape_of(Address).schema["description"] == "A postal address."


def test_a_class_docstring_is_not_repeated_when_the_parameter_says_the_same() -> None:
    @tool(strict=True)
    def ship(sender: Address | None = None) -> str:
        """Ship.

        Args:
            sender: A postal address.
        """
        return "ok"

    assert params(ship)["sender"]["description"] == "A postal address."


def test_a_callable_object_is_described_by_its_call_method() -> None:
    class WebSearch:
        """Client for the search backend.

        Args:
            api_key: The backend key.
        """

        def __init__(self, api_key: str = "k") -> None:
            self.api_key = api_key

        def __call__(self, query: str, api_key: str = "") -> str:
            """Search the web for pages.

            Args:
                query: Words to search for.
            """
            return query

    class Undocumented:
        """Look a word up."""

        def __call__(self, word: str) -> str:
            return word

    search = tool(WebSearch())
    assert search.description == "Search the web for pages."
    assert params(search)["query"]["description"] == "Words to search for."
    assert "description" not in params(search)["api_key"]  # the class's Args describe __init__
    assert tool(Undocumented()).description == "Look a word up."


@attrs.frozen
class Options:
    _limit: int = 5
    name: str = attrs.field(default="x", converter=str.upper)
    cache: dict[str, int] = attrs.field(init=False, factory=dict)


def test_an_object_default_is_shown_as_the_object_the_schema_describes() -> None:
    @tool
    def run(opts: Options = Options(), box: Box = Box(2.0)) -> str:  # noqa: B008 - a frozen default
        return "ok"

    opts = params(run)["opts"]
    assert list(opts["properties"]) == ["limit", "name"]
    assert opts["default"] == {"limit": 5, "name": "X"}  # by alias, without the init=False field
    assert params(run)["box"]["default"] == {"width": 2.0, "tags": []}
    # The advertised default is itself valid arguments.
    assert run.parse_arguments({"opts": opts["default"]}) == {"opts": Options(5, "X")}


def test_a_strict_spec_whose_schema_strict_mode_would_refuse_is_refused_when_the_tool_is_made() -> None:
    # Else the provider answers 400 on the first request that offers the tool.
    loose = {
        "type": "object",
        "properties": {"key": {"type": "string"}, "opts": {"type": "object", "properties": {"n": {}}}},
        "required": ["key"],
    }
    with pytest.raises(ValueError, match="is strict, but its schema is not") as info:
        Tool.from_spec(ToolSpec("lookup", "", loose, strict=True), lambda key, opts=None: key)
    assert str(info.value) == (
        "tool 'lookup' is strict, but its schema is not a strict-mode one: "
        "parameters must have additionalProperties: false; parameters must list 'opts' in required; "
        "parameters.opts must have additionalProperties: false; parameters.opts must list 'n' in required; "
        "fix the schema (an optional property is required and nullable) or set strict=False"
    )
    assert Tool.from_spec(ToolSpec("lookup", "", loose), lambda key, opts=None: key).spec.strict is None

    @tool(strict=True)
    def book(
        city: str, at: Point | None = None, boxes: list[Box] | None = None, f: Filter | None = None
    ) -> None:
        pass

    assert book.spec.strict  # what @tool(strict=True) builds passes the same check


class Clock:
    """No JSON schema for this one."""


@attrs.frozen
class Event:
    title: str
    at: Clock


@attrs.frozen
class Agenda:
    events: list[Event]


def test_an_unsupported_field_type_names_the_field() -> None:
    def schedule(agenda: Agenda) -> None:
        pass

    with pytest.raises(
        TypeError, match=r"^parameter 'agenda' of tool 'schedule': field Event\.at: unsupported"
    ):
        tool(schedule)


def test_an_annotated_tool_context_is_still_the_injected_context() -> None:
    @tool
    async def crawl(url: str, ctx: Annotated[ToolContext, "injected"]) -> str:
        return url

    assert (list(params(crawl)), crawl.context_parameter) == (["url"], "ctx")

    @tool
    async def fetch(url: str, ctx: Annotated[ToolContext | None, "injected"] = None) -> str:
        return url

    assert (list(params(fetch)), fetch.context_parameter) == (["url"], "ctx")


def test_a_method_decorated_in_its_class_body_is_told_to_use_the_bound_method() -> None:
    with pytest.raises(TypeError, match=r"Repo\.get takes 'self'.*tool\(instance\.get\)"):

        class Repo:
            @tool
            def get(self, key: str) -> str:
                return key

    class Store:
        def get(self, key: str) -> str:
            """Read a key."""
            return key

    assert list(params(tool(Store().get))) == ["key"]


def test_a_class_local_to_a_function_under_string_annotations_is_explained() -> None:
    namespace: dict[str, Any] = {}
    exec(
        "from __future__ import annotations\n"
        "import attrs\n"
        "def factory():\n"
        "    @attrs.frozen\n"
        "    class Local:\n"
        "        v: int\n"
        "    def use(x: Local) -> str:\n"
        "        return ''\n"
        "    return use\n",
        namespace,
    )
    with pytest.raises(TypeError, match=r"name 'Local' is not defined .*define it at module level"):
        tool(namespace["factory"]())


@dataclasses.dataclass(frozen=True)
class Ge:
    """Stands for ``annotated_types.Ge``."""

    ge: int


@dataclasses.dataclass(frozen=True)
class Interval:
    """Stands for ``annotated_types.Interval``."""

    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None


@dataclasses.dataclass(frozen=True)
class Len:
    """Stands for ``annotated_types.Len``."""

    min_length: int = 0
    max_length: int | None = None


@dataclasses.dataclass(frozen=True)
class Doc:
    """Stands for ``typing_extensions.Doc``."""

    documentation: str


@dataclasses.dataclass(frozen=True)
class FieldInfo:
    """Stands for what pydantic's ``Field(description=…, ge=…, pattern=…)`` returns."""

    description: str | None
    metadata: list[Any]


@dataclasses.dataclass(frozen=True)
class Pattern:
    pattern: str


def test_annotated_metadata_of_other_libraries_describes_and_constrains() -> None:
    @tool
    def book(
        nights: Annotated[int, FieldInfo("Number of nights", [Ge(1), Interval(le=14)])],
        guests: Annotated[int, Ge(1), Interval(lt=5)] = 1,
        city: Annotated[str, Doc("City to book in"), Len(2, 40)] = "Paris",
        code: Annotated[str | None, FieldInfo(None, [Pattern("^[A-Z]{3}$")])] = None,
        rooms: Annotated[list[str], Len(1)] = ["single"],  # noqa: B006 - never mutated
    ) -> None:
        pass

    props = params(book)
    assert props["nights"] == {
        "type": "integer",
        "description": "Number of nights",
        "minimum": 1,
        "maximum": 14,
    }
    assert props["guests"] == {"type": "integer", "minimum": 1, "exclusiveMaximum": 5, "default": 1}
    assert props["city"] == {
        "type": "string",
        "description": "City to book in",
        "minLength": 2,
        "maxLength": 40,
        "default": "Paris",
    }
    assert props["code"]["pattern"] == "^[A-Z]{3}$"
    assert props["rooms"]["minItems"] == 1
    with pytest.raises(ToolArgumentsError, match=r"arguments\.nights must be smaller than or equal to 14"):
        book.parse_arguments('{"nights": 400}')
    with pytest.raises(ToolArgumentsError, match=r"arguments\.guests must be bigger than or equal to 1"):
        book.parse_arguments('{"nights": 2, "guests": -3}')


def test_pydantic_fields_annotated_types_and_doc_work_as_they_are() -> None:
    pydantic = pytest.importorskip("pydantic")
    annotated_types = pytest.importorskip("annotated_types")
    typing_extensions = pytest.importorskip("typing_extensions")

    def book(nights: int, guests: int = 1, city: str = "Paris") -> None:
        pass

    # Set as objects: this module's string annotations could not see the names imported above.
    book.__annotations__ = {
        "nights": Annotated[int, pydantic.Field(description="Number of nights", ge=1, le=14)],
        "guests": Annotated[int, annotated_types.Gt(0), annotated_types.Le(4)],
        "city": Annotated[str, typing_extensions.Doc("City to book in"), pydantic.Field(pattern="^[A-Z]")],
    }
    props = params(tool(book))
    assert props["nights"] == {
        "type": "integer",
        "description": "Number of nights",
        "minimum": 1,
        "maximum": 14,
    }
    assert props["guests"] == {"type": "integer", "exclusiveMinimum": 0, "maximum": 4, "default": 1}
    assert props["city"] == {
        "type": "string",
        "description": "City to book in",
        "pattern": "^[A-Z]",
        "default": "Paris",
    }
