"""``Agent`` (a model, tools, a runtime and options) and ``run_sync`` for scripts; the ``Agents`` shortcuts
are in ``agents``.

::

    agent = Agent(model=OpenAIChatModel(model="gpt-4.1-mini"), tools=[get_weather],
                  system_prompt="You are a weather assistant.")
    result = await agent.run("Weather in Paris?")           # the whole run, then its AgentResult
    result = await agent.run("Once more?", settings=ModelSettings(temperature=0))  # this run's own settings
    result = await agent.run("My orders?", deps=Deps(db=pool, user=user))  # for its tools, prompt functions
    async with agent.stream("Weather in Paris?") as run:    # the same run as events, as they happen
        async for event in run: ...
    chat = agent.session()                                  # a conversation: memory kept across runs

An agent is configuration only: every run gets its own ``RunContext`` (and, outside a session, its own
memory), so one agent serves any number of concurrent runs. ``run()`` is ``stream()`` consumed to the end:
one loop serves both.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, TypeAlias, TypeGuard, TypeVar, overload

import anyio
import attrs

from ..bus import EventBus, EventTypes, Policy, normalise_event_types
from ..model.events import Event, ReasoningDelta, RefusalDelta, TextDelta, ToolCallArgumentsDelta
from ..model.messages import Message
from ..model.protocol import ChatModel
from ..result import OutputT
from ..runtimes import AgentRuntime, resolve_runtime
from ..runtimes.context import RunContext
from ..runtimes.guardrails import Guardrail, GuardrailFunction, Guardrails
from ..runtimes.output import AGENT_DEFAULT, OutputType, TypeForm, output_type_of
from ..runtimes.prompt_functions import PromptFunction, PromptFunctions, check_prompt
from ..tools.approval import NeedsApproval
from ..tools.registry import ToolLike, ToolRegistry
from .chat_client import ChatModelClient
from .client_base import ProtocolClient
from .items import item_text, user_item
from .memory import InMemoryMemory, Memory, check_memory
from .options import AgentOptions, ModelSettings, explain_keywords, merge_settings
from .overrides import active_override, override
from .prompt import ModelClient
from .responses_client import ResponsesModelClient
from .run import AgentRun
from .run_starter import RunStarter, run_sync
from .session import Session
from .turns import Turns

if TYPE_CHECKING:
    from ..tools.tool import Tool
    from ..tools.toolsets import Toolset, ToolsetBlocks
    from .handoffs import Handoff
    from .stores import SessionStore

__all__ = ["Agent", "AgentInput", "ModelLike", "as_model_client", "run_sync"]

AgentInput: TypeAlias = str | Message | Mapping[str, Any] | Sequence[Any]
"""What a run starts from: text, a ``UserMessage`` (e.g. with images), an item dict, or a list of items.

