"""Live terminal rendering of a run's events (the CLI and ``make demo``), and newline-delimited JSON.

``Renderer`` writes each event as it arrives: answer text as it streams, reasoning dimmed, tool calls with
their arguments, approvals asked for, results and failures, CodeAct code (shown as soon as the model has
written it, so the tool calls it makes appear under it) and its outcome, the plan and its updates
(DeepResearch), retries, and the outcome with the run's usage at the end. Plain ANSI escapes, no
dependency; no colour at all when ``color=False`` (see ``use_color``: not a terminal, ``NO_COLOR`` set,
or ``TERM=dumb``).
``json_line`` is the ``--json`` form: ``event.to_dict()`` through orjson, one line per event.

Rendering only: this module never runs anything; the caller feeds it events.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, TextIO

import orjson

from ..agent.prompt import AgentModelResult
from ..events import (
    CodeExecuted,
    GuardrailTripped,
    HandedOff,
    PlanCreated,
    PlanUpdated,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunStarted,
    StepStarted,
    ToolApprovalRequested,
    ToolCallRequested,
    ToolFailed,
    ToolProgress,
    ToolSucceeded,
)
from ..exact_json import dumps as exact_dumps
from ..model.events import Event, ModelCompleted, ModelRetry, ReasoningDelta, RefusalDelta, TextDelta
from ..model.response import TokenUsage
from ..plan import Plan, StepStatus
from ..result import AgentResult
from ..runtimes.codeact_protocol import CodeMessage, parse_answer

__all__ = ["Renderer", "json_line", "use_color"]

_RESET = "\x1b[0m"
_STYLES = {
    "bold": "\x1b[1m",
    "dim": "\x1b[2m",
    "red": "\x1b[31m",
    "green": "\x1b[32m",
    "yellow": "\x1b[33m",
    "blue": "\x1b[34m",
    "magenta": "\x1b[35m",
    "cyan": "\x1b[36m",
}
_MARKS = {
    StepStatus.PENDING: "[ ]",
    StepStatus.IN_PROGRESS: "[~]",
    StepStatus.DONE: "[x]",
    StepStatus.SKIPPED: "[-]",
}
_ARGUMENTS_CHARS = 300
_OUTPUT_CHARS = 300


def use_color(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Whether to colour output to ``stream``: a terminal, ``NO_COLOR`` unset or empty, ``TERM`` not dumb.

    >>> import io
    >>> use_color(io.StringIO(), {})
    False
    """
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def json_line(event: Event) -> bytes:
    """One event as a line of JSON (``event.to_dict()``), newline included.

    >>> json_line(TextDelta("hi", run_id="run_1"))
    b'{"type":"text_delta","run_id":"run_1","step":0,"seq":0,"text":"hi"}\\n'
    """
    return exact_dumps(event.to_dict(), option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_NON_STR_KEYS)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def usage_text(usage: TokenUsage) -> str:
    """``120 in / 30 out / 150 total tokens`` (with cached and reasoning tokens when there are any)."""
    text = f"{usage.input_tokens} in / {usage.output_tokens} out / {usage.total_tokens} total tokens"
    extras = []
    if usage.cached_input_tokens:
        extras.append(f"{usage.cached_input_tokens} cached")
    if usage.reasoning_tokens:
        extras.append(f"{usage.reasoning_tokens} reasoning")
    return text + (f" ({', '.join(extras)})" if extras else "")


