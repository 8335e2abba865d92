"""``Agents``: shortcuts that build an ``Agent`` with a given runtime (the reference's ``Agents`` factory).

Kept apart from ``agent.py`` because each shortcut is a stack of typed overloads (the ``output_type``
decides the agent's type) over a few lines of wiring: ``Agent`` itself reads better without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from ..model.protocol import ChatModel
from ..runtimes.output import OutputType, TypeForm
from .agent import Agent, ModelLike
from .options import ModelSettings

if TYPE_CHECKING:
    from ..runtimes.codeact import CodeActOptions
    from ..runtimes.deep_research import PlanHook, PlanRole
    from ..runtimes.planner import Planner

__all__ = ["Agents"]

_T = TypeVar("_T")


class Agents:
    """Shortcuts that build an ``Agent`` with a given runtime (the reference's ``Agents`` factory).

    Typed as ``Agent(...)`` is: ``Agents.react(model)`` is an ``Agent[str]``, ``Agents.react(model,
    output_type=City)`` an ``Agent[City]``.

    >>> from agentflow.testing.fake import FakeModelClient
    >>> Agents.react(FakeModelClient([])).runtime
    ReActRuntime()
    """

    @overload
    @staticmethod
    def react(
        model: ModelLike,
        *,
        output_type: None = ...,
        **kwargs: Any,
    ) -> Agent[str]: ...

    @overload
    @staticmethod
    def react(
        model: ModelLike,
        *,
        output_type: type[_T] | OutputType[_T],
        **kwargs: Any,
    ) -> Agent[_T]: ...

    @overload
    @staticmethod
    def react(
        model: ModelLike,
        *,
        output_type: TypeForm,
        **kwargs: Any,
    ) -> Agent[Any]: ...

    @staticmethod
    def react(model: ModelLike, *, output_type: Any = None, **kwargs: Any) -> Agent[Any]:
        """An agent with the ReAct runtime."""
        return Agent(model, runtime="react", output_type=output_type, **kwargs)

    @overload
    @staticmethod
    def codeact(
        model: ModelLike,
        *,
        codeact: CodeActOptions | None = ...,
        output_type: None = ...,
        **kwargs: Any,
    ) -> Agent[str]: ...

    @overload
    @staticmethod
    def codeact(
        model: ModelLike,
        *,
        codeact: CodeActOptions | None = ...,
        output_type: type[_T] | OutputType[_T],
        **kwargs: Any,
    ) -> Agent[_T]: ...

    @overload
    @staticmethod
    def codeact(
        model: ModelLike,
        *,
        codeact: CodeActOptions | None = ...,
        output_type: TypeForm,
        **kwargs: Any,
    ) -> Agent[Any]: ...

    @staticmethod
    def codeact(
        model: ModelLike,
        *,
        codeact: CodeActOptions | None = None,
        output_type: Any = None,
        **kwargs: Any,
    ) -> Agent[Any]:
        """An agent with the CodeAct runtime: the model writes Python that calls the tools, run in a sandbox.

        ``codeact``: the runtime's ``CodeActOptions`` (``react``, ``correct_format``, ``executor``,
        ``limits``); ``kwargs`` go to ``Agent``.
        """
        from ..runtimes.codeact import CodeActRuntime

        if "runtime" in kwargs:
            raise TypeError("Agents.codeact() sets the runtime itself; use Agent(runtime=...) instead")
        return Agent(model, runtime=CodeActRuntime(codeact), output_type=output_type, **kwargs)

    @overload
    @staticmethod
    def deep_research(
        model: ModelLike,
        *,
        planner: Planner | Literal["simple", "model"] | None = ...,
        replan_every: int | None = ...,
        on_plan: PlanHook | None = ...,
        plan_role: PlanRole = ...,
        output_type: None = ...,
        **kwargs: Any,
    ) -> Agent[str]: ...

    @overload
    @staticmethod
    def deep_research(
        model: ModelLike,
        *,
        planner: Planner | Literal["simple", "model"] | None = ...,
        replan_every: int | None = ...,
        on_plan: PlanHook | None = ...,
        plan_role: PlanRole = ...,
        output_type: type[_T] | OutputType[_T],
        **kwargs: Any,
    ) -> Agent[_T]: ...

    @overload
    @staticmethod
    def deep_research(
        model: ModelLike,
        *,
        planner: Planner | Literal["simple", "model"] | None = ...,
        replan_every: int | None = ...,
        on_plan: PlanHook | None = ...,
        plan_role: PlanRole = ...,
        output_type: TypeForm,
        **kwargs: Any,
    ) -> Agent[Any]: ...

    @staticmethod
    def deep_research(
        model: ModelLike,
        *,
        planner: Planner | Literal["simple", "model"] | None = None,
        replan_every: int | None = None,
        on_plan: PlanHook | None = None,
        plan_role: PlanRole = "system",
        output_type: Any = None,
        **kwargs: Any,
    ) -> Agent[Any]:
        """An agent with the DeepResearch runtime: a plan first, then the ReAct loop.

        ``planner``: a ``Planner``, ``"simple"`` (default: the goal is the only step) or ``"model"`` (a
        ``ModelPlanner`` asking ``model`` itself, which must then be a ``ChatModel``, for the model name
        ``settings`` sets, if any). ``replan_every``, ``on_plan`` and ``plan_role`` are
        ``DeepResearchRuntime``'s options; ``kwargs`` go to ``Agent``.
        """
        from ..runtimes.deep_research import DeepResearchRuntime
        from ..runtimes.planner import ModelPlanner, SimplePlanner

        if "runtime" in kwargs:
            raise TypeError("Agents.deep_research() sets the runtime itself; use Agent(runtime=...) instead")
        if planner is None or planner == "simple":
            chosen: Planner = SimplePlanner()
        elif planner == "model":
            if not isinstance(model, ChatModel):
                raise TypeError(
                    f"planner='model' needs a ChatModel to plan with, got {type(model).__name__}; "
                    "pass planner=ModelPlanner(chat_model) instead"
                )
            # The planner asks for the model name the agent's own calls use (ModelSettings.model), if set.
            settings = kwargs.get("settings")
            name = settings.model if isinstance(settings, ModelSettings) else None
            chosen = ModelPlanner(model, parameters={"model": name} if name else None)
        elif isinstance(planner, str):
            raise ValueError(f"planner must be 'simple', 'model' or a Planner, got {planner!r}")
        else:
            chosen = planner
        runtime = DeepResearchRuntime(chosen, replan_every=replan_every, on_plan=on_plan, plan_role=plan_role)
        return Agent(model, runtime=runtime, output_type=output_type, **kwargs)
