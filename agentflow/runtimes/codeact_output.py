"""CodeAct's final answer read into the agent's ``output_type``, through its validators.

A CodeAct answer is a value more often than a message: what code hands ``final_answer(x)``, a final
message's ``output`` (any JSON value), the value of a step that ends the run (``react=False``), or text (what
such a step printed when it has no value; prose). ``check_answer`` reads a value with
``OutputType.read_value`` (no JSON text on the way: code's ``2**70`` stays exact, and the error messages are
``parse``'s), text with ``OutputType.parse``, then runs the type's validators; ``Rejected`` holds what the
events and the error say (``reason``) and what the model is told (``feedback``: what is wrong and the type
again, or the validator's message alone).

What happens to a rejected answer is the runtime's to decide; ``may_retry`` is the rule
``AgentRuntime.read_output`` applies to a ReAct answer, so both count the same way: a retry while
``OutputType.retries`` last and a step and the token budget are left to answer with.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

import attrs

from .codeact_prompt import output_error_text
from .output_validators import RejectOutput, validate

if TYPE_CHECKING:
    from .context import RunContext

__all__ = ["Accepted", "Rejected", "check_answer", "may_retry"]

_WRAPPER_PATH: Final = re.compile(r"\boutput\.result(?=[\[.\s]|$)")
"""Where a wrapped type's error names the wire's ``{"result": …}`` key (``output.result[1]``), which a CodeAct
answer never writes: its value is given bare."""


@attrs.frozen
class Accepted:
    """The answer, read into the output type and passed through its validators: ``value`` is the output."""

    value: Any


@attrs.frozen
class Rejected:
    """An answer that is not of the output type, or that a validator rejected.

    ``reason`` is what ``OutputRejected`` and ``OutputValidationError`` say; ``feedback`` what the model is
    sent (in a ``CODE_ERROR`` for a code step's answer, else after ``OUTPUT_ERROR_PREFIX``).
    """

    reason: str
    feedback: str


async def check_answer(
    ctx: RunContext, value: Any, text: str, *, from_text: bool = False
) -> Accepted | Rejected:
    """Read a final answer into ``ctx.output_type`` and validate it.

    ``value`` is the answer as a Python value and ``text`` as text (what ``AgentResult.output_text`` shows,
    and what an ``OutputContext`` gets); ``from_text``: the answer is text only (prose, printed output), read
    as ``parse`` reads a ReAct answer. A validator that raises anything but ``RejectOutput`` fails the run
    (``ValidatorError`` propagates).
    """
    spec = ctx.output_type
    assert spec is not None
    try:
        typed = spec.parse(text) if from_text else spec.read_value(value)
        if spec.validators:
            typed = await validate(ctx, typed, text)
    except RejectOutput as exc:
        return Rejected(exc.message, output_error_text(exc.message, None))
    except ValueError as exc:
        reason = str(exc)
        if spec.wrapped:
            reason = _WRAPPER_PATH.sub("output", reason)
        return Rejected(reason, output_error_text(reason, spec.value_schema))
    return Accepted(typed)


def may_retry(ctx: RunContext, *, final: bool) -> bool:
    """Whether a rejected answer goes back to the model (else the run fails): retries are left, this is not
    the ``final`` call after ``max_steps``, a step is left to answer in, and the token budget is not spent."""
    spec = ctx.output_type
    assert spec is not None
    max_steps = ctx.options.max_steps
    step_left = max_steps is None or ctx.step + 1 < max_steps or ctx.options.on_max_steps == "final_answer"
    return not final and step_left and not ctx.token_budget_reached and ctx.output_rejections < spec.retries
