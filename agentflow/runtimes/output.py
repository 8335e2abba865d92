"""Structured output: the type an agent's final answer must have, and how an answer is read into it.

``Agent(output_type=Weather)`` asks the model for its final answer as JSON matching ``Weather``'s schema
(``response_format`` ``json_schema`` on Chat, ``text.format`` on Responses, on every step's call: the
model may still call tools first; ``mode="prompted"`` puts the schema in the system prompt instead), then
reads the answer into a ``Weather`` (``AgentResult.output``). An answer that is not valid JSON, or does not
match, is sent back to the model with what is wrong and the schema (``OUTPUT_RETRY_PROMPT``,
``OutputRejected`` on the bus), up to ``retries`` times; then the run fails with ``OutputValidationError``.
``validators`` add checks of your own on the value read (``agentflow.runtimes.output_validators``): one that
raises ``RejectOutput("why")`` sends the answer back alike, with its message (``OUTPUT_REJECTED_PROMPT``).

Any type a tool parameter may have works (``agentflow.tools.schema``), ``str`` aside (the default: the
answer's text): an attrs class, a dataclass, a ``TypedDict``, ``list[X]``, a ``Literal``, a union… A type
whose schema is not an object is wrapped as ``{"result": …}`` on the wire (OpenAI requires an object at the
root) and unwrapped when read. The schema is strict (OpenAI's strict mode: the model's output is guaranteed to
match) when the type allows it; a type that strict mode cannot express (``dict[str, int]``, ``Any``) gets a
plain schema, which is validated here alike.

Reading is tolerant of servers that ignore ``response_format`` (many OpenAI-compatible ones): JSON in
Markdown fences, prose or reasoning tags is found (``json_text.json_spans``; the last value that matches
wins, as an example or a draft comes before the answer), optional fields may be left out, and a wrapped
type's bare value is accepted.

Pure: no I/O, nothing async.

>>> import attrs
>>> @attrs.frozen
... class City:
...     name: str
...     population: int
>>> spec = OutputType(City)
>>> spec.response_format()["json_schema"]["name"], spec.strict
('City', True)
>>> spec.parse('{"name": "Paris", "population": 2102650}')
City(name='Paris', population=2102650)
>>> OutputType(list[int]).parse('Here you go: [1, 2, 3]')
[1, 2, 3]
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping
from types import UnionType
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, TypeAlias, TypeVar, cast, overload

import orjson

from ..exact_json import loads as exact_loads
from ..result import AgentResult, OutputT
from ..tools.arguments import ArgumentParser, ToolArgumentsError
from ..tools.schema import MISSING, Prop, Shape, object_shape, shape_of
from .errors import AgentRunError
from .json_text import MAX_SCANNED_CHARS, JsonSpan, json_spans
from .output_validators import OutputValidator, takes_context

if TYPE_CHECKING:
    from typing import _SpecialForm

__all__ = [
    "AGENT_DEFAULT",
    "OUTPUT_INSTRUCTIONS",
    "OUTPUT_REJECTED_PROMPT",
    "OUTPUT_RETRY_PROMPT",
    "AgentDefault",
    "OutputMode",
    "OutputType",
    "OutputValidationError",
    "TypeForm",
    "output_type_of",
]

OUTPUT_RETRY_PROMPT: Final = (
    "Your final answer does not match the required output format: {error}. "
    "Answer again with only a JSON value that matches this JSON schema: {schema}"
)
"""The user turn that sends a rejected final answer back to the model: ``{error}`` is what is wrong,
``{schema}`` the schema (a server that ignored ``response_format`` never showed it to the model)."""

OUTPUT_REJECTED_PROMPT: Final = (
    "Your final answer was rejected: {error}\nCorrect it and answer again, in the same format."
)
"""The user turn that sends back a final answer a validator rejected (``RejectOutput``): ``{error}`` is its
message. The answer matched the schema, so the schema is not repeated."""

OUTPUT_INSTRUCTIONS: Final = (
    "When you give your final answer, answer with only a JSON value (no other text) that matches this JSON "
    "schema: {schema}"
)
"""What the system prompt says in ``mode="prompted"`` (``{schema}`` is the schema as JSON)."""

OutputMode: TypeAlias = Literal["native", "prompted"]


class _AgentDefault(enum.Enum):
    AGENT_DEFAULT = "the agent's output type"


AGENT_DEFAULT: Final = _AgentDefault.AGENT_DEFAULT
"""The ``output_type`` of a run that takes its agent's: ``agent.run(x)`` is
``agent.run(x, output_type=AGENT_DEFAULT)``."""
AgentDefault: TypeAlias = Literal[_AgentDefault.AGENT_DEFAULT]
"""``AGENT_DEFAULT``'s type, for annotations."""

