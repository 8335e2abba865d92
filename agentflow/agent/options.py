"""How agent runs are bounded (``AgentOptions``) and how their model calls are set up (``ModelSettings``).

Plain immutable values, validated when they are built (a bad limit fails at construction, not mid-run).
Nothing here runs anything; the runtime in ``agentflow.runtimes.base`` reads them.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from ..model.tools import ToolChoice
from .prompt import ToolChoiceLike, reasoning_effort

__all__ = ["DEFAULT_FINAL_ANSWER_PROMPT", "AgentOptions", "MaxStepsPolicy", "ModelSettings"]

MaxStepsPolicy = Literal["stop", "final_answer", "raise"]

DEFAULT_FINAL_ANSWER_PROMPT = (
    "You have reached the maximum number of steps for this task. Do not call any more tools. "
    "Using only the information above, give your final answer now."
)
"""The user turn added (to that prompt only, never to memory) for ``on_max_steps="final_answer"``."""


def _positive_int(name: str) -> Any:
    def check(_inst: object, _attr: object, value: int | None) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(
                f"AgentOptions.{name} must be a positive integer or None (no limit), got {value!r}"
            )

    return check


def _positive_float(name: str) -> Any:
    def check(_inst: object, _attr: object, value: float | None) -> None:
        # ``not value > 0`` also refuses NaN, which no comparison lets through.
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not value > 0
        ):
            raise ValueError(
                f"AgentOptions.{name} must be a positive number of seconds or None, got {value!r}"
            )

    return check


def _is(kind: type | tuple[type, ...], name: str, owner: str = "AgentOptions") -> Any:
    def check(_inst: object, _attr: object, value: object) -> None:
        # ``bool`` is an ``int``: a number field must not take True.
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _types(kind)):
            wanted = " or ".join(t.__name__ for t in _types(kind))
            raise TypeError(f"{owner}.{name} must be of type {wanted}, got {value!r}")

    return check


def _types(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _policy(_inst: object, _attr: object, value: str) -> None:
    if value not in ("stop", "final_answer", "raise"):
        raise ValueError(
            f"AgentOptions.on_max_steps must be 'stop', 'final_answer' or 'raise', got {value!r}"
        )


@attrs.frozen
class AgentOptions:
    """Limits and loop behaviour of every run of an agent.

    - ``max_steps`` (default 20): model calls before the run stops with ``StopReason.MAX_STEPS``; what
      happens then is ``on_max_steps``: ``"stop"`` returns the partial result, ``"final_answer"`` makes one
      last tool-less call (``tool_choice="none"``) asking for a final answer, ``"raise"`` raises
      ``MaxStepsExceeded``.
    - ``max_tool_calls``: tool calls executed over the whole run; a call beyond it is not run (the model
      sees a ``TOOL_ERROR``) and the run stops with ``StopReason.MAX_TOOL_CALLS``.
    - ``max_tokens``: a token budget (``total_tokens`` summed over every model call); once reached the run
      stops with ``StopReason.MAX_TOKENS`` instead of calling tools or the model again.
    - ``timeout``: wall-clock seconds for the whole run, a cancel scope that interrupts even a hanging model
      call or tool; the run then ends with ``RunCancelled`` whose partial result says ``StopReason.DEADLINE``.
      A session's run counts from its start, its wait for the runs ahead of it included.
    - ``tool_timeout`` / ``max_tool_concurrency``: the per-call default timeout and the concurrency limit of
      tools (default 8 calls at once).
    - ``reset_tool_choice`` (default ``True``): once tools have run in a run, a ``tool_choice`` that forces
      a call (``"required"``, one function, ``allowed_tools`` in mode ``required``) is sent as unset (the
      model decides) for the rest of the run, so the model can answer instead of calling tools until
      ``max_steps``. ``False`` keeps forcing every step.
    - ``stream``: whether model calls stream. ``None`` (default) streams when the run is consumed through
      ``agent.stream()``, or has a callback (``on=``, ``agent.on``) for text, reasoning, refusal or
      tool-argument deltas (so they arrive mid-call), and makes plain calls otherwise.
    - ``keep_partial_answer`` (default ``False``): a run that ends while the model streams its answer
      (cancelled, "stop generating"; timed out; failed) always keeps the text streamed so far as its partial
      result's ``output_text``; ``True`` also writes it to memory as a text-only assistant turn, so a
      session's next turn sees the answer it cut (as chat UIs show it). A tool call being streamed is never
      kept.
    ``None`` means "no limit" for every limit.

    >>> AgentOptions(max_steps=5, on_max_steps="final_answer").max_steps
    5
    >>> AgentOptions(max_steps=0)
    Traceback (most recent call last):
    ...
    ValueError: AgentOptions.max_steps must be a positive integer or None (no limit), got 0
    """

    max_steps: int | None = attrs.field(default=20, validator=_positive_int("max_steps"))
    on_max_steps: MaxStepsPolicy = attrs.field(default="stop", validator=_policy)
    max_tool_calls: int | None = attrs.field(default=None, validator=_positive_int("max_tool_calls"))
    max_tokens: int | None = attrs.field(default=None, validator=_positive_int("max_tokens"))
    timeout: float | None = attrs.field(default=None, validator=_positive_float("timeout"))
    tool_timeout: float | None = attrs.field(default=60.0, validator=_positive_float("tool_timeout"))
    max_tool_concurrency: int | None = attrs.field(default=8, validator=_positive_int("max_tool_concurrency"))
    reset_tool_choice: bool = attrs.field(default=True, validator=_is(bool, "reset_tool_choice"))
    stream: bool | None = attrs.field(default=None, validator=attrs.validators.optional(_is(bool, "stream")))
    final_answer_prompt: str = attrs.field(
        default=DEFAULT_FINAL_ANSWER_PROMPT, validator=_is(str, "final_answer_prompt")
    )
    keep_partial_answer: bool = attrs.field(default=False, validator=_is(bool, "keep_partial_answer"))


def _to_mapping(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return {} if value is None else value


def _optional(kind: type | tuple[type, ...], name: str) -> Any:
    return attrs.validators.optional(_is(kind, name, "ModelSettings"))


def _sampling(name: str) -> Any:
    type_check = _optional((int, float), name)

    def check(inst: object, attr: object, value: float | None) -> None:
        type_check(inst, attr, value)
        # ``not value >= 0`` also refuses NaN. No upper bound: providers differ (OpenAI's temperature ≤ 2).
        if value is not None and (not value >= 0 or value == math.inf):
            raise ValueError(f"ModelSettings.{name} must be a finite number >= 0, got {value!r}")

    return check


_TOKEN_LIMIT_TYPE = _optional(int, "max_output_tokens")


def _token_limit(inst: object, attr: object, value: int | None) -> None:
    _TOKEN_LIMIT_TYPE(inst, attr, value)
    if value is not None and value < 1:
        raise ValueError(f"ModelSettings.max_output_tokens must be a positive integer, got {value!r}")


def _tool_choice(_inst: object, _attr: object, value: Any) -> None:
    # Any mapping passes: on Responses a hosted-tool choice ({"type": "file_search"}) has no ToolChoice form.
    if value is None or isinstance(value, Mapping):
        return
    try:
        ToolChoice.coerce(value)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"ModelSettings.{exc}") from None


def _reasoning(_inst: object, _attr: object, value: Any) -> None:
    try:
        reasoning_effort(value)
    except TypeError as exc:
        raise TypeError(f"ModelSettings.{exc}") from None


def _response_format(value: Any) -> Mapping[str, Any] | None:
    """An own copy of a ``response_format`` (the model clients reuse it by identity), checked."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not isinstance(value.get("type"), str):
        raise TypeError(
            "ModelSettings.response_format must be a mapping such as {'type': 'json_object'} or "
            f"{{'type': 'json_schema', 'json_schema': {{…}}}}, got {value!r}; for a typed answer use "
            "Agent(output_type=...)"
        )
    return copy.deepcopy(dict(value))


