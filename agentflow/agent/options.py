"""How agent runs are bounded (``AgentOptions``) and how their model calls are set up (``ModelSettings``).

Plain immutable values, validated when they are built (a bad limit fails at construction, not mid-run).
Nothing here runs anything; the runtime in ``agentflow.runtimes.base`` reads them. An agent has one of
each, and a run may bring its own (``agent.run(x, settings=…, options=…)``): ``merge_settings`` says how a
run's settings combine with the agent's, and a run's options replace the agent's.

Also here: what a keyword given in the wrong place is told (``explain_keywords``), since only this module
knows which fields are settings and which are options: ``Agent(model, temperature=0)`` says
``settings=ModelSettings(temperature=0)``, ``ModelSettings(max_tokens=5)`` says ``max_output_tokens``.
"""

from __future__ import annotations

import copy
import functools
import inspect
import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import attrs

from ..model.tools import ToolChoice
from .prompt import ToolChoiceLike, reasoning_effort

if TYPE_CHECKING:
    from ..tools.approval import ToolApprover
    from ..tools.failures import ToolErrorPolicy

__all__ = [
    "DEFAULT_FINAL_ANSWER_PROMPT",
    "AgentOptions",
    "MaxStepsPolicy",
    "ModelSettings",
    "merge_settings",
]

_F = TypeVar("_F", bound=Callable[..., Any])
_C = TypeVar("_C", bound=type)

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