TypeForm: TypeAlias = "_SpecialForm | UnionType | type[Any]"
"""What type checkers see of an output type that is not a class (``Literal[...]``, ``X | Y``,
``Optional[...]``, ``Annotated[...]``): such a type's output is ``Any`` to them. Its overloads come after a
class's, which a class matches first. ``type[Any]`` is for ``A | B``, which mypy types as ``UnionType |
type[A]``: matched whole here, where member by member it made the output an ``A``."""
NoClassForm: TypeAlias = "_SpecialForm | UnionType"
"""``TypeForm`` less the classes, for ``OutputType``'s overload with validators: a class whose validators
take another type is then an error, not an ``OutputType[Any]``."""

_WRAPPER: Final = "result"
_T = TypeVar("_T")
_NAME: Final = re.compile(r"[^A-Za-z0-9_-]+")


class OutputValidationError(AgentRunError):
    """The model's final answer did not match the agent's output type, after every retry.

    ``text`` is the last answer and ``reason`` what is wrong with it; ``partial`` keeps the run's work.
    """

    def __init__(self, reason: str, text: str, partial: AgentResult) -> None:
        super().__init__(f"the model's final answer does not match the output type: {reason}", partial)
        self.reason = reason
        self.text = text

    def __reduce__(self) -> tuple[Any, ...]:
        # Picklable (multiprocessing, task queues) although ``__init__`` takes other arguments than ``args``.
        return (type(self), (self.reason, self.text, self.partial))