@attrs.frozen
class ModelSettings:
    """Per-call model parameters an agent puts on every ``AgentPrompt``; ``None`` means "not sent".

    ``model`` overrides the model name the model object was built with. ``parallel_tool_calls`` is sent to
    the model when set, and ``False`` also makes the runtime execute a step's tool calls one at a time.
    ``response_format`` is Chat's (``{"type": "json_object"}``, ``{"type": "json_schema", …}``; on Responses
    it becomes ``text.format``); ``Agent(output_type=…)`` builds one from a type and reads the answer into it.

    >>> ModelSettings(model="gpt-4.1-mini", temperature=0).temperature
    0
    """

    model: str | None = attrs.field(default=None, validator=_optional(str, "model"))
    temperature: float | None = attrs.field(default=None, validator=_sampling("temperature"))
    top_p: float | None = attrs.field(default=None, validator=_sampling("top_p"))
    max_output_tokens: int | None = attrs.field(default=None, validator=_token_limit)
    tool_choice: ToolChoiceLike | None = attrs.field(default=None, validator=_tool_choice)
    parallel_tool_calls: bool | None = attrs.field(
        default=None, validator=_optional(bool, "parallel_tool_calls")
    )
    reasoning: Mapping[str, Any] | None = attrs.field(default=None, validator=_reasoning)
    store: bool | None = attrs.field(default=None, validator=_optional(bool, "store"))
    user: str | None = attrs.field(default=None, validator=_optional(str, "user"))
    extra_body: Mapping[str, Any] = attrs.field(
        factory=dict, converter=_to_mapping, validator=_is(Mapping, "extra_body", "ModelSettings")
    )
    response_format: Mapping[str, Any] | None = attrs.field(default=None, converter=_response_format)