def _retry_limit(_inst: object, _attr: object, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(
            "AgentOptions.max_tool_retries must be an int >= 0 (retries after a tool call failed) or None "
            f"(no limit), got {value!r}"
        )


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


# -- keywords given in the wrong place ---------------------------------------------------------------------

_Owner = Literal["run", "ModelSettings", "AgentOptions"]


# What other libraries (the openai SDK, pydantic-ai, the Agents SDK, smolagents, LangChain) call a field.
_SETTING_ALIASES = {
    "max_completion_tokens": "max_output_tokens",
    "max_new_tokens": "max_output_tokens",
    "headers": "extra_headers",
    "custom_headers": "extra_headers",
    "default_headers": "extra_headers",
}
_OPTION_ALIASES = {
    "max_turns": "max_steps",
    "max_iterations": "max_steps",
    "max_iter": "max_steps",
    "request_limit": "max_steps",
    "tool_calls_limit": "max_tool_calls",
    "tool_retries": "max_tool_retries",
    "total_tokens_limit": "max_tokens",
}
# Model parameters ModelSettings has no field for: they travel in ``extra_body``.
_EXTRA_BODY = frozenset(
    (
        "seed",
        "stop",
        "frequency_penalty",
        "presence_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "top_k",
        "min_p",
        "repetition_penalty",
        "service_tier",
        "metadata",
        "prediction",
    )
)
# What an agent holds for all its runs, which a run cannot change.
_AGENT_ONLY = frozenset(
    (
        "tools",
        "system_prompt",
        "instructions",
        "runtime",
        "memory",
        "name",
    )
)
_WHOLE = {
    "model_settings": "settings=ModelSettings(...)",
    "usage_limits": "options=AgentOptions(max_steps=..., max_tool_calls=..., max_tokens=...)",
    "run_config": "settings=ModelSettings(...) and options=AgentOptions(...)",
    "config": "settings=ModelSettings(...) and options=AgentOptions(...)",
}
# Keywords of peers' agents whose spelling difflib would send elsewhere (``output_retries`` to
# ``output_type``): where each one's job is done here.
_RETRIES_OF_OUTPUT = "a final answer's retries are part of its type: output_type=OutputType(T, retries=...)"
_RETRIES = (
    "how many times in a row the model may get a tool wrong is options=AgentOptions(max_tool_retries=...) "
    "(one tool's: @tool(max_retries=...)); a final answer's retries are "
    "output_type=OutputType(T, retries=...)"
)
_DEPS_PER_RUN = "deps are per run: agent.run(x, deps=...), not the agent's"
_PEER_KEYWORDS = {
    "output_retries": _RETRIES_OF_OUTPUT,
    "result_retries": _RETRIES_OF_OUTPUT,
    "retries": _RETRIES,
    "max_retries": _RETRIES + "; retries of failed HTTP requests are the model's: "
    "OpenAIChatModel(..., retry=RetryPolicy(max_retries=...))",
    "result_type": "it is output_type= here",
    "instrument": "tracing is switched on from outside: agentflow.tracing.instrument(agent)",
    "deps_type": "deps are per run, typed where they are used: agent.run(x, deps=...), ToolContext[Deps]",
    "tool_use_behavior": "a tool whose result is the answer says so: @tool(return_direct=True)",
    "guardrails": "input_guardrails=[...] checks a run's input, output_guardrails=[...] its final answer",
}
# Keywords of a run whose job a run's own keyword does here.
_PEER_RUN_KEYWORDS = {
    "context": "a run's dependencies are deps=...",
    "dependencies": "a run's dependencies are deps=...",
}


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else "..."


def _where(name: str, value: object, owner: _Owner, accepted: tuple[str, ...]) -> str | None:
    """Where the keyword ``name=value`` belongs, said to a caller of ``owner`` (``None``: no idea)."""
    shown = _shown(value)
    if name == "max_tokens":  # a settings field elsewhere, a budget here: say which is which
        cap = f"ModelSettings(max_output_tokens={shown})"
        if owner == "run":
            return (
                f"to cap each model answer pass settings={cap}; options=AgentOptions(max_tokens={shown}) "
                "is instead a token budget for the whole run (input tokens included)"
            )
        return (
            f"the cap on each model answer is {cap} (AgentOptions(max_tokens=...) is a token budget for a "
            "whole run, input tokens included)"
        )
    setting = _SETTING_ALIASES.get(name, name if name in _ALL_SETTINGS_FIELDS else None)
    if name == "reasoning_effort":
        setting, shown = "reasoning", f"{{'effort': {shown}}}"
    option = _OPTION_ALIASES.get(name, name if name in _OPTIONS_FIELDS else None)
    if setting is not None:
        if owner == "ModelSettings":
            return f"did you mean ModelSettings({setting}={shown})?"
        if owner == "run":
            return f"it is a model setting: settings=ModelSettings({setting}={shown})"
        return (
            f"it is a model setting, not a run option: ModelSettings({setting}={shown}), passed as settings= "
            "to Agent(...) or to a run"
        )
    if option is not None:
        if owner == "AgentOptions":
            return f"did you mean AgentOptions({option}={shown})?"
        if owner == "run":
            return f"it is a run limit or loop option: options=AgentOptions({option}={shown})"
        return (
            f"it is a run limit or loop option, not a model setting: AgentOptions({option}={shown}), "
            "passed as options= to Agent(...) or to a run"
        )
    if name in _EXTRA_BODY:
        body = f"extra_body={{{name!r}: {shown}}}"
        return f"send it as {body if owner == 'ModelSettings' else f'settings=ModelSettings({body})'}"
    if owner == "run":
        if name in _WHOLE:
            return f"pass {_WHOLE[name]}"
        if name == "message_history" and "history" in accepted:
            return "the conversation so far is history=[...]"
        if name in _AGENT_ONLY and name not in accepted:
            return f"{name}= belongs to the agent: Agent(model, {name}=...)"
    if name in _PEER_KEYWORDS:
        return _PEER_KEYWORDS[name]
    if name in _PEER_RUN_KEYWORDS:
        return _PEER_RUN_KEYWORDS[name] if owner == "run" and "deps" in accepted else _DEPS_PER_RUN
    if name == "deps" and "deps" not in accepted:
        return _DEPS_PER_RUN
    import difflib  # the error path only

    close = difflib.get_close_matches(name, accepted, n=1)
    if close:
        return f"did you mean {close[0]}=?"
    return None


def _accepted(fn: Callable[..., Any]) -> tuple[str, ...]:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return tuple(
        p.name for p in inspect.signature(fn).parameters.values() if p.kind in kinds and p.name != "self"
    )


def _unexpected(label: str, owner: _Owner, fn: Callable[..., Any], kwargs: Mapping[str, Any]) -> str | None:
    """The message for a call of ``fn`` with keywords it does not take (``None``: it takes them all)."""
    accepted = _accepted(fn)
    unknown = [name for name in kwargs if name not in accepted]
    if not unknown:
        return None
    takes = f"it takes {', '.join(accepted)}"
    hints = [f"{name!r}: {_where(name, kwargs[name], owner, accepted) or takes}" for name in unknown]
    if len(hints) == 1:
        return f"{label} got an unexpected keyword argument {hints[0]}"
    return f"{label} got unexpected keyword arguments: {'; '.join(hints)}"


def explain_keywords(owner: _Owner, label: str | None = None) -> Callable[[_F], _F]:
    """A decorator: a call of the function with a keyword it does not take says where that keyword belongs.

    ``Agent(model, temperature=0)`` is told ``settings=ModelSettings(temperature=0)``, ``agent.run(x,
    max_turns=3)`` ``options=AgentOptions(max_steps=3)``, a typo the name it resembles. The signature stays
    as it is (no ``**kwargs``: type checkers still see every keyword, ``inspect.signature`` the function's
    own); only the ``TypeError`` Python raises when it binds the call is translated. ``owner``: what the
    function is to the hints (``"run"``: it takes ``settings=`` and ``options=``); ``label``: how the message
    names the call (default: the class of its first argument, and the method unless it is ``__init__``).

    >>> @explain_keywords("run", label="go()")
    ... def go(input: str, *, settings: ModelSettings | None = None) -> str:
    ...     return input
    >>> go("hi", temperature=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: go() got an unexpected keyword argument 'temperature': ...settings=ModelSettings(temperature=0)
    """

    def decorate(fn: _F) -> _F:
        def message(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
            name = label
            if name is None:
                owner_name = type(args[0]).__name__ if args else fn.__qualname__.split(".")[0]
                name = f"{owner_name}()" if fn.__name__ == "__init__" else f"{owner_name}.{fn.__name__}()"
            return _unexpected(name, owner, fn, kwargs)

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def call_async(*args: Any, **kwargs: Any) -> Any:
                try:
                    coroutine = fn(*args, **kwargs)
                except TypeError:
                    # A keyword it does not take means the call never bound: nothing of ``fn`` ran.
                    explained = message(args, kwargs) if kwargs else None
                    if explained is None:
                        raise
                    raise TypeError(explained) from None
                return await coroutine

            return cast(_F, call_async)

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except TypeError:
                # Only a call that never bound has a keyword ``fn`` does not take; any other TypeError (one
                # ``fn`` raised itself) is re-raised as it is.
                explained = message(args, kwargs) if kwargs else None
                if explained is None:
                    raise
                raise TypeError(explained) from None

        return cast(_F, call)

    return decorate


def _explained(owner: Literal["ModelSettings", "AgentOptions"]) -> Callable[[_C], _C]:
    """A class decorator: ``explain_keywords`` for the ``__init__`` that attrs wrote
    (``ModelSettings(max_tokens=5)`` is told ``max_output_tokens``)."""

    def decorate(cls: _C) -> _C:
        cls.__init__ = explain_keywords(owner, label=f"{owner}()")(cls.__init__)  # type: ignore[misc]
        return cls

    return decorate


def _approver(_instance: object, _attribute: object, value: Any) -> None:
    if isinstance(value, str) and value == "defer":
        return
    if value is not None and (not callable(value) or isinstance(value, type)):
        raise TypeError(
            "AgentOptions.tool_approval must be a function (request: ToolApprovalRequest) -> bool | str (or "
            "an async one) that decides tool calls needing approval, 'defer' (the run pauses, and a later "
            f"run resumes it with approvals=), or None; got {value!r}"
        )


def _tool_error_policy(_instance: object, _attribute: object, value: object) -> None:
    from ..tools.failures import check_policy  # the tools package, only for a run's options being built

    check_policy(value, "AgentOptions.on_tool_error")


@_explained("AgentOptions")
@attrs.frozen
class AgentOptions:
    """Limits and loop behaviour of every run of an agent (``Agent(model, options=AgentOptions(...))``), or of
    one run (``agent.run(x, options=...)``, which replaces the agent's options for that run).

    **``max_tokens`` is not the length of an answer**: it is a token budget for the *whole run*, input
    tokens included, summed over every model call (a long system prompt or conversation spends it at each
    step). To cap each model answer, as OpenAI's ``max_tokens`` / ``max_completion_tokens`` do, use
    ``ModelSettings(max_output_tokens=...)``.

    - ``max_steps`` (default 20): model calls before the run stops with ``StopReason.MAX_STEPS``; what
      happens then is ``on_max_steps``: ``"stop"`` returns the partial result, ``"final_answer"`` makes one
      last tool-less call (``tool_choice="none"``) asking for a final answer, ``"raise"`` raises
      ``MaxStepsExceeded``.
    - ``max_tool_calls``: tool calls executed over the whole run; a call beyond it is not run (the model
      sees a ``TOOL_ERROR``) and the run stops with ``StopReason.MAX_TOOL_CALLS``.
    - ``max_tokens``: the run's token budget (``total_tokens``, input and output, summed over every model
      call); once reached the run stops with ``StopReason.MAX_TOKENS`` instead of calling tools or the model
      again. Not sent to the model (see the note above).
    - ``timeout``: wall-clock seconds for the whole run, a cancel scope that interrupts even a hanging model
      call or tool; the run then ends with ``RunCancelled`` whose partial result says ``StopReason.DEADLINE``.
      A session's run counts from its start, its wait for the runs ahead of it included.
    - ``tool_timeout`` / ``max_tool_concurrency``: the per-call default timeout and the concurrency limit of
      tools (default 8 calls at once).
    - ``on_tool_error`` (default ``"feed"``): what the failures of tools that set no ``on_error`` of their own
      become: ``"feed"``, the ``TOOL_ERROR`` text to the model; ``"raise"``, the end of the run, which fails
      with the tool's exception; or a function ``(exc, call) -> str | None``, the text the model gets
      instead (see ``agentflow.tools.failures``).
    - ``max_tool_retries`` (default 3): how many times in a row the model may get a tool wrong after a first
      failed call, for tools that set no ``@tool(max_retries=...)`` of their own. A call whose failure goes
      back to the model (invalid arguments, ``RejectCall``, an exception fed back, a timeout, a tool that
      does not exist) is a failed attempt; steps are counted, per tool (several failing calls of a step count
      once; a step in which a call of it succeeded starts the count again). Calls of the tool failing in
      ``max_tool_retries + 1`` steps in a row end the run with ``ToolRetriesExceeded`` (``RunFailed``) rather
      than leaving it to loop until ``max_steps``; ``None``: no limit (the count never ends a run). A limit
      of ``max_steps`` or more never trips: the run runs out of steps first. Tool calls from CodeAct's
      code are not counted (their errors go to the code). See ``agentflow.tools.retries``.
    - ``tool_approval``: who decides the calls of tools that need approval (``@tool(needs_approval=...)``):
      a function ``(request: ToolApprovalRequest) -> bool | str``, sync or async: ``True`` approves, ``False``
      denies, a ``str`` denies and is what the model is told. ``None`` (default): a streamed run waits for
      ``run.approve(call_id)`` / ``run.deny(call_id)``, and ``agent.run()`` fails with
      ``ApprovalRequiredError`` (nobody could answer). ``"defer"``: nobody decides in the run; it pauses
      after the step (``StopReason.APPROVAL_REQUIRED``, ``result.pending_approvals``), and a later run, in
      any process, resumes it: ``agent.run(history=result.all_items, approvals={call_id: True})``. Per run
      (``agent.run(x, options=...)``), it decides for the user a request is for. See
      ``agentflow.tools.approval`` and ``agentflow.runtimes.resume``.
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
    ``None`` means "no limit" for every limit, so there is no "unset" value: a run's own ``AgentOptions``
    replaces the agent's whole, and ``attrs.evolve(agent.options, max_steps=3)`` changes one field of the
    agent's.

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
    on_tool_error: ToolErrorPolicy = attrs.field(default="feed", validator=_tool_error_policy)
    max_tool_retries: int | None = attrs.field(default=3, validator=_retry_limit, kw_only=True)
    tool_approval: ToolApprover | Literal["defer"] | None = attrs.field(
        default=None, validator=_approver, kw_only=True
    )
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


def _headers(_inst: object, _attr: object, value: Mapping[str, str]) -> None:
    from ..providers.openai.http_options import check_headers  # the provider's rule, loaded with a setting

    check_headers(value, "ModelSettings.extra_headers header")


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


@_explained("ModelSettings")
@attrs.frozen
class ModelSettings:
    """Per-call model parameters an agent puts on every ``AgentPrompt``; ``None`` means "not sent" (the
    model's own default applies).

    ``max_output_tokens`` caps each model answer (sent as Chat's ``max_completion_tokens``, or the model's
    ``max_tokens_field``, and as Responses' ``max_output_tokens``); it is what OpenAI's ``max_tokens`` means.
    (``AgentOptions.max_tokens`` is something else: the run's whole token budget.) ``model`` overrides the
    model name the model object was built with. ``parallel_tool_calls`` is sent to the model when set, and
    ``False`` also makes the runtime execute a step's tool calls one at a time. ``response_format`` is Chat's
    (``{"type": "json_object"}``, ``{"type": "json_schema", …}``; on Responses it becomes ``text.format``);
    ``Agent(output_type=…)`` builds one from a type and reads the answer into it. ``extra_body`` holds any
    other top-level field of the request (``{"seed": 7}``, a server's own ``top_k``). ``extra_headers`` are
    HTTP headers sent with each model call, after the model's own ``custom_headers`` (a request id, a trace
    header, a gateway's per-user key or metadata: pass them per run, ``settings=ModelSettings(extra_headers=
    {...})``).

    A run's own settings (``agent.run(x, settings=...)``) merge over the agent's: see ``merge_settings``.

    >>> ModelSettings(model="gpt-4.1-mini", temperature=0).temperature
    0
    >>> ModelSettings(max_tokens=5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: ModelSettings() got an unexpected keyword argument 'max_tokens': ...(max_output_tokens=5)...
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
    extra_headers: Mapping[str, str] = attrs.field(factory=dict, converter=_to_mapping, validator=_headers)


_KEYED_SETTINGS = ("extra_body", "extra_headers")
"""Settings whose keys are settings of their own: a run's merge over the agent's key by key."""
_SETTINGS_FIELDS = tuple(f.name for f in attrs.fields(ModelSettings) if f.name not in _KEYED_SETTINGS)
_ALL_SETTINGS_FIELDS = (*_SETTINGS_FIELDS, *_KEYED_SETTINGS)
_OPTIONS_FIELDS = tuple(f.name for f in attrs.fields(AgentOptions))


def merge_settings(agent: ModelSettings, run: ModelSettings) -> ModelSettings:
    """A run's settings over its agent's: each field ``run`` sets (not ``None``) wins, each field it leaves
    unset is ``agent``'s; ``extra_body`` and ``extra_headers`` merge key by key (``run``'s keys win), since
    each key is a parameter (a header) of its own.

    What ``agent.run(x, settings=ModelSettings(temperature=0))`` runs with, as pydantic-ai's per-run
    ``model_settings`` and the Agents SDK's ``RunConfig.model_settings`` do. A run cannot unset a field the
    agent sets; it can set it to the value it wants.

    >>> agent = ModelSettings(temperature=0.7, max_output_tokens=500, extra_body={"top_k": 40})
    >>> run = merge_settings(agent, ModelSettings(temperature=0, extra_body={"seed": 7}))
    >>> run.temperature, run.max_output_tokens, dict(run.extra_body)
    (0, 500, {'top_k': 40, 'seed': 7})
    """
    if agent == _NO_SETTINGS:
        return run  # as given: a run that passes the same settings object again reuses its parameters
    changes: dict[str, Any] = {}
    for name in _SETTINGS_FIELDS:
        value = getattr(run, name)
        if value is not None:
            changes[name] = value
    if run.extra_body:
        changes["extra_body"] = {**agent.extra_body, **run.extra_body}
    if run.extra_headers:
        changes["extra_headers"] = {**agent.extra_headers, **run.extra_headers}
    return attrs.evolve(agent, **changes) if changes else agent


_NO_SETTINGS = ModelSettings()