class OutputType(Generic[OutputT]):
    """What an agent's final answer must be: ``tp`` (any type a tool parameter may have but ``str``), its
    JSON schema, and how an answer is read into it.

    ``Agent(output_type=X)`` is ``Agent(output_type=OutputType(X))``; build one yourself to choose:

    - ``name``: the schema's name on the wire (default: the type's name, else ``"output"``);
    - ``description``: sent with the schema (default: none; the type's docstring describes an object);
    - ``strict``: OpenAI's strict mode; ``None`` (default) uses it when the type allows it;
    - ``retries``: how many times a final answer that does not match is sent back (default 2);
    - ``mode``: ``"native"`` (default) sends the schema as ``response_format`` / ``text.format``;
      ``"prompted"`` sends none and puts the schema in the system prompt (``OUTPUT_INSTRUCTIONS``), for
      servers that refuse or mishandle ``json_schema`` (DeepSeek's API refuses it; vLLM stops calling tools
      while a ``response_format`` is set);
    - ``validators``: checks of your own on the value read, in order, each given what the one before
      returned: ``fn(value)`` or ``fn(value, context)`` (an ``OutputContext``), sync or async, returning the
      value to use (``None``: unchanged); ``raise RejectOutput("why")`` sends the answer back to the model
      with that message (counted in ``retries``); any other exception fails the run (``ValidatorError``).
      They run on final answers only, never on tool calls.

    >>> from agentflow.runtimes.output_validators import RejectOutput
    >>> def positive(n: int) -> None:
    ...     if n <= 0:
    ...         raise RejectOutput("give a positive number")
    >>> OutputType(int, validators=[positive]).validators == (positive,)
    True
    """

    __slots__ = (
        "_instructions",
        "_parsers",
        "_partial_reader",
        "_response_format",
        "_retry_text",
        "_sealed",
        "_wrapped",
        "description",
        "mode",
        "name",
        "retries",
        "schema",
        "strict",
        "type",
        "validator_context",
        "validators",
    )
    _partial_reader: tuple[Callable[[Any], Any], Callable[[Any], Any] | None]  # set by ``_partial``

    @overload
    def __init__(
        self: OutputType[_T],
        tp: type[_T],
        *,
        name: str | None = ...,
        description: str | None = ...,
        strict: bool | None = ...,
        retries: int = ...,
        mode: OutputMode = ...,
        validators: Iterable[OutputValidator[_T]] = ...,
    ) -> None: ...

    @overload
    def __init__(
        self: OutputType[Any],
        tp: NoClassForm,
        *,
        name: str | None = ...,
        description: str | None = ...,
        strict: bool | None = ...,
        retries: int = ...,
        mode: OutputMode = ...,
        validators: Iterable[OutputValidator[Any]] = ...,
    ) -> None: ...

    @overload
    def __init__(
        self: OutputType[Any],
        tp: TypeForm,
        *,
        name: str | None = ...,
        description: str | None = ...,
        strict: bool | None = ...,
        retries: int = ...,
        mode: OutputMode = ...,
    ) -> None: ...

    def __init__(
        self,
        tp: Any,
        *,
        name: str | None = None,
        description: str | None = None,
        strict: bool | None = None,
        retries: int = 2,
        mode: OutputMode = "native",
        validators: Iterable[OutputValidator[Any]] = (),
    ) -> None:
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"OutputType retries must be an int >= 0, got {retries!r}")
        if mode not in ("native", "prompted"):
            raise ValueError(f"OutputType mode must be 'native' or 'prompted', got {mode!r}")
        for option, given in (("name", name), ("description", description)):
            if given is not None and not isinstance(given, str):
                raise TypeError(f"OutputType {option} must be a str or None, got {given!r}")
        if strict is not None and not isinstance(strict, bool):
            raise TypeError(f"OutputType strict must be a bool or None, got {strict!r}")
        if isinstance(validators, str | bytes) or not isinstance(validators, Iterable):
            raise TypeError(f"OutputType validators must be a list of callables, got {validators!r}")
        self.validators: tuple[OutputValidator[OutputT], ...] = tuple(validators)
        self.validator_context = tuple(takes_context(v) for v in self.validators)
        """For each validator, whether it is called with an ``OutputContext`` too."""
        if tp is str:
            raise TypeError(
                "output_type=str is the default (the answer's text, AgentResult.output_text); "
                "give a structured type such as an attrs class, a dataclass, a TypedDict or list[...]"
            )
        where = f"output type {tp!r}"
        if strict is None:
            try:
                shape, strict = shape_of(tp, strict=True, where=where), True
            except TypeError:
                shape, strict = shape_of(tp, strict=False, where=where), False
        else:
            shape = shape_of(tp, strict=strict, where=where)
        self.type = tp
        self.strict = strict
        self.retries = retries
        self.mode: OutputMode = mode
        self.description = description
        self.name = _wire_name(name if name is not None else getattr(tp, "__name__", None))
        self._wrapped = not _is_object(shape)
        shape = self._rooted(shape, strict)
        self.schema: Mapping[str, Any] = shape.schema
        self._parsers = [self._parser(shape)]
        if strict:
            # A server that ignores the schema (many compatible ones) leaves optional fields out, which
            # strict mode would have made it send: such an answer is read with the plain schema too.
            self._parsers.append(self._parser(self._rooted(shape_of(tp, where=where), False)))
        json_schema: dict[str, Any] = {"name": self.name, "schema": dict(shape.schema), "strict": strict}
        if description:
            json_schema["description"] = description
        self._response_format = {"type": "json_schema", "json_schema": json_schema}
        schema_text = orjson.dumps(shape.schema).decode()
        self._instructions = OUTPUT_INSTRUCTIONS.format(schema=schema_text)
        self._retry_text = OUTPUT_RETRY_PROMPT.replace("{schema}", schema_text)
        self._sealed = True

    def __setattr__(self, name: str, value: Any) -> None:
        # Immutable once built, as agentflow's values are: the wire format is derived from the fields.
        if getattr(self, "_sealed", False):
            raise AttributeError(f"OutputType is immutable; build a new one instead of setting {name!r}")
        object.__setattr__(self, name, value)

    def _rooted(self, shape: Shape, strict: bool) -> Shape:
        if not self._wrapped:
            return shape
        return object_shape([Prop(name=_WRAPPER, shape=shape, required=True, default=MISSING)], strict=strict)

    def _parser(self, shape: Shape) -> ArgumentParser:
        return ArgumentParser(self.name, shape.schema, shape.convert, root="output", subject="the output")

    def __repr__(self) -> str:
        return f"OutputType({self.type!r}, name={self.name!r}, strict={self.strict}, mode={self.mode!r})"

    def response_format(self) -> Mapping[str, Any]:
        """The Chat Completions ``response_format`` asking for this type (Responses: its ``text.format``).

        The same mapping every time; do not mutate it.
        """
        return self._response_format

    @property
    def instructions(self) -> str:
        """What ``mode="prompted"`` adds to the system prompt: answer with JSON matching the schema."""
        return self._instructions

    def retry_prompt(self, error: str) -> str:
        """The user turn that sends an answer back: ``OUTPUT_RETRY_PROMPT`` with ``error`` and the schema."""
        return self._retry_text.replace("{error}", error, 1)

    @staticmethod
    def rejected_prompt(error: str) -> str:
        """The user turn that sends back an answer a validator rejected: ``OUTPUT_REJECTED_PROMPT``."""
        return OUTPUT_REJECTED_PROMPT.replace("{error}", error, 1)

    def parse(self, text: str) -> OutputT:
        """``text`` read into the output type, or a ``ValueError`` saying what is wrong with it.

        The whole answer as JSON, else the JSON values in it (fences, prose, reasoning tags): the last one
        that matches, since an example or a draft comes before the answer.
        """
        stripped = text.strip()
        if not stripped:
            raise ToolArgumentsError("the answer is empty; it must be JSON")
        try:
            return self._read(exact_loads(stripped))
        except orjson.JSONDecodeError as exc:
            whole_error = str(exc)
        opening = "{[" if self._wrapped else "{"
        broken: list[JsonSpan] = []  # balanced brackets that are not JSON (a trailing comma…)
        found: list[JsonSpan] = []
        for span in json_spans(stripped[:MAX_SCANNED_CHARS], opening=opening):
            if span.error is None:
                # A value inside a malformed one is a part of it, not an answer of its own.
                if not any(b.start < span.start and span.end <= b.end for b in broken):
                    found.append(span)
            elif span.complete:
                broken.append(span)
        last_error: ToolArgumentsError | None = None
        for span in reversed(found):
            try:
                return self._read(span.value)
            except ToolArgumentsError as exc:
                last_error = last_error or exc
        if last_error is not None:
            raise last_error
        reason = broken[0].error if broken else whole_error
        raise ToolArgumentsError(f"the answer is not valid JSON: {reason}")

    def read_value(self, value: Any) -> OutputT:
        """An already-decoded value read into the output type, or a ``ValueError`` saying what is wrong with
        it, in the words ``parse`` uses.

        For answers that are Python values rather than text (what CodeAct code hands ``final_answer``, a
        final message's ``output``): dicts, lists, strings, numbers, booleans and ``None``, as JSON decodes.
        No JSON text is made on the way, so integers of any size stay exact. A string is read as the value
        first, then as text holding JSON (``parse``: code may return JSON it built itself); when both fail,
        the error is the one for the JSON when the string looks like it holds some.

        >>> OutputType(list[int]).read_value([1, 2**70])
        [1, 1180591620717411303424]
        >>> OutputType(list[int]).read_value("[1, 2]")
        [1, 2]
        """
        if not isinstance(value, str):
            return self._read(value)
        try:
            return self._read(value)
        except ToolArgumentsError as exc:
            as_value = exc
        try:
            return self.parse(value)
        except ToolArgumentsError as exc:
            raise (exc if value.lstrip()[:1] in ("{", "[") else as_value) from None

    @property
    def wrapped(self) -> bool:
        """Whether the type travels wrapped as ``{"result": …}`` (its schema is not an object's)."""
        return self._wrapped

    def read_partial(self, value: Any) -> OutputT:
        """Part of an answer, as JSON (``PartialJson.value()``), read into the output type, or a
        ``ValueError``: the plain schema (a field with a default may be missing, a required one may not),
        a wrapped type's bare value accepted, and no validators (they judge whole answers). What
        ``AgentRun.stream_output`` yields while the answer streams.

        >>> import attrs
        >>> @attrs.frozen
        ... class Trip:
        ...     city: str
        ...     days: list[int] = attrs.field(factory=list)
        >>> OutputType(Trip).read_partial({"city": "Ly"})
        Trip(city='Ly', days=[])
        """
        if self._wrapped and not (isinstance(value, dict) and value.keys() == {_WRAPPER}):
            value = {_WRAPPER: value}
        if not isinstance(value, dict):
            raise ToolArgumentsError("the answer must be a JSON object")
        validate, convert = self._partial()
        # Not the parsers' ``parse``: on a value that does not match it collects every mistake, for the
        # model to read, which costs milliseconds on a long answer, and a streamed answer mostly does not
        # match yet. Here the first mistake ends the read.
        try:
            validate(value)
            converted = value if convert is None else convert(value)
        except Exception as exc:  # a schema mismatch, a converter's refusal, a recursion too deep
            raise ToolArgumentsError(f"the answer so far does not read yet: {type(exc).__name__}") from None
        return cast(OutputT, converted[_WRAPPER] if self._wrapped else converted)

    def _partial(self) -> tuple[Callable[[Any], Any], Callable[[Any], Any] | None]:
        """The plain schema's compiled check and converter, for ``read_partial``: built on first use (only
        runs that stream their output need them), then kept."""
        try:
            return self._partial_reader
        except AttributeError:
            pass
        import fastjsonschema

        from ..tools.formats import FORMATS, uses_formats

        shape = self._rooted(shape_of(self.type, where=f"output type {self.type!r}"), False)
        schema = dict(shape.schema)
        validate = fastjsonschema.compile(
            schema, use_default=False, formats=FORMATS if uses_formats(schema) else {}
        )
        reader = (validate, shape.convert)
        object.__setattr__(self, "_partial_reader", reader)  # a cache: the type is sealed, not this
        return reader

    def unwrap_partial(self, value: Any) -> Any:
        """Part of an answer, as JSON, without the ``{"result": …}`` wrapper of a wrapped type (a bare value
        as it is); ``LookupError`` while a wrapped type's answer is still ``{}`` (its key not written yet).
        What ``AgentRun.stream_json`` yields while the answer streams.

        >>> OutputType(list[int]).unwrap_partial({"result": [1, 2]})
        [1, 2]
        """
        if not self._wrapped:
            return value
        if isinstance(value, dict):
            if value.keys() == {_WRAPPER}:
                return value[_WRAPPER]
            if not value:
                raise LookupError("the answer has no value yet")
        return value

    @property
    def value_schema(self) -> Mapping[str, Any]:
        """The JSON schema of the value itself, as code may give it: not wrapped in ``{"result": …}``, and
        plain (optional fields optional, as ``read_value`` takes them), with its own ``$defs``.

        >>> OutputType(list[int]).value_schema
        {'type': 'array', 'items': {'type': 'integer'}}
        """
        return shape_of(self.type, where=f"output type {self.type!r}").schema

    def _read(self, value: Any) -> OutputT:
        if self._wrapped and not (isinstance(value, dict) and value.keys() == {_WRAPPER}):
            value = {_WRAPPER: value}  # the bare value, from a server that ignored the schema
        if not isinstance(value, dict):
            raise ToolArgumentsError("the answer must be a JSON object")
        first: ToolArgumentsError | None = None
        for parser in self._parsers:
            try:
                converted = parser.parse(value)
            except ToolArgumentsError as exc:
                first = first or exc  # the error against the schema the model was given
                continue
            return cast(OutputT, converted[_WRAPPER] if self._wrapped else converted)
        assert first is not None
        raise first


def output_type_of(value: Any) -> OutputType[Any] | None:
    """``value`` as an ``OutputType``: ``None`` stays ``None``, an ``OutputType`` as it is, a type wrapped."""
    if value is None or isinstance(value, OutputType):
        return value
    return OutputType(value)


def _is_object(shape: Shape) -> bool:
    schema = shape.schema
    return schema.get("type") == "object" and isinstance(schema.get("properties"), Mapping)


def _wire_name(name: object) -> str:
    """A schema name OpenAI accepts (``^[a-zA-Z0-9_-]{1,64}$``)."""
    cleaned = _NAME.sub("_", name).strip("_")[:64] if isinstance(name, str) else ""
    return cleaned or "output"
