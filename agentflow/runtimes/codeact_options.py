"""What configures a CodeAct runtime: ``CodeActOptions``, and the error a run fails with when the model
cannot keep to the protocol (``CodeActProtocolError``).

Values and checks only; ``agentflow.runtimes.codeact`` (which re-exports these names) does the running.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeAlias

import attrs

from ..agent.items import NoteRole, check_note_role
from ..result import AgentResult
from ..sandbox.executor import CodeExecutor
from ..sandbox.limits import ExecutionLimits
from .errors import AgentRunError

__all__ = [
    "MAX_SEND_BACKS",
    "CodeActOptions",
    "CodeActProtocolError",
    "ExecutorFactory",
    "ObservationRole",
]

ExecutorFactory: TypeAlias = Callable[[], CodeExecutor]
"""Makes the executor of one run (called once per run; the runtime closes what it returns)."""

ObservationRole: TypeAlias = NoteRole
"""The role of the messages CodeAct writes for the model (``CODE_RESULT``, ``CODE_ERROR``,
``PROTOCOL_ERROR``, ``OUTPUT_ERROR``)."""

MAX_SEND_BACKS: Final = 2
"""How many answers in a row the runtime sends back: prose (with ``correct_format``) and answers it cannot
use, counted together (see ``CodeActOptions``)."""


def _check_executor(
    _instance: object, _attribute: object, value: CodeExecutor | ExecutorFactory | None
) -> None:
    if value is not None and not isinstance(value, CodeExecutor) and not callable(value):
        raise TypeError(
            "CodeActOptions.executor must be a CodeExecutor, a zero-argument factory of one, or None "
            f"(a ProcessSandbox per run), got {type(value).__name__}"
        )


def _check_max_chars(_instance: object, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"CodeActOptions.{attribute.name} must be an int >= 1 or None, got {value!r}")


def _check_role(_instance: object, _attribute: object, value: str) -> None:
    check_note_role("CodeActOptions.observation_role", value)


class CodeActProtocolError(AgentRunError):
    """The model kept answering outside the protocol: after ``MAX_SEND_BACKS`` answers in a row were sent
    back, the next one could not be used either (text shaped like a protocol object that could not be read,
    an empty answer, an answer or code cut at the output-token limit).

    The answers sent back before it may be of that kind, or prose (with ``correct_format=True``): the two
    share one count, so that the model calls spent on correcting the format stay bounded by
    ``MAX_SEND_BACKS``. Only an unusable answer fails the run; prose past the count is the final answer.

    ``reason`` says what was wrong with the last answer, ``text`` is that answer; ``partial`` keeps the run's
    work. The model may not follow the protocol at all (a small model, a chat template that mangles it) or
    keep running out of output tokens (raise ``max_output_tokens``).
    """

    def __init__(self, reason: str, text: str, partial: AgentResult) -> None:
        super().__init__(
            f"the model answered outside the CodeAct protocol {MAX_SEND_BACKS + 1} times in a row (the first "
            f"{MAX_SEND_BACKS} answers were sent back), and its last answer could not be used: {reason}",
            partial,
        )
        self.reason = reason
        self.text = text

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.text, self.partial))


@attrs.frozen
class CodeActOptions:
    """How CodeAct runs code and when a run ends.

    - ``react``: ``False`` (default, as the reference): a code step that succeeds ends the run, its value
      (or, when it has none, what it printed) being the answer; a failed step goes back to the model.
      ``True``: every step goes back to the model, which runs more code or answers with a final message.
      Either way ``final_answer(x)`` in code ends the run at once with ``x``.
    - ``correct_format``: what happens to plain prose, an answer with no protocol object and no code in it.
      ``False`` (default, as the reference): it is the final answer. ``True``: it is sent back with a
      ``PROTOCOL_ERROR`` saying what was wrong, up to ``MAX_SEND_BACKS`` (2) times in a row; the next is the
      answer. Whatever it says, an answer that is not prose is never handed to the user: text shaped like a
      protocol object that could not be read (``{"type": "final", "output": "a "quoted" word"}`` is read;
      ``{"type": "final", "output": 4,}`` is not), an empty answer, or a final object cut at the output-token
      limit get a ``PROTOCOL_ERROR``, code cut there a ``CODE_ERROR`` asking for shorter code, and after
      ``MAX_SEND_BACKS`` answers in a row were sent back (such answers, or prose sent back: one count) such
      an answer fails the run with ``CodeActProtocolError``.
    - ``executor``: ``None`` gives each run a fresh ``ProcessSandbox``; a factory is called once per run
      and what it returns is closed when the run ends; an executor instance is used by every run as is
      (you own it and close it; its state is shared by those runs).
    - ``limits``: the ``ExecutionLimits`` of every code step (wall time, CPU, memory, output…).
    - ``max_result_chars``: how much of a step's value its ``CODE_RESULT`` shows the model (16,000
      characters, about 4,000 tokens); a longer value is cut, ending with a ``[... result truncated: N
      more characters not shown ...]`` marker. ``None``: no cut (``limits.max_result_bytes``, 1 MiB, still
      bounds the value). Only the model's view is cut: ``CodeExecuted.result`` and an answer taken from
      the step (``react=False``, ``final_answer(x)``) keep the whole value.
    - ``max_output_chars``: how much of a step's stdout, and of its stderr, its ``CODE_RESULT`` /
      ``CODE_ERROR`` shows the model (8,000 characters each, about 2,000 tokens); longer output keeps its
      start and its end, half each, around a ``[... N characters of output cut here ...]`` marker (the end is
      where a traceback or a summary is). ``None``: as the sandbox bounded it (``limits.max_output_bytes``,
      64 KiB). ``CodeExecuted.stdout`` / ``.stderr`` keep all of it.
    - ``observation_role``: the role of the messages the runtime writes for the model, ``CODE_RESULT``,
      ``CODE_ERROR``, ``PROTOCOL_ERROR`` and ``OUTPUT_ERROR``: ``"system"`` (default, as the reference),
      ``"user"`` (as smolagents sends observations) or ``"developer"``. Change it for servers whose chat
      template refuses a system message after the first one or wants user and assistant turns to alternate
      (Mistral's and Gemma's templates on vLLM or TGI): such a server answers 400, or quietly moves the text
      into the system prompt. ``"user"`` suits them; ``"developer"`` is for OpenAI models that take it. (A
      run that ends right after a code step, ``react=False``, leaves a ``"user"`` observation last, so a
      session's next input follows it as a second user turn.)

    >>> CodeActOptions(react=True).limits.wall_time
    30.0
    """

    react: bool = False
    correct_format: bool = False
    executor: CodeExecutor | ExecutorFactory | None = attrs.field(default=None, validator=_check_executor)
    limits: ExecutionLimits = attrs.field(
        factory=ExecutionLimits, validator=attrs.validators.instance_of(ExecutionLimits)
    )
    max_result_chars: int | None = attrs.field(default=16_000, validator=_check_max_chars)
    max_output_chars: int | None = attrs.field(default=8_000, validator=_check_max_chars)
    observation_role: ObservationRole = attrs.field(default="system", validator=_check_role)
