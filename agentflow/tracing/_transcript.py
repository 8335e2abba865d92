"""``Transcript``: what a run's model calls were sent, as far as the run's events show, for the
``gen_ai.input.messages`` of each ``chat`` span (only when content is captured).

The events carry the run's input (``RunStarted``), each answer (``ModelCompleted``) and each tool result
(``ToolSucceeded`` / ``ToolFailed``): the conversation the run adds to memory, message by message, each
with the number of memory items it is (a user input: one; an answer: its memory items; a tool result: one).
``ModelRequest.items`` says how many items a call was really sent, so a transcript knows what it cannot
show, without guessing:

- more items sent than it knows: items no event shows (a session's earlier turns, an output retry prompt,
  a plan, CodeAct's code results, the final-answer prompt): ``unseen``;
- fewer: memory was trimmed (``WindowedMemory``). The oldest messages go first, down to the count, and
  then any tool result left without its call (a window never starts with one); what the memory kept of
  them (the question a window keeps) counts as unseen. Which items a memory keeps is its own business:
  this is the shape of the built-in ones, not a guarantee for any memory.

Answers are kept in the order memory keeps them: a step's tool results in call order, whichever finished
first. What it must not do: guess the system prompt, the tools or any item no event carries (that needs the
prompt itself: see the module docstring of ``agentflow.tracing._recorder``).
"""

from __future__ import annotations

from typing import Any

import orjson

from ..model.messages import ToolCall
from ..runtimes.calls import complete_tool_calls
from ._content import assistant_message, tool_message, user_message

__all__ = ["Transcript"]


class Transcript:
    """One run's conversation as its events show it; ``messages(sent, max_chars)`` for each model call.

    >>> from agentflow.testing.fake import reply
    >>> t = Transcript(100)
    >>> t.add_input("Add 1 and 2.")
    >>> t.add_turn(reply(tool_calls=[("call_1", "add", {"a": 1, "b": 2})]), step=0)
    >>> t.add_result(ToolCall("call_1", "add", ""), "3")
    >>> text, unseen, dropped = t.messages(sent=3, max_chars=10_000)
    >>> [m["role"] for m in orjson.loads(text)], unseen, dropped
    (['user', 'assistant', 'tool'], 0, 0)
    """

    __slots__ = ("_entries", "_known", "_limit", "_results", "_start", "_turn")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._entries: list[tuple[int, str, bool]] = []  # (memory items, the message as JSON, a tool result?)
        self._start = 0  # entries before it left memory (trimmed)
        self._known = 0  # the items of the entries from ``_start`` on
        self._turn: tuple[int, dict[str, Any], tuple[ToolCall, ...]] | None = (
            None  # answered, not yet sent on
        )
        self._results: dict[str, tuple[str, str]] = {}  # call id → (tool name, output), for the pending turn

    def _add(self, items: int, message: dict[str, Any]) -> None:
        self._entries.append((items, orjson.dumps(message).decode(), message["role"] == "tool"))
        self._known += items

    def add_input(self, text: str) -> None:
        """The run's input (``RunStarted.input``), as one user message."""
        self._add(1, user_message(text, self._limit))

    def add_turn(self, response: object, step: int) -> None:
        """A step's answer (``ModelCompleted.response``), sent on with its tool results by the next call."""
        text = getattr(response, "output_text", None)
        raw = tuple(c for c in getattr(response, "tool_calls", ()) if isinstance(c, ToolCall))
        # The ids the run gives the calls (a blank or repeated id is completed), so results pair up by id.
        calls = complete_tool_calls(raw, step)
        memory = getattr(response, "memory_items", None)
        items = len(memory) if isinstance(memory, tuple | list) else int(bool(text or calls))
        if calls and not items:
            items = 1  # the run adds an assistant item with the calls (``patch_memory_items``)
        # Without its reasoning: whether that goes back to the model differs by protocol and provider (the
        # answer's own span has it, in ``gen_ai.output.messages``).
        message = assistant_message(text if isinstance(text, str) else None, self._limit)
        self._turn = (items, message, calls)

    def add_result(self, call: ToolCall, output: str) -> None:
        """A tool call's result, as the model reads it (``ToolResult.output``)."""
        self._results[call.id] = (call.name, output)

    def _flush(self) -> None:
        turn, self._turn = self._turn, None
        results, self._results = self._results, {}
        if turn is None:
            return
        items, message, calls = turn
        if items:
            if calls:
                # The names the run ran them under (normalised), where a result says.
                named = [
                    ToolCall(c.id, results[c.id][0], c.arguments) if c.id in results else c for c in calls
                ]
                message["parts"].extend(assistant_message(None, self._limit, calls=named)["parts"])
            self._add(items, message)
        for call in calls:  # memory's order: the calls', not the order they finished in
            found = results.get(call.id)
            if found is not None:
                self._add(1, tool_message(call.id, found[1], self._limit))

    def messages(self, sent: int, max_chars: int) -> tuple[str, int, int]:
        """For a call sent ``sent`` items: the messages as JSON text (``"[]"`` when none is known), the items
        it was sent that no event shows, and the older messages left out to keep the text within
        ``max_chars`` characters (the newest message is always kept)."""
        self._flush()
        entries = self._entries
        if self._known > sent:  # trimmed: the oldest went first, and never a call without its results
            while self._start < len(entries) and (self._known > sent or entries[self._start][2]):
                self._known -= entries[self._start][0]
                self._start += 1
        unseen = max(0, sent - self._known)
        chosen: list[str] = []
        size = 2  # the brackets
        for index in range(len(entries) - 1, self._start - 1, -1):
            fragment = entries[index][1]
            grown = size + len(fragment) + (1 if chosen else 0)
            if chosen and grown > max_chars:
                break
            chosen.append(fragment)
            size = grown
        dropped = len(entries) - self._start - len(chosen)
        chosen.reverse()
        return "[" + ",".join(chosen) + "]", unseen, dropped
