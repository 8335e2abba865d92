"""Tool-call completion: give every call of a model turn an id and a name, and make its memory items agree.

The reference completed missing call ids only *after* writing the assistant turn to memory, so the stored
turn and its ``function_call_output`` items could disagree and the provider rejected the next request.
Here the runtime completes the calls first and rewrites the turn's memory items to use the same ids and names
before anything is stored. Pure functions: no I/O, no awaits; the input items are never mutated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ..agent.items import (
    MAPPINGS,
    assistant_item,
    function_call_output_item,
    is_model_output_item,
    item_text,
    tool_output_call_id,
)
from ..model.messages import AiMessage, ToolCall
from ..tools.outcome import cancelled_result

__all__ = [
    "MemoryItemsMismatchError",
    "answer_unanswered_calls",
    "calls_of",
    "complete_tool_calls",
    "fallback_call_id",
    "open_tool_calls",
    "patch_memory_items",
    "stored_outputs",
    "turn_around",
]

UNANSWERED_REASON = "no result was stored for this call: the run that made it ended before the call finished"
"""Why a call found without an output when a run starts gets a synthetic ``cancelled`` result."""

FALLBACK_TOOL_NAME = "tool"
"""The name a call gets when the model sent none (the executor then reports an unknown tool)."""


class MemoryItemsMismatchError(ValueError):
    """A model client returned memory items whose tool calls cannot be matched with its ``tool_calls``."""


def fallback_call_id(step: int, index: int) -> str:
    """The id of a call the model sent without one (the reference's format).

    >>> fallback_call_id(2, 0)
    'tool_step_2_0'
    """
    return f"tool_step_{step}_{index}"


def complete_tool_calls(
    calls: Sequence[ToolCall], step: int, normalize_name: Callable[[str], str] | None = None
) -> tuple[ToolCall, ...]:
    """The calls with blank (or repeated) ids replaced by ``tool_step_<step>_<index>`` and names normalised.

    ``normalize_name`` maps a name as the model wrote it to the registered one (e.g.
    ``ToolRegistry.normalize_name``); without it names are stripped. A blank name becomes ``"tool"``.
    Arguments are untouched (raw JSON text). Unchanged calls are returned as the same objects.

    >>> complete_tool_calls([ToolCall("", " lookup ", "{}"), ToolCall("c1", "f")], step=3)
    (ToolCall(id='tool_step_3_0', name='lookup', arguments='{}'), ToolCall(id='c1', name='f', arguments=''))
    """
    out: list[ToolCall] = []
    seen: set[str] = set()
    taken: set[str] | None = None
    for index, call in enumerate(calls):
        call_id = call.id.strip()
        if not call_id or call_id in seen:
            if taken is None:  # the ids the model sent: a made-up id must be none of them either
                taken = {c.id.strip() for c in calls}
            call_id = fallback_call_id(step, index)
            suffix = 1
            while call_id in seen or call_id in taken:
                call_id = f"{fallback_call_id(step, index)}_{suffix}"
                suffix += 1
        seen.add(call_id)
        name = (normalize_name(call.name) if normalize_name else call.name).strip() or FALLBACK_TOOL_NAME
        # ``evolve``: a call's other fields (its kind, provider fields) stay as the model sent them.
        same = call_id == call.id and name == call.name
        out.append(call if same else attrs.evolve(call, id=call_id, name=name))
    return tuple(out)


_CALL_ITEMS = frozenset({"function_call", "custom_tool_call"})
"""Responses item types that are one tool call each (``call_id`` and ``name``): a function call, and a
GPT-5 custom (free-form) tool call."""


def _entry_body(entry: Any) -> str:
    """The key of a Chat ``tool_calls`` entry that holds its name: ``custom`` for a custom call (``{"type":
    "custom", "custom": {"name", "input"}}``), else ``function``."""
    return "custom" if entry.get("type") == "custom" else "function"


def _held_calls(items: Sequence[Any]) -> list[tuple[int, int | None, str, str]]:
    """The tool calls ``items`` hold, in order, each as ``(item index, position in its tool_calls list or
    None, call id, name)`` as the item holds them.

    One pass reads where every call sits and what it says: the patch needs both, to pair the calls with the
    model's and to skip the items that already agree (the usual case). Custom calls count as calls, in
    either shape: a Chat ``tool_calls`` entry of ``"type": "custom"`` and a Responses ``custom_tool_call``.
    """
    held: list[tuple[int, int | None, str, str]] = []
    for i, item in enumerate(items):
        if isinstance(item, AiMessage):
            held.extend((i, k, call.id, call.name) for k, call in enumerate(item.tool_calls))
        elif isinstance(item, MAPPINGS):
            kind = item.get("type", "message" if "role" in item else None)
            if kind == "message" and item.get("role") == "assistant":
                calls = item.get("tool_calls") or ()
                for k in range(len(calls)):
                    entry = calls[k]
                    if not isinstance(entry, MAPPINGS):
                        held.append((i, k, "", ""))
                        continue
                    body = entry.get("function")  # the usual entry; a custom call's is under "custom"
                    if body is None:
                        body = entry.get(_entry_body(entry))
                    name = body.get("name") if isinstance(body, MAPPINGS) else None
                    held.append((i, k, str(entry.get("id") or ""), str(name or "")))
            elif kind in _CALL_ITEMS:
                held.append((i, None, str(item.get("call_id") or ""), str(item.get("name") or "")))
    return held


def _match(held: Sequence[tuple[int, int | None, str, str]], raw: Sequence[ToolCall]) -> Sequence[int] | None:
    """For each held call (see ``_held_calls``), the index of its call in ``raw``; ``None`` when they cannot
    be paired."""
    if len(held) != len(raw):
        return None
    # Pair by position when every held id is blank or agrees with its call's id (the usual case) …
    # (a plain loop: a generator in ``all()`` costs more than the check itself, once per model turn)
    for (_, _, held_id, _), call in zip(held, raw, strict=True):
        if held_id and held_id != call.id:
            break
    else:
        return range(len(raw))
    # … else by id, for a client whose memory items list the calls in another order.
    pairing: list[int] = []
    unused = list(range(len(raw)))
    for _, _, held_id, _ in held:
        found = next((i for i in unused if held_id and raw[i].id == held_id), None)
        if found is None:
            return None
        unused.remove(found)
        pairing.append(found)
    return pairing


def _rewrite_entry(entry: Any, call: ToolCall) -> Any:
    """A Chat ``tool_calls`` entry with ``call``'s id and name, in the entry's own shape (a custom call's
    name is in its ``custom``, and the entry gets no ``function`` beside it); the rest kept as it is."""
    key = _entry_body(entry)
    body = dict(entry.get(key) or {})
    body["name"] = call.name
    return {**entry, "id": call.id, key: body}


def patch_memory_items(
    items: Sequence[Any], raw: Sequence[ToolCall], completed: Sequence[ToolCall], output_text: str = ""
) -> tuple[Any, ...]:
    """``items`` (one model turn's memory items) rewritten so their tool calls carry the completed ids/names.

    ``raw`` are the calls as the model client returned them and ``completed`` the same calls after
    ``complete_tool_calls``. Chat-shaped assistant items (``tool_calls`` entries, custom ones included),
    Responses ``function_call`` and ``custom_tool_call`` items and ``AiMessage`` values are patched;
    everything else is kept as is. When the items hold no tool
    calls at all but the model asked for some, an assistant item with the calls is appended, so memory always
    pairs every call with its output. Items whose calls cannot be matched raise ``MemoryItemsMismatchError``.

    >>> from agentflow.agent.items import assistant_item
    >>> raw = [ToolCall("", "f", "{}")]
    >>> patched = patch_memory_items([assistant_item("", raw)], raw, complete_tool_calls(raw, 0))
    >>> patched[0]["tool_calls"][0]["id"]
    'tool_step_0_0'
    """
    if len(raw) != len(completed):
        raise ValueError("patch_memory_items: raw and completed calls differ in number")
    held = _held_calls(items)
    if not held:
        if not completed:
            return tuple(items)
        return (*items, assistant_item(output_text or None, completed))
    pairing = _match(held, raw)
    if pairing is None:
        raise MemoryItemsMismatchError(
            f"the model client's memory items hold {len(held)} tool call(s) that do not match its "
            f"{len(raw)} tool call(s); a ModelClient's memory items must hold exactly the calls it reports"
        )
    out = list(items)
    for (index, position, held_id, held_name), call_index in zip(held, pairing, strict=True):
        call = completed[call_index]
        if held_id == call.id and held_name == call.name:
            continue
        item = out[index]
        if isinstance(item, AiMessage):
            calls = list(item.tool_calls)
            calls[position or 0] = call
            out[index] = attrs.evolve(item, tool_calls=calls)
        elif position is None:
            out[index] = {**item, "call_id": call.id, "name": call.name}
        else:
            entries = list(item["tool_calls"])
            entries[position] = _rewrite_entry(entries[position], call)
            out[index] = {**item, "tool_calls": entries}
    return tuple(out)


def _unanswered(items: Sequence[Any]) -> tuple[dict[int, list[tuple[str, str]]], dict[int, list[str]]]:
    """The calls ``items`` hold (by item index: ``(call id, name)``, in call order), and those of them no
    output answers (by item index: their ids). An output answers the oldest earlier call with its id that is
    still open (fallback ids repeat across runs); a call without an id cannot be answered and is skipped."""
    calls_by_item: dict[int, list[tuple[str, str]]] = {}
    for index, _, call_id, name in _held_calls(items):
        if call_id:  # a call without an id cannot be answered (a run completes ids before it stores a turn)
            calls_by_item.setdefault(index, []).append((call_id, name))
    if not calls_by_item:
        return calls_by_item, {}
    waiting: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        for call_id, _ in calls_by_item.get(index, ()):
            waiting.setdefault(call_id, []).append(index)
        answered = tool_output_call_id(item)
        if answered and waiting.get(answered):
            waiting[answered].pop(0)
    open_by_item: dict[int, list[str]] = {}
    for call_id, left in waiting.items():
        for index in left:
            open_by_item.setdefault(index, []).append(call_id)
    return calls_by_item, open_by_item


def answer_unanswered_calls(items: Sequence[Any], reason: str = UNANSWERED_REASON) -> tuple[Any, ...] | None:
    """``items`` with a synthetic ``cancelled`` ``TOOL_ERROR`` output for every tool call (function or
    custom) no output answers; ``None`` when every call has one.

    A conversation stored by a process that died in the middle of a tool call holds the call without its
    result, and both APIs refuse it. Each missing output goes right after its turn: after the run of call
    and output items that follows the item making the call, where Chat needs its tool messages. An output
    answers the oldest earlier call with its id that is still open (fallback ids repeat across runs). Items
    are never mutated; the ones kept are the same objects.

    >>> from agentflow.agent.items import function_call_item, user_item
    >>> fixed = answer_unanswered_calls([function_call_item("c1", "f", "{}"), user_item("next")])
    >>> [item.get("type") for item in fixed]
    ['function_call', 'function_call_output', 'message']
    >>> fixed[1]["output"].startswith('TOOL_ERROR: {"errorType":"cancelled"')
    True
    """
    calls_by_item, open_by_item = _unanswered(items)
    if not open_by_item:
        return None
    missing: dict[int, list[Any]] = {}
    for index, ids in open_by_item.items():
        names = dict(calls_by_item[index])
        for call_id in ids:
            output = cancelled_result(ToolCall(call_id, names[call_id]), reason).output
            missing.setdefault(index, []).append((call_id, function_call_output_item(call_id, output)))
    out: list[Any] = []
    due: list[Any] = []
    for index, item in enumerate(items):
        in_turn = index in calls_by_item or tool_output_call_id(item) is not None
        if due and not in_turn:
            out.extend(due)
            due = []
        out.append(item)
        if index in missing:
            # In call order within the item (the ``held`` order), whatever order the ids were collected in.
            order = {call_id: k for k, (call_id, _) in enumerate(calls_by_item[index])}
            due.extend(output for _, output in sorted(missing[index], key=lambda pair: order[pair[0]]))
    out.extend(due)
    return tuple(out)


def open_tool_calls(items: Sequence[Any]) -> tuple[ToolCall, ...]:
    """The tool calls ``items`` hold that no output answers, in order, with their arguments: what a run
    paused for approval (``StopReason.APPROVAL_REQUIRED``) left open, read back from the stored items.

    A web service that stored a paused run's ``all_items`` (``dump_items``) lists the calls waiting for a
    decision with this, and resumes with ``agent.run(history=items, approvals={call.id: ...})``.

    >>> from agentflow.agent.items import function_call_item, function_call_output_item
    >>> items = [function_call_item("c1", "refund", '{"amount":250}'), function_call_item("c2", "f", "{}"),
    ...          function_call_output_item("c2", "done")]
    >>> open_tool_calls(items)
    (ToolCall(id='c1', name='refund', arguments='{"amount":250}'),)
    """
    _, open_by_item = _unanswered(items)
    if not open_by_item:
        return ()
    found: list[ToolCall] = []
    for index in sorted(open_by_item):
        ids = set(open_by_item[index])
        found.extend(call for call in calls_of(items[index]) if call.id in ids)
    return tuple(found)


def calls_of(item: Any) -> list[ToolCall]:
    """The calls one item makes, with their arguments, as the item holds them (a Chat entry or a Responses
    item: custom calls with their ``input`` as the call's ``kind="custom"`` arguments)."""
    if isinstance(item, AiMessage):
        return list(item.tool_calls)
    kind = item.get("type", "message" if "role" in item else None)
    if kind in _CALL_ITEMS:
        custom = kind == "custom_tool_call"
        text = item.get("input" if custom else "arguments")
        return [
            ToolCall(
                str(item.get("call_id") or ""),
                str(item.get("name") or ""),
                text if isinstance(text, str) else "",
                "custom" if custom else "function",
            )
        ]
    calls: list[ToolCall] = []
    for entry in item.get("tool_calls") or ():
        if not isinstance(entry, MAPPINGS):
            continue
        custom = entry.get("type") == "custom"
        body = entry.get("custom" if custom else "function")
        body = body if isinstance(body, MAPPINGS) else {}
        text = body.get("input" if custom else "arguments")
        calls.append(
            ToolCall(
                str(entry.get("id") or ""),
                str(body.get("name") or ""),
                text if isinstance(text, str) else "",
                "custom" if custom else "function",
            )
        )
    return calls


def turn_around(items: Sequence[Any], index: int) -> tuple[int, int]:
    """The model turn ``items[index]`` is part of: the bounds ``(begin, end)`` of the consecutive model output
    items (assistant text, reasoning, calls) around it, one model answer as memory keeps it.

    >>> from agentflow.agent.items import function_call_item, function_call_output_item, user_item
    >>> calls = [function_call_item("c1", "f", "{}"), function_call_item("c2", "g", "{}")]
    >>> turn_around([user_item("hi"), *calls, function_call_output_item("c1", "x")], 2)
    (1, 3)
    """
    begin = end = index
    while begin > 0 and is_model_output_item(items[begin - 1]):
        begin -= 1
    while end < len(items) and is_model_output_item(items[end]):
        end += 1
    return begin, end


def stored_outputs(items: Sequence[Any]) -> dict[str, str]:
    """The text of each tool output ``items`` hold, by the id of the call it answers (text parts joined).

    >>> from agentflow.agent.items import function_call_output_item
    >>> stored_outputs([function_call_output_item("c1", "42")])
    {'c1': '42'}
    """
    found: dict[str, str] = {}
    for item in items:
        call_id = tool_output_call_id(item)
        if call_id is not None:
            if isinstance(item, MAPPINGS) and "output" in item:  # Responses: ``output``, not ``content``
                item = {"content": item["output"]}
            found[call_id] = item_text(item)
    return found
