"""``Agents``: shortcuts that build an ``Agent`` with a given runtime (the reference's ``Agents`` factory).

Kept apart from ``agent.py`` because each shortcut is a stack of typed overloads (the ``output_type``
decides the agent's type) over a few lines of wiring: ``Agent`` itself reads better without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from ..runtimes.output import OutputType, TypeForm
from .agent import Agent, ModelLike

if TYPE_CHECKING:
    from ..runtimes.codeact import CodeActOptions
    from ..runtimes.planner import Planner
    from ..runtimes.planning import PlanHook, PlanRole

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
        planner: Planner | Literal["simple", "model"] | None = ...,
        replan_every: int | None = ...,
        on_plan: PlanHook | None = ...,
        plan_role: PlanRole | None = ...,
        output_type: None = ...,
        **kwargs: Any,
    ) -> Agent[str]: ...

    @overload
    @staticmethod
    def codeact(
        model: ModelLike,
        *,
        codeact: CodeActOptions | None = ...,
        planner: Planner | Literal["simple", "model"] | None = ...,
        replan_every: int | None = ...,
        on_plan: PlanHook | None = ...,
        plan_role: PlanRole | None = ...,
        output_type: type[_T] | OutputType[_T],
        **kwargs: Any,
    ) -> Agent[_T]: ...

    @overload
    @staticmethod
    def codeact(
        model: ModelLike,
        *,
        codeact: CodeActOptions | None = ...,
        planner: Planner | Literal["simple", "model"] | None = ...,
        replan_every: int | None = ...,
        on_plan: PlanHook | None = ...,
        plan_role: PlanRole | None = ...,
        output_type: TypeForm,
        **kwargs: Any,
    ) -> Agent[Any]: ...

    @staticmethod
    def codeact(
        model: ModelLike,
        *,
        codeact: CodeActOptions | None = None,
        planner: Planner | Literal["simple", "model"] | None = None,
        replan_every: int | None = None,
        on_plan: PlanHook | None = None,
        plan_role: PlanRole | None = None,
        output_type: Any = None,
        **kwargs: Any,
    ) -> Agent[Any]:
        """An agent with the CodeAct runtime: the model writes Python that calls the tools, run in a sandbox.

        ``codeact``: the runtime's ``CodeActOptions`` (``react``, ``correct_format``, ``executor``,
        ``limits``). To plan (smolagents' ``planning_interval``): ``planner`` as for ``deep_research``, and
        ``replan_every=N`` to re-plan every N steps; ``replan_every`` alone plans with the agent's own model
        (``planner="model"``: each run's, an ``agent.override``'s included). ``on_plan`` and ``plan_role``
        are ``CodeActRuntime``'s; ``kwargs`` go to ``Agent``.
        """
        from ..runtimes.codeact import CodeActRuntime
        from ..runtimes.planning import planner_for

        if "runtime" in kwargs:
            raise TypeError("Agents.codeact() sets the runtime itself; use Agent(runtime=...) instead")
        if planner is None and replan_every is not None:
            planner = "model"  # smolagents' planning_interval: the agent's own model plans
        chosen = None if planner is None else planner_for(planner)
        runtime = CodeActRuntime(
            codeact, planner=chosen, replan_every=replan_every, on_plan=on_plan, plan_role=plan_role
        )
        return Agent(model, runtime=runtime, output_type=output_type, **kwargs)

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

        ``planner``: a ``Planner``, ``"simple"`` (default: the goal is the only step) or ``"model"`` (an
        ``AgentModelPlanner``: the agent's own model plans, the model client and model name each run uses,
        so an ``agent.override(model=...)`` or a run's ``settings=`` reach the plan too).
        ``replan_every``, ``on_plan`` and ``plan_role`` are ``DeepResearchRuntime``'s options; ``kwargs``
        go to ``Agent``.
        """
        from ..runtimes.deep_research import DeepResearchRuntime
        from ..runtimes.planning import planner_for

        if "runtime" in kwargs:
            raise TypeError("Agents.deep_research() sets the runtime itself; use Agent(runtime=...) instead")
        chosen = planner_for(planner or "simple")
        runtime = DeepResearchRuntime(chosen, replan_every=replan_every, on_plan=on_plan, plan_role=plan_role)
        return Agent(model, runtime=runtime, output_type=output_type, **kwargs)