All of it is the run's input, written to memory and listed in ``new_items``; a conversation that came before
goes in ``history=`` (or a session's memory) instead."""

ModelLike: TypeAlias = ChatModel | ModelClient
"""A ``ChatModel`` (``OpenAIChatModel``, ``OpenAIResponsesModel``…) or a ``ModelClient``."""

_T = TypeVar("_T")

GuardrailLike: TypeAlias = GuardrailFunction | Guardrail
"""An entry of ``input_guardrails=`` / ``output_guardrails=``: a function ``(ctx, value) -> Tripwire | None``
(sync or async), or a ``Guardrail`` (``guardrail(fn, blocking=True)``)."""

_NO_HEADERS: Mapping[str, str] = MappingProxyType({})

_STREAMED_EVENTS: tuple[type[Event], ...] = (TextDelta, ReasoningDelta, RefusalDelta, ToolCallArgumentsDelta)
"""What only a streamed model call publishes as it arrives: a callback for one makes ``run()`` stream."""


def as_model_client(model: object) -> ModelClient:
    """The ``ModelClient`` for ``model``: an ``OpenAIResponsesModel`` in a ``ResponsesModelClient``, any other
    ``ChatModel`` in a ``ChatModelClient``, a ``ModelClient`` as is."""
    if isinstance(model, ProtocolClient):
        return model
    # Imported here, at agent construction, so that importing agentflow does not load the Responses codec.
    from ..providers.openai.responses_model import OpenAIResponsesModel

    # Checked first: it is a ChatModel too, but its native protocol keeps more (raw output items).
    if isinstance(model, OpenAIResponsesModel):
        return ResponsesModelClient(model)
    if isinstance(model, ChatModel):
        return ChatModelClient(model)
    if isinstance(model, ModelClient):
        return model
    if isinstance(model, str):
        raise TypeError(_model_name_given(model))
    raise TypeError(
        f"model must be a ChatModel (e.g. OpenAIChatModel), an OpenAIResponsesModel or a ModelClient, "
        f"got {type(model).__name__}"
    )


def _model_name_given(name: str) -> str:
    """What ``Agent("gpt-4o")`` is told: the model object to build from the name (pydantic-ai's
    ``"openai:gpt-4o"`` form included)."""
    provider, _, model = name.partition(":")
    if not model or provider != "openai":
        model = name
    return (
        f"model must be a model object, not a model name: Agent(OpenAIChatModel(model={model!r}, "
        "api_key=...)) for OpenAI's Chat Completions API (add base_url=... for another OpenAI-compatible "
        "server; OpenAIResponsesModel takes the same for the Responses API)"
    )


def input_items(value: AgentInput) -> tuple[str, tuple[Any, ...]]:
    """The run input as ``(text for RunStarted, items for memory)``.

    >>> input_items("hi")
    ('hi', ({'type': 'message', 'role': 'user', 'content': [{'type': 'input_text', 'text': 'hi'}]},))
    """
    if isinstance(value, str):
        return value, (user_item(value),)
    if isinstance(value, Message | Mapping):
        return item_text(value), (value,)
    if isinstance(value, Sequence) and not isinstance(value, bytes):
        items = tuple(value)
        if not items:
            raise ValueError("the run input is an empty list; pass text or at least one item")
        for index, item in enumerate(items):
            if not isinstance(item, Message | Mapping):
                raise TypeError(
                    f"run input item {index} is a {type(item).__name__}; items are dicts or Message values"
                )
        return item_text(items[-1]), items
    raise TypeError(
        f"the run input must be text, a Message, an item dict or a list of items, not {type(value).__name__}"
    )


_C = TypeVar("_C", AgentOptions, ModelSettings)


def _checked(value: object, kind: type[_C]) -> _C:
    """``value``, an ``AgentOptions`` or a ``ModelSettings`` as ``options=`` or ``settings=`` wants it."""
    if isinstance(value, kind):
        return value
    if kind is AgentOptions:
        keyword, other, wanted, example = "options", "settings", "an AgentOptions", "max_steps=5"
    else:
        keyword, other, wanted, example = "settings", "options", "a ModelSettings", "temperature=0"
    example = f"{keyword}={kind.__name__}({example})"
    if isinstance(value, AgentOptions | ModelSettings):
        raise TypeError(f"{keyword}= takes {wanted}; this {type(value).__name__} goes in {other}=")
    if isinstance(value, Mapping):
        raise TypeError(
            f"{keyword}= takes {wanted}, not a {type(value).__name__}: "
            f"{keyword}={kind.__name__}(**your_dict), e.g. {example}"
        )
    raise TypeError(f"{keyword}= takes {wanted}, e.g. {example}, got {type(value).__name__}")


def _merged_settings(base: ModelSettings, over: ModelSettings, spec: OutputType[Any] | None) -> ModelSettings:
    """``over`` merged over ``base`` (``merge_settings``) for a run whose output type is ``spec``."""
    merged = merge_settings(base, over)
    if spec is not None and merged.response_format is not None:
        raise TypeError(
            "this run's settings set response_format, and it has an output_type (its own or the agent's), "
            "which sends its own: give one or the other (output_type=None reads free text)"
        )
    return merged


def _is_memory(value: object) -> TypeGuard[Memory]:
    # ``Memory`` is a runtime-checkable protocol, which a class object satisfies too (it has the members).
    return isinstance(value, Memory) and not isinstance(value, type)


def _optional_text(name: str, value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{name} must be a str or None, got {type(value).__name__}")
    return value


def _check_factory(factory: Callable[..., Any]) -> None:
    """A memory factory is called with no arguments for each run: one that needs some fails here, not then;
    a memory class with ``async`` methods is refused here too (``check_memory``)."""
    if isinstance(factory, type):
        check_memory(factory)
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # no signature to read (some builtins): calling it will tell
        return
    try:
        signature.bind()
    except TypeError as exc:
        name = getattr(factory, "__name__", type(factory).__name__)
        raise TypeError(
            f"memory={name} is called with no arguments for each run, but it needs some ({exc}); "
            f"pass a factory that makes one, e.g. memory=lambda: {name}(...)"
        ) from None


def check_hosted_tools(tools: ToolRegistry, client: ModelClient) -> None:
    """Refuse hosted tools with a Chat model, when the agent is built: not at the first model call of every
    run (Chat Completions has no hosted tools)."""
    if tools.hosted and _over_chat(client):
        kinds = ", ".join(repr(t.get("type")) for t in tools.hosted)
        raise TypeError(
            f"hosted tools ({kinds}) run on the Responses API only, and this model (or one of its fallback "
            "models) is used over Chat Completions; pass an OpenAIResponsesModel as the model, or drop the "
            "hosted tools"
        )


def _over_chat(client: object) -> bool:
    """Whether ``client`` calls Chat Completions, itself or through any of its ``members`` (a
    ``FallbackModelClient``'s, each of which gets the same prompt: one over Chat would fail at its turn)."""
    if isinstance(client, ChatModelClient):
        return True
    members = getattr(client, "members", None)
    return isinstance(members, tuple) and any(_over_chat(member) for member in members)


class _SyncMemoryFactory:
    """A memory factory that is not a class: what it makes is checked (``check_memory``) by type, once."""

    __slots__ = ("_checked", "_factory")

    def __init__(self, factory: Callable[[], Memory]) -> None:
        self._factory = factory
        self._checked: type | None = None

    def __call__(self) -> Memory:
        memory = self._factory()
        if type(memory) is not self._checked:
            check_memory(memory)
            self._checked = type(memory)
        return memory


class Agent(RunStarter[OutputT]):
    """A model with tools, a runtime, a system prompt and options; ``run``/``stream``/``run_sync`` start runs.

    - ``model``: a ``ChatModel`` (wrapped in ``ChatModelClient``), an ``OpenAIResponsesModel`` (wrapped in
      ``ResponsesModelClient``) or any ``ModelClient`` (e.g. ``agentflow.testing.FakeModelClient``).
    - ``runtime``: ``"react"`` (default), another registered name, or an ``AgentRuntime`` instance.
    - ``tools``: ``@tool`` functions, plain functions (wrapped), hosted tool mappings such as
      ``{"type": "web_search"}`` (run by the provider; Responses models only), or a ``ToolRegistry``.
    - ``system_prompt`` / ``instructions``: where each lands depends on the protocol (see
      ``ChatModelClient`` and ``ResponsesModelClient``). Either may be a function of the run instead of a
      text: ``fn(run: PromptContext) -> str`` (or ``async``), called once per step, before the step's model
      call, with the run's ``deps``, ids, step and usage (``agentflow.runtimes.prompt_functions``); its text
      lands where a static one would.
    - ``options``: limits and loop behaviour (``AgentOptions``: ``max_steps``, ``timeout``, the run's token
      budget ``max_tokens``…); ``settings``: model parameters (``ModelSettings``: ``temperature``,
      ``max_output_tokens``…). A run may bring its own of either (``agent.run(x, settings=…, options=…)``).
      A keyword that belongs in one of them (``Agent(model, temperature=0)``) is a ``TypeError`` saying so.
    - ``memory``: ``None`` gives every ``run()`` a fresh ``InMemoryMemory`` (runs are independent; use
      ``session()`` for a conversation); a zero-argument factory is used instead of ``InMemoryMemory``; a
      ``Memory`` instance makes ``run()``/``stream()`` continue that one conversation (runs serialised). A
      memory (or memory class) with ``async`` methods is refused (``TypeError``): ``Memory`` is synchronous.
    - ``output_type``: the type the final answer is read into (``AgentResult.output``): an attrs class, a
      dataclass, a ``TypedDict``, ``list[...]``…, or an ``OutputType`` for more control (retries, mode,
      validators of your own). The model is asked for JSON of that schema; an answer that does not match, or
      that a validator rejects, is sent back (see ``OutputType``).
    - ``input_guardrails`` / ``output_guardrails``: policy checks that stop a run: functions ``fn(ctx:
      GuardrailContext, value) -> Tripwire | None`` (sync or async) of the run's input text, run beside its
      first model call (the first step's tools wait for them), and of its final answer. A ``Tripwire`` fails
      the run with ``InputGuardrailTripped`` / ``OutputGuardrailTripped`` and leaves memory as the run found
      it (``agentflow.runtimes.guardrails``; ``guardrail(fn, blocking=True)`` runs one before the model call).
      A run may add its own after them (``run(x, input_guardrails=[...])``).

    A run's dependencies (a database pool, the user a request is for) are passed per run,
    ``agent.run(x, deps=...)``, and reach its tools (``ToolContext.deps``), output validators
    (``OutputContext.deps``), prompt functions and planners untouched; the agent itself holds none, so one
    agent serves every user.

    For type checkers an agent is generic in its output: ``Agent(model, output_type=City)`` is an
    ``Agent[City]`` whose runs give ``AgentResult[City]`` (``result.output`` is a ``City | None``),
    ``Agent(model)`` an ``Agent[str]``; a run's own ``output_type`` gives its own (``agent.run(x,
    output_type=Summary)`` is an ``AgentResult[Summary]``). A type that is not a class (``Literal[...]``, a
    union) gives ``Any``.
    """

    @overload
    def __init__(
        self: Agent[str],
        model: ModelLike,
        *,
        runtime: str | AgentRuntime = ...,
        tools: Iterable[ToolLike] | ToolRegistry = ...,
        system_prompt: str | PromptFunction | None = ...,
        instructions: str | PromptFunction | None = ...,
        options: AgentOptions | None = ...,
        settings: ModelSettings | None = ...,
        memory: Memory | Callable[[], Memory] | None = ...,
        name: str | None = ...,
        output_type: None = ...,
        input_guardrails: Iterable[GuardrailLike] = ...,
        output_guardrails: Iterable[GuardrailLike] = ...,
        handoffs: Iterable[Agent[Any] | Handoff] = ...,
    ) -> None: ...

    @overload
    def __init__(
        self: Agent[_T],
        model: ModelLike,
        *,
        runtime: str | AgentRuntime = ...,
        tools: Iterable[ToolLike] | ToolRegistry = ...,
        system_prompt: str | PromptFunction | None = ...,
        instructions: str | PromptFunction | None = ...,
        options: AgentOptions | None = ...,
        settings: ModelSettings | None = ...,
        memory: Memory | Callable[[], Memory] | None = ...,
        name: str | None = ...,
        output_type: type[_T] | OutputType[_T],
        input_guardrails: Iterable[GuardrailLike] = ...,
        output_guardrails: Iterable[GuardrailLike] = ...,
        handoffs: Iterable[Agent[Any] | Handoff] = ...,
    ) -> None: ...

    @overload
    def __init__(
        self: Agent[Any],
        model: ModelLike,
        *,
        runtime: str | AgentRuntime = ...,
        tools: Iterable[ToolLike] | ToolRegistry = ...,
        system_prompt: str | PromptFunction | None = ...,
        instructions: str | PromptFunction | None = ...,
        options: AgentOptions | None = ...,
        settings: ModelSettings | None = ...,
        memory: Memory | Callable[[], Memory] | None = ...,
        name: str | None = ...,
        output_type: TypeForm,
        input_guardrails: Iterable[GuardrailLike] = ...,
        output_guardrails: Iterable[GuardrailLike] = ...,
        handoffs: Iterable[Agent[Any] | Handoff] = ...,
    ) -> None: ...

    @explain_keywords("run")
    def __init__(
        self,
        model: ModelLike,
        *,
        runtime: str | AgentRuntime = "react",
        tools: Iterable[ToolLike] | ToolRegistry = (),
        system_prompt: str | PromptFunction | None = None,
        instructions: str | PromptFunction | None = None,
        options: AgentOptions | None = None,
        settings: ModelSettings | None = None,
        memory: Memory | Callable[[], Memory] | None = None,
        name: str | None = None,
        output_type: Any = None,
        input_guardrails: Iterable[GuardrailLike] = (),
        output_guardrails: Iterable[GuardrailLike] = (),
        handoffs: Iterable[Agent[Any] | Handoff] = (),
    ) -> None:
        self.model_client = as_model_client(model)
        self.runtime = resolve_runtime(runtime)
        self._own_tools = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        self.tools = self._own_tools
        check_hosted_tools(self.tools, self.model_client)
        self.system_prompt: str | PromptFunction | None = check_prompt("system_prompt", system_prompt)
        self.instructions: str | PromptFunction | None = check_prompt("instructions", instructions)
        self.options = _checked(options, AgentOptions) if options is not None else AgentOptions()
        self.settings = _checked(settings, ModelSettings) if settings is not None else ModelSettings()
        self.name = _optional_text("name", name) or self.runtime.name
        # Static texts go to every run as they are; functions are evaluated by each run, step by step.
        self._prompt_functions = PromptFunctions.of(self.name, self.system_prompt, self.instructions)
        self._guardrails = Guardrails.of(self.name, input_guardrails, output_guardrails)
        self.input_guardrails: tuple[Guardrail, ...] = self._guardrails.input if self._guardrails else ()
        self.output_guardrails: tuple[Guardrail, ...] = self._guardrails.output if self._guardrails else ()
        self._system_text = self.system_prompt if isinstance(self.system_prompt, str) else None
        self._instructions_text = self.instructions if isinstance(self.instructions, str) else None
        self.output_type: OutputType[OutputT] | None = self._output_type(output_type)
        self._memory_factory: Callable[[], Memory] = InMemoryMemory
        self._default_session: Session | None = None
        if _is_memory(memory):
            self._default_session = Session(self, memory)
        elif memory is not None:
            # A class (``memory=InMemoryMemory``) is a factory too, though it has every member of ``Memory``.
            if not callable(memory):
                raise TypeError(f"memory must be a Memory or a factory of one, got {type(memory).__name__}")
            _check_factory(memory)
            self._memory_factory = memory if isinstance(memory, type) else _SyncMemoryFactory(memory)
        self._listeners: list[tuple[EventTypes, Callable[[Any], Any]]] = []
        self.handoffs = handoffs

    @property
    def handoffs(self) -> tuple[Handoff, ...]:
        """The agents this one may hand its run over to (``Agent(handoffs=...)``), each as a ``Handoff``.

        Settable, for agents that hand over to each other (a triage and its specialists, each able to hand
        back): ``billing.handoffs = [triage]`` once both exist. Each handoff is a tool of this agent's
        (``transfer_to_…`` in ``tools``); runs started afterwards use them. See ``agentflow.agent.handoffs``.
        """
        return self._handoff_list

    @handoffs.setter
    def handoffs(self, value: Iterable[Agent[Any] | Handoff]) -> None:
        if isinstance(value, tuple) and not value:
            found: tuple[Handoff, ...] = ()
        else:
            from .handoffs import handoffs_of  # loaded only for agents with handoffs

            found = handoffs_of(self.runtime, value)
        self.tools = self._own_tools.with_tools(h.tool for h in found) if found else self._own_tools
        self._handoff_list = found
        self._handoffs: Mapping[str, Handoff] | None = {h.tool_name: h for h in found} or None

    def _with_handoff_tools(self, tools: ToolRegistry) -> ToolRegistry:
        """``tools`` (an ``agent.override``'s) with this agent's handoff tools after them."""
        return tools.with_tools(h.tool for h in self._handoff_list) if self._handoff_list else tools

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, runtime={self.runtime!r}, tools={list(self.tools.names)!r})"

    # -- events ----------------------------------------------------------------------------------------------

    def on(self, types: EventTypes, callback: Callable[[Any], Any]) -> Callable[[], None]:
        """Call ``callback(event)`` for the events of ``types`` of every run started afterwards (logging,
        tracing, metrics). Same rules as ``EventBus.on``; returns a function that removes it.

        Every run means every run: on an agent shared by concurrent requests, a callback registered by one
        request also gets the other requests' events. For one run's events (forwarding a request's deltas to
        its client), pass ``on=[(types, callback)]`` to ``run()`` / ``stream()`` instead.

        ``types`` is an event class, a union of them (``agentflow.events.TerminalEvent``), a tuple of those
        or ``None`` (every event). Both arguments are checked here (``TypeError``): a bad registration would
        otherwise make every later run of this agent fail.
        """
        kinds = normalise_event_types(types)
        if not callable(callback):
            raise TypeError(
                f"agent.on(): callback must be callable (it is called with each event), got {callback!r}"
            )
        entry = (kinds, callback)
        self._listeners.append(entry)

        def remove() -> None:
            if entry in self._listeners:
                self._listeners.remove(entry)

        return remove

    # -- runs ------------------------------------------------------------------------------------------------

    def _run_on(self) -> tuple[Agent[OutputT], Memory | None, Turns | None, bool]:
        session = self._default_session
        if session is not None:
            return session._run_on()
        return self, None, None, False

    def _session_id(self) -> str | None:
        session = self._default_session
        return None if session is None else session.id

    def session(
        self,
        memory: Memory | None = None,
        *,
        session_id: str | None = None,
        rollback_on_failure: bool = False,
        store: SessionStore | None = None,
    ) -> Session[OutputT]:
        """A new conversation: its memory (``memory``, or a fresh one) persists across its runs.

        ``rollback_on_failure=True`` puts a failed run's memory back as the run found it, before the next run
        on the memory starts (see ``Session``). A memory with ``async`` methods is refused (``TypeError``).

        ``store`` keeps the conversation between processes under ``session_id`` (required with a store):
        ``agent.session(session_id="user-42", store=SQLiteStore("chats.db"))`` loads it on its first turn and
        appends each run's items as the run ends (see ``Session`` and ``SessionStore``).
        """
        if memory is None:
            memory = self._memory_factory()
        elif not _is_memory(memory):
            what = f"the class {memory.__name__}" if isinstance(memory, type) else type(memory).__name__
            raise TypeError(f"session() takes a Memory instance (e.g. InMemoryMemory()), got {what}")
        return Session(self, memory, session_id, rollback_on_failure=rollback_on_failure, store=store)

    def as_tool(
        self,
        name: str | None = None,
        description: str | None = None,
        *,
        timeout: float | None = float("inf"),
        forward_events: bool = True,
        session: Session[OutputT] | None = None,
        return_direct: bool = False,
        deps: Callable[[Any], Any] | None = None,
        needs_approval: NeedsApproval = False,
        max_retries: float | None = None,
    ) -> Tool[..., Any]:
        """This agent as a tool of another agent: the other agent's model delegates a task to it.

        The tool takes one argument, ``input`` (the task, which must say everything: the agent sees nothing
        else of the caller's conversation); each call is a nested run of this agent (a fresh memory, or
        ``session``'s conversation) and returns its output: the value of its ``output_type`` (the caller's
        model reads it as JSON), else its answer's text. A run that ends without one (a limit, a refusal) or
        fails is the call's ``TOOL_ERROR`` (an ``AgentToolError`` saying why, with its last message).

        - ``name``: the tool's name, checked as any tool name; default: this agent's ``name`` in a function's
          style (``"Trip planner"`` → ``trip_planner``); an agent without a name of its own needs one.
        - ``description``: required; what the agent does and when to call it, for the calling model.
        - ``timeout``: the call's limit in seconds; ``math.inf`` (default): none, since a run takes longer
          than most tools; ``None``: the caller's ``AgentOptions.tool_timeout``. The caller's own ``timeout``
          and cancellation still apply, and cancel the nested run cleanly.
        - ``forward_events``: while the calling run has listeners, the nested run's events reach them as
          ``ToolProgress`` of the call (``data`` is the event itself); an unobserved caller builds none.
        - ``session``: a session of this agent whose conversation every call continues (calls take turns).
        - ``return_direct``: this agent's answer is the caller's: a call that succeeds ends the calling run
          after its step (``FINAL_ANSWER``), with no model call to repeat the answer; the answer's text is
          the caller's ``output_text``, read into the caller's ``output_type`` if it has one (a router whose
          specialists answer the user themselves). See ``tool(return_direct=...)``.
        - ``deps``: a function of the calling run's ``deps`` that gives the nested run's (``lambda deps:
          deps.search``; ``lambda _: obj`` for an object of its own); default: the caller's, as they are
          (the Agents SDK shares its context with an agent used as a tool the same way).
        - ``needs_approval``: as ``tool(needs_approval=...)``: each call (each nested run) waits for the
          calling run's decision (``AgentOptions.tool_approval``, or ``run.approve`` on a streamed run) before
          it starts. A tool of the nested run that needs approval is decided by this agent's own
          ``tool_approval``: the nested run has no handle to approve through, and cannot pause (with
          ``tool_approval="defer"`` the calling run fails with ``ApprovalNotDeferrableError``; defer the
          whole call instead, with this flag).
        - ``max_retries``: as ``tool(max_retries=...)``: how many steps in a row the calling model may get
          this tool wrong (a nested run that fails is such a step) before the calling run fails with
          ``ToolRetriesExceeded``; ``None``: the caller's ``AgentOptions.max_tool_retries``.

        The nested run's usage counts toward the caller's (``result.usage``, ``StepFinished.usage``, its
        ``max_tokens``), and what the caller's budget has left caps the nested run's. It sends the calling
        run's own HTTP headers too (``settings=ModelSettings(extra_headers=...)`` of the run, a gateway's
        per-user key), under this agent's own ``settings.extra_headers``, whose keys win; the calling agent's
        own headers stay its own.

        >>> from agentflow.testing.fake import FakeModelClient
        >>> researcher = Agent(FakeModelClient([]), name="Researcher")
        >>> tool = researcher.as_tool(description="Finds facts on the web and cites them.")
        >>> tool.name, list(tool.spec.parameters["properties"])
        ('researcher', ['input'])
        """
        from .as_tool import agent_tool  # loaded only for agents that are used as tools

        return agent_tool(
            self,
            name,
            description,
            timeout=timeout,
            forward_events=forward_events,
            session=session,
            return_direct=return_direct,
            deps=deps,
            needs_approval=needs_approval,
            max_retries=max_retries,
        )

    def override(
        self,
        *,
        model: ModelLike | None = None,
        tools: Iterable[ToolLike] | ToolRegistry | None = None,
        settings: ModelSettings | None = None,
        options: AgentOptions | None = None,
        input_guardrails: Iterable[GuardrailLike] | None = None,
        output_guardrails: Iterable[GuardrailLike] | None = None,
    ) -> contextlib.AbstractContextManager[None]:
        """Within the block, runs of this agent use ``model``, ``tools`` (in place of its own tools; its
        handoffs' transfer tools stay), ``settings`` (merged over the agent's, as a run's are), ``options``
        (in place of the agent's) or ``input_guardrails`` / ``output_guardrails`` (in place of the agent's
        of that kind: ``[]`` switches them off; a run's own come on top) — those given; for tests of code
        that builds its agents itself. Only the task that enters the block, and tasks it starts there, see
        it (``agentflow.agent.overrides``); the agent itself is left as it is.

        >>> from agentflow.testing.fake import FakeModelClient, reply
        >>> agent = Agent(FakeModelClient([]))
        >>> with agent.override(model=FakeModelClient([reply("Hi!")])):
        ...     agent.run_sync("Hello").output_text
        'Hi!'
        """
        return override(
            self,
            model=model,
            tools=tools,
            settings=settings,
            options=options,
            input_guardrails=input_guardrails,
            output_guardrails=output_guardrails,
        )

    def _output_type(self, value: Any) -> OutputType[Any] | None:
        """``value`` as this agent's runs can use it (``TypeError`` for a runtime or settings that cannot)."""
        spec = output_type_of(value)
        if spec is not None:
            if not self.runtime.structured_output:
                raise TypeError(
                    f"the {self.runtime.name} runtime does not read its final answer into an output_type; "
                    "use one that does (runtime='react', 'codeact' or 'deep_research')"
                )
            if self.settings.response_format is not None:
                raise TypeError(
                    "give either output_type or ModelSettings.response_format: output_type sends its own"
                )
        return spec

    def _run_config(
        self,
        settings: object,
        options: object,
        spec: OutputType[Any] | None,
        base_settings: ModelSettings,
        base_options: AgentOptions,
    ) -> tuple[ModelSettings, AgentOptions]:
        """One run's model settings and options (``run(x, settings=..., options=...)``): ``settings`` merged
        over the agent's (``merge_settings``: what the run sets wins, what it leaves unset is the agent's),
        ``options`` in place of the agent's (every limit is the run's own: ``None`` there means no limit)."""
        run_settings = base_settings
        if settings is not None:
            run_settings = _merged_settings(base_settings, _checked(settings, ModelSettings), spec)
        run_options = base_options if options is None else _checked(options, AgentOptions)
        return run_settings, run_options

    def _new_run(
        self,
        input: AgentInput | None,
        *,
        memory: Memory | None = None,
        turns: Turns | None = None,
        rollback: bool = False,
        subscribe: bool,
        types: Sequence[type[Event]] | type[Event] | None = None,
        buffer: int = 256,
        policy: Policy = "backpressure",
        run_id: str | None = None,
        output_type: Any = AGENT_DEFAULT,
        history: tuple[Any, ...] | None = None,
        listeners: Sequence[tuple[EventTypes, Callable[[Any], Any]]] | None = None,
        settings: ModelSettings | None = None,
        options: AgentOptions | None = None,
        session_id: str | None = None,
        parent: tuple[str, str] | None = None,
        deps: Any = None,
        inherited_headers: Mapping[str, str] | None = None,
        decisions: Mapping[str, str | None] | None = None,
        input_guardrails: tuple[Guardrail, ...] | None = None,
        output_guardrails: tuple[Guardrail, ...] | None = None,
    ) -> AgentRun[Any]:
        spec = self.output_type if output_type is AGENT_DEFAULT else self._output_type(output_type)
        run_settings, run_options = self.settings, self.options
        model, tools = self.model_client, self.tools
        guardrails = self._guardrails
        override = active_override(self)
        if override is not None:  # ``agent.override()`` (tests): the block's values, then the run's
            if override.input_guardrails is not None or override.output_guardrails is not None:
                guardrails = Guardrails.added(  # each kind given replaces the agent's
                    self.name,
                    None,
                    override.input_guardrails
                    if override.input_guardrails is not None
                    else self.input_guardrails,
                    override.output_guardrails
                    if override.output_guardrails is not None
                    else self.output_guardrails,
                )
            if override.model is not None:
                model = override.model
            if override.tools is not None:  # an empty registry too: "no tools" is a value to test with
                tools = self._with_handoff_tools(override.tools)
            if override.settings is not None:
                run_settings = _merged_settings(run_settings, override.settings, spec)
            if override.options is not None:
                run_options = override.options
        if input_guardrails is not None or output_guardrails is not None:
            # The run's own (``run(x, input_guardrails=...)``), after the agent's: its policy, then the
            # request's checks. Without any, the agent's value built once (``None``: nothing to check).
            guardrails = Guardrails.added(self.name, guardrails, input_guardrails, output_guardrails)
        run_headers = _NO_HEADERS
        if settings is not None or options is not None:  # the run's own (rare): nothing to build otherwise
            run_settings, run_options = self._run_config(settings, options, spec, run_settings, run_options)
            if settings is not None and settings.extra_headers:
                run_headers = settings.extra_headers
        if inherited_headers:
            # A sub-agent's run (``as_tool``): the calling run's own headers (a gateway's per-user key),
            # under this agent's, whose keys win; passed on to this run's own sub-agents in turn.
            run_settings = attrs.evolve(
                run_settings, extra_headers={**inherited_headers, **run_settings.extra_headers}
            )
            run_headers = {**inherited_headers, **run_headers}
        if input is not None:
            text, items = input_items(input)
        elif decisions is not None:
            text, items = "", ()  # a resumed run may bring no input: it goes on from its open calls
        else:
            raise TypeError(
                "a run needs input (text, a message or items); only a run that resumes a paused one "
                "(approvals=...) may go without"
            )
        if memory is None:
            memory = self._memory_factory()
            if history:
                memory.extend(history)
        # 32 random hex digits, as uuid4().hex but a quarter of its cost (one per run)
        run_id = run_id or f"run_{os.urandom(16).hex()}"
        bus = EventBus(run_id)
        for types_, callback in self._listeners:
            bus.on(types_, callback)
        if listeners:
            for types_, callback in listeners:  # this run's own, after the agent's (``on=``)
                bus.on(types_, callback)
        stream_model = run_options.stream
        if stream_model is None:
            # Streamed when someone sees the answer arrive: a consumer of ``agent.stream()``, or a callback
            # (``on=``, ``agent.on``) that takes deltas; a plain call otherwise (cheaper, same result).
            stream_model = subscribe or (
                (bool(self._listeners) or bool(listeners)) and bus.listens_to(*_STREAMED_EVENTS)
            )
        ctx = RunContext(
            run_id=run_id,
            bus=bus,
            memory=memory,
            model=model,
            tools=tools,
            options=run_options,
            settings=run_settings,
            system_prompt=self._system_text,
            instructions=self._instructions_text,
            input_text=text,
            input_items=items,
            stream_model=stream_model,
            output_type=spec,
            # Only a run with a handle (``agent.stream()``) can be cancelled through ``AgentRun.cancel()``.
            cancel_scope=anyio.CancelScope() if subscribe else None,
            session_id=session_id,
            parent_run_id=None if parent is None else parent[0],
            parent_call_id=None if parent is None else parent[1],
            deps=deps,
            run_headers=run_headers,
            prompt_functions=self._prompt_functions,
            guardrails=guardrails,
            decisions=decisions,
            agent_name=self.name,
            handoffs=self._handoffs,
            run_settings=settings,
        )
        return AgentRun(
            self.runtime,
            ctx,
            subscribe=subscribe,
            types=types,
            buffer=buffer,
            policy=policy,
            turns=turns,
            rollback=rollback,
        )

    # -- resources -------------------------------------------------------------------------------------------

    _toolset_blocks: ToolsetBlocks | None = None
    """The toolsets each open ``async with agent:`` block entered, per task (see ``__aenter__``)."""
    _open_blocks = 0
    """How many ``async with agent:`` blocks are open: the last one to leave closes the model client."""

    async def aclose(self) -> None:
        """Close the model client (and its HTTP connections); the last ``async with agent:`` block does it on
        leaving.

        The model is closed even if other agents use it too, and their runs in flight in this event loop then
        fail with a connection error (other loops' connection pools are left alone): for a model shared by
        many agents (one agent per request in a web service), build the agents without ``async with`` and
        close the model once, at shutdown.
        """
        await self.model_client.aclose()

    async def __aenter__(self) -> Agent[OutputT]:
        """Enter the agent's toolsets that need it (``Agent(tools=[server])``: an MCP server connects), for
        the block: those of the ``agent.override(tools=...)`` in force, if any, and those of the agents it
        may hand a run to (``handoffs``), whose tools a run may list on the way. A server entered already
        (``async with server:``, another agent's block, another task's) is shared, and stays connected until
        its last block ends. Blocks of one agent may overlap, nested or in different tasks (each request of a
        web service): each leaves what it entered, and the last one to leave closes the model client
        (``aclose``), so no block closes it under another's runs."""
        from ..tools.toolsets import ToolsetBlocks, enter_toolsets

        toolsets = self._block_toolsets()
        # Every block notes what it entered, nothing included: a block that entered no toolset (under an
        # override without any) must not leave, on its way out, the toolsets another block entered.
        stack = await enter_toolsets(toolsets) if toolsets else contextlib.AsyncExitStack()
        if self._toolset_blocks is None:
            self._toolset_blocks = ToolsetBlocks()
        self._toolset_blocks.push(stack)
        self._open_blocks += 1
        return self

    def _block_toolsets(self) -> tuple[Toolset, ...]:
        """The toolsets an ``async with agent:`` block enters: its tools' (those of the override in force, if
        any), then those of every agent it may hand a run to, each once."""
        agents: list[Agent[Any]] = [self]
        if self._handoff_list:
            from .handoffs import reachable_agents

            agents.extend(reachable_agents(self))
        toolsets: list[Toolset] = []
        for agent in agents:
            found = active_override(agent)
            registry = found.tools if found is not None and found.tools is not None else agent.tools
            toolsets.extend(t for t in registry.toolsets if not any(t is known for known in toolsets))
        return tuple(toolsets)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._open_blocks -= 1
        try:
            entered = self._toolset_blocks.pop() if self._toolset_blocks is not None else None
            if entered is not None:
                await entered.aclose()
        finally:
            if self._open_blocks == 0:
                await self.aclose()