class Renderer:
    """Writes a run's events to a text stream as a live, readable transcript.

    Call it with each event (``renderer(event)``); ``heading(text)`` writes a section title (the demo uses
    it between scenarios). Every write is flushed, so text appears as it streams.

    >>> import io
    >>> out = io.StringIO()
    >>> render = Renderer(out, color=False)
    >>> for event in (TextDelta("Hello "), TextDelta("world")):
    ...     render(event)
    >>> render.finish()
    >>> out.getvalue()
    'Hello world\\n'
    """

    def __init__(self, out: TextIO, *, color: bool = False) -> None:
        self.out = out
        self.color = color
        self._at_line_start = True
        self._streaming: type[Event] | None = None
        self._quiet_text = False
        self._shown_code: str | None = None
        self._steps_started = 0
        """Steps of the current run that began: a run cut mid-step counts that step as not run."""

    # -- output primitives -----------------------------------------------------------------------------------

    def style(self, text: str, *names: str) -> str:
        """``text`` in the given styles (``"dim"``, ``"red"``…), or as is without colour."""
        if not self.color or not names:
            return text
        return "".join(_STYLES[n] for n in names) + text + _RESET

    def _write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self._at_line_start = text.endswith("\n")
            self.out.flush()

    def line(self, text: str = "", *styles: str) -> None:
        """Write a whole line (after ending a line of streamed text, if one is open)."""
        self.finish()
        self._streaming = None
        self._write(self.style(text, *styles) + "\n")

    def finish(self) -> None:
        """End the current line of streamed text, if any."""
        if not self._at_line_start:
            self._write("\n")

    def heading(self, text: str) -> None:
        """A section title."""
        self.line()
        self.line(f"=== {text} ===", "bold")

    def _stream(self, kind: type[Event], text: str, *styles: str) -> None:
        if self._streaming is not kind:
            self.finish()
            self._streaming = kind
        # Styled per fragment, so an interrupted stream never leaves the terminal coloured.
        self._write(self.style(text, *styles))

    # -- events ----------------------------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        """Render one event (events this renderer does not show are ignored)."""
        if isinstance(event, TextDelta):
            if not self._quiet_text:
                self._stream(TextDelta, event.text)
        elif isinstance(event, ReasoningDelta):
            if self._streaming is not ReasoningDelta and not self.color:
                # Without colour nothing else sets reasoning apart from the answer.
                self._stream(ReasoningDelta, "(reasoning) ")
            self._stream(ReasoningDelta, event.text, "dim")
        elif isinstance(event, RefusalDelta):
            self._stream(RefusalDelta, event.text, "red")
        elif isinstance(event, RunStarted):
            # CodeAct's model text is its JSON protocol: the code steps and the answer are shown instead.
            self._quiet_text = event.runtime == "codeact"
            self._shown_code = None
            self._steps_started = 0
            self.line(f"> [{event.runtime}] {_clip(event.input, 200)}", "bold")
        elif isinstance(event, StepStarted):
            self._steps_started = max(self._steps_started, event.step + 1)
            self.line(f"-- step {event.step + 1} --", "dim")
        elif isinstance(event, PlanCreated | PlanUpdated):
            self.plan(event.plan, updated=isinstance(event, PlanUpdated))
        elif isinstance(event, HandedOff):
            self.line(f"=> {event.source} hands the conversation over to {event.target}", "bold")
        elif isinstance(event, ToolCallRequested):
            call = event.call
            arguments = _clip(call.arguments or "{}", _ARGUMENTS_CHARS)
            self.line(f"-> {call.name}({arguments})", "cyan")
        elif isinstance(event, ToolApprovalRequested):
            self.line(f"?  {event.tool} waits for approval (call {event.call.id})", "yellow")
        elif isinstance(event, ToolProgress):
            shown = _progress_text(event)
            if shown is not None:
                self.line(f"   ... {event.tool}: {_clip(shown, _OUTPUT_CHARS)}", "dim")
        elif isinstance(event, ToolSucceeded):
            self.line(f"<- {event.call.name}: {_clip(event.result.output, _OUTPUT_CHARS)}", "green")
        elif isinstance(event, ToolFailed):
            self.line(f"x  {event.call.name}: {_clip(event.result.output, _OUTPUT_CHARS)}", "red")
        elif isinstance(event, ModelCompleted):
            if self._quiet_text and isinstance(event.response, AgentModelResult):
                # Show the code now, before it runs: the tool calls it makes are then rendered under it.
                answer = parse_answer(event.response.output_text)
                if isinstance(answer, CodeMessage):
                    self.code_source(answer.code)
                    self._shown_code = answer.code
        elif isinstance(event, CodeExecuted):
            self.code(event)
        elif isinstance(event, ModelRetry):
            self.line(
                f"!  retrying in {event.delay:.1f} s (attempt {event.attempt}/{event.max_attempts}): "
                f"{_clip(event.reason, _OUTPUT_CHARS)}",
                "yellow",
            )
        elif isinstance(event, RunFinished):
            if self._quiet_text and event.result.output_text:
                self.line(f"answer: {event.result.output_text}", "bold")
            self.outcome("done", event.result, "green")
        elif isinstance(event, GuardrailTripped):
            self.line(
                f"!! {event.kind} guardrail {event.guardrail} tripped: {_clip(event.reason, _OUTPUT_CHARS)}",
                "red",
            )
        elif isinstance(event, RunFailed):
            self.line(f"== failed: {event.error_type}: {_clip(event.error, 500)}", "red", "bold")
            if event.partial is not None:
                self.line(f"   {usage_text(event.partial.usage)}", "dim")
        elif isinstance(event, RunCancelled):
            self.outcome("cancelled", event.partial, "yellow")

    def plan(self, plan: Plan, *, updated: bool = False) -> None:
        """The plan, one step per line with its status mark."""
        title = f"Plan (revision {plan.revision}):" if updated else "Plan:"
        if not plan.steps:
            self.line(f"{title} (no steps)", "blue")
            return
        self.line(title, "blue", "bold")
        for number, step in enumerate(plan.steps, start=1):
            self.line(f"  {_MARKS[step.status]} {number}. {step.text}", "blue")

    def code_source(self, code: str) -> None:
        """A CodeAct code step's source, under a ``code:`` heading."""
        self.line("code:", "magenta", "bold")
        for source_line in code.splitlines() or [""]:
            self.line(f"  | {source_line}", "magenta")

    def code(self, event: CodeExecuted) -> None:
        """A CodeAct code step: the code (unless already shown), what it printed, and its value or error."""
        shown, self._shown_code = self._shown_code, None
        if event.code != shown:
            self.code_source(event.code)
        for printed in event.stdout.splitlines():
            self.line(f"  > {printed}", "dim")
        if event.ok:
            self.line(f"  = {_clip(_value_text(event.result), _OUTPUT_CHARS)}", "green")
        else:
            self.line(f"  ! {_clip(event.error or event.stderr or 'failed', _OUTPUT_CHARS)}", "red")

    def outcome(self, word: str, result: AgentResult, *styles: str) -> None:
        """The last lines of a run: why it stopped, steps and tool calls, and its usage."""
        calls = len(result.tool_calls)
        steps = f"{result.steps} step{'s' if result.steps != 1 else ''}"
        if self._steps_started > result.steps:
            # A run cut short counts only its finished steps: "0 steps" alone reads as if nothing ran.
            steps += f" (step {self._steps_started} cut short)"
        self.line(
            f"== {word}: {result.stop_reason.value}, {steps}, {calls} tool call{'s' if calls != 1 else ''}",
            *styles,
        )
        self.line(f"   {usage_text(result.usage)}", "dim")


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, default=repr).decode()
    except TypeError:
        return repr(value)


def _progress_text(event: ToolProgress) -> str | None:
    """What a ``ToolProgress`` shows: its message, or for a sub-agent's forwarded event (``as_tool``) the
    sub-run's own tool calls and ending; ``None`` for the rest of its events (deltas, model calls), which
    would bury the caller's steps under one line each."""
    data = event.data
    if not isinstance(data, Event):
        return event.message
    if isinstance(data, ToolProgress):
        inner = _progress_text(data)
        return None if inner is None else f"{data.tool}: {inner}"
    if isinstance(data, ToolCallRequested):
        return f"-> {data.call.name}({data.call.arguments or '{}'})"
    if isinstance(data, ToolApprovalRequested):
        return f"?  {data.tool} waits for approval (call {data.call.id})"
    if isinstance(data, ToolSucceeded):
        return f"<- {data.call.name}: {data.result.output}"
    if isinstance(data, ToolFailed):
        return f"x  {data.call.name}: {data.result.output}"
    if isinstance(data, RunFinished):
        return f"answered ({data.result.stop_reason.value})"
    if isinstance(data, GuardrailTripped):
        return f"!! {data.kind} guardrail {data.guardrail} tripped: {data.reason}"
    if isinstance(data, RunFailed):
        return f"failed: {data.error_type}"
    if isinstance(data, RunCancelled):
        return "cancelled"
    return None
