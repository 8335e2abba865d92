"""Checking a conversation where it enters: ``check_items`` and ``HistoryError``.

A conversation that comes from outside a run — ``load_items`` (JSON from your database), ``history=``, a
``SessionStore``'s ``load`` — is checked once, there, so that a mistake is told where it was made, naming the
item, and not by a provider's 400 at the run's first model call (or a conversion error inside the run). The
check costs one pass over the items when they enter, and nothing afterwards: the run loop never calls it.

What is refused (``HistoryError``, a ``ValueError``): an item whose kind cannot be told (no string ``type``,
and no ``role`` for a message); an item type that neither agentflow nor the Responses API knows, unless it
carries a string ``id`` (an output item a server returned, replayed as it came: a type added after this
module); a message of an unknown role, or whose ``content`` is neither a string nor a list of parts (each an
object with a string ``type``; text parts with a string ``text``); a tool call or tool output without a
non-empty call id (or a call without a name); and a tool output that answers no open call: an orphan (its
call is not in the conversation: trimmed off, or lost), one that comes before its call, or a second output
for a call answered already. Calls and outputs pair as the runtime pairs them: an output answers the oldest
earlier call of its id that no output answered yet (some servers reuse ids such as ``call_0`` across turns).

What is not refused, because a run repairs it: a tool call that no output answers (a process that died in
the middle of a tool call stored it so), wherever it is. The run's first step answers it with a synthetic
``cancelled`` ``TOOL_ERROR`` result right after its turn (``runtimes.calls.answer_unanswered_calls``) and
lists that result in its ``new_items``; or the run's own input answers it (a ``function_call_output`` given
as input). Nor are the Chat and Responses shapes of one item told apart: memory holds either (a Chat
agent's assistant turns carry Chat-style ``tool_calls``; a Responses agent's memory holds the server's output
items, ``reasoning``, ``function_call``, hosted tool calls), and each protocol converts the other's when it
sends them. What only one protocol can carry (a ``web_search_call`` on Chat Completions, an image in an
assistant message) is refused by that protocol's conversion, naming the item, when a request is built; and
the fields a server judges (a part type such as ``input_file``, fields beyond those named here) are its own.

Pure functions only: no I/O, no awaits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from ..model.messages import AiMessage, DeveloperMessage, SystemMessage, ToolResultMessage, UserMessage

__all__ = ["ITEM_TYPES", "MESSAGE_ROLES", "HistoryError", "check_items"]

_MESSAGE_VALUES = (SystemMessage, DeveloperMessage, UserMessage, AiMessage, ToolResultMessage)

MESSAGE_ROLES: Final = frozenset({"user", "assistant", "system", "developer", "tool"})
"""The roles a message item may have: the Responses roles, and ``tool`` (a Chat tool result)."""

_CALLS: Final = frozenset({"function_call", "custom_tool_call"})
_OUTPUTS: Final = frozenset({"function_call_output", "custom_tool_call_output"})
"""The tool calls a run answers, and their outputs: these pair. Other ``…_call`` items are the server's."""

ITEM_TYPES: Final = frozenset(
    {
        "message",
        "reasoning",
        *_CALLS,
        *_OUTPUTS,
        # What else the Responses API takes as input: the server's tool calls, the client-run ones and
        # their outputs, MCP items, references to stored items and compaction items, sent as they are.
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "computer_call",
        "computer_call_output",
        "local_shell_call",
        "local_shell_call_output",
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "mcp_list_tools",
        "mcp_call",
        "mcp_approval_request",
        "mcp_approval_response",
        "item_reference",
        "compaction",
    }
)
"""The item types ``check_items`` knows. Another type passes only on an item with a string ``id`` (what a
server returned)."""

_TEXT_PARTS: Final = frozenset({"input_text", "output_text", "text"})


class HistoryError(ValueError):
    """A conversation item that no provider would take: ``index`` is its position, ``problem`` what is wrong.

    Raised where a conversation enters (``load_items``, ``history=``, a session store's ``load``), before any
    model call. A ``ValueError``, as ``load_items`` raised before for what is not JSON items at all.

    >>> error = HistoryError(2, "unknown message role 'robot'")
    >>> str(error), error.index
    ("history item 2: unknown message role 'robot'", 2)
    """

    def __init__(self, index: int, problem: str, *, source: str = "history") -> None:
        super().__init__(f"{source} item {index}: {problem}")
        self.index = index
        """The item's position in the conversation (0 is the oldest)."""
        self.problem = problem
        """What is wrong with it."""
        self.source = source
        """Where the conversation came from (``"history"``, ``"load_items"``, ``"stored"``)."""


def check_items(items: Iterable[Any], *, source: str = "history") -> None:
    """Raise ``HistoryError`` for the first item of ``items`` that no provider would take (see the module
    docstring for what is refused, and what a run repairs instead); ``TypeError`` for what is not an item at
    all (neither a mapping nor a ``Message``). ``source`` names the conversation in the message.

    >>> from agentflow.agent.items import function_call_item, function_call_output_item, user_item
    >>> check_items([user_item("hi"), function_call_item("c1", "f", "{}")])  # unanswered: a run answers it
    >>> check_items([user_item("hi"), function_call_output_item("c1", "42")])
    Traceback (most recent call last):
    ...
    agentflow.agent.item_checks.HistoryError: history item 1: a function_call_output answers call 'c1', \
which no item of the conversation makes (an orphan tool output: its call was trimmed off or lost)
    """
    checked = items if isinstance(items, Sequence) else tuple(items)
    open_calls: dict[str, int] = {}  # call id -> how many calls of that id no output answered yet
    answered: dict[str, int] = {}  # call id -> the index of the last output that answered one
    for index, item in enumerate(checked):
        if isinstance(item, Mapping):
            calls, output = _check_mapping(item, index, source)
        elif isinstance(item, _MESSAGE_VALUES):
            calls, output = _message_value_calls(item, index, source)
        else:
            raise TypeError(
                f"{source} item {index} is a {type(item).__name__}; items are dicts or Message values"
            )
        if output is not None:
            if open_calls.get(output):
                open_calls[output] -= 1
                answered[output] = index
            else:
                raise HistoryError(index, _unanswerable(checked, index, output, answered), source=source)
        for call_id in calls:
            open_calls[call_id] = open_calls.get(call_id, 0) + 1


def _unanswerable(items: Sequence[Any], index: int, call_id: str, answered: Mapping[str, int]) -> str:
    """Why the output at ``index`` answers no open call ``call_id``."""
    what = _output_kind(items[index])
    if call_id in answered:
        return (
            f"a {what} answers call {call_id!r} a second time (item {answered[call_id]} answered it): "
            "each call has one output"
        )
    for later in range(index + 1, len(items)):
        if call_id in _call_ids_of(items[later]):
            return (
                f"a {what} answers call {call_id!r}, which comes after it (item {later}): a tool output "
                "goes after its call"
            )
    return (
        f"a {what} answers call {call_id!r}, which no item of the conversation makes (an orphan tool "
        "output: its call was trimmed off or lost)"
    )


def _output_kind(item: Any) -> str:
    if isinstance(item, Mapping):
        kind = item.get("type")
        return kind if isinstance(kind, str) and kind != "message" else "tool message"
    return type(item).__name__


def _call_ids_of(item: Any) -> tuple[str, ...]:
    """The call ids ``item`` makes, read leniently (for an error message only: the item may be any shape)."""
    if isinstance(item, AiMessage):
        return tuple(call.id for call in item.tool_calls)
    if not isinstance(item, Mapping):
        return ()
    if item.get("type") in _CALLS:
        return (str(item.get("call_id")),)
    calls = item.get("tool_calls") if item.get("role") == "assistant" else None
    if isinstance(calls, Sequence) and not isinstance(calls, str):
        return tuple(str(entry.get("id")) for entry in calls if isinstance(entry, Mapping))
    return ()


def _message_value_calls(item: Any, index: int, source: str) -> tuple[tuple[str, ...], str | None]:
    """The calls a ``Message`` value makes and the call its output answers (its type makes it well formed,
    but for a blank call id, which nothing could pair)."""
    if isinstance(item, AiMessage):
        ids = tuple(call.id for call in item.tool_calls)
        if not all(ids):
            raise HistoryError(index, "an AiMessage's tool calls need non-empty ids", source=source)
        return ids, None
    if isinstance(item, ToolResultMessage):
        if not item.call_id:
            raise HistoryError(index, "a ToolResultMessage needs a non-empty call_id", source=source)
        return (), item.call_id
    return (), None


def _check_mapping(item: Mapping[str, Any], index: int, source: str) -> tuple[tuple[str, ...], str | None]:
    """Check one item dict: the call ids it makes and the call id its output answers, if it is one."""
    kind = item.get("type")
    if kind is None and "role" in item:
        kind = "message"
    if not isinstance(kind, str):
        got = f"type {kind!r}" if kind is not None else f"keys {sorted(map(str, item))}"
        raise HistoryError(
            index,
            f"an item needs a string 'type' (or a 'role', for a message), got {got}",
            source=source,
        )
    if kind == "message":
        return _check_message(item, index, source)
    if kind in _CALLS:
        call_id = _call_id(item, "call_id", kind, index, source)
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise HistoryError(index, f"a {kind} item needs a non-empty string 'name'", source=source)
        return (call_id,), None
    if kind in _OUTPUTS:
        call_id = _call_id(item, "call_id", kind, index, source)
        output = item.get("output")
        if not isinstance(output, str):
            _check_parts(output, index, source, f"a {kind} item's 'output'")
        return (), call_id
    if kind in ITEM_TYPES or isinstance(item.get("id"), str):
        return (), None
    raise HistoryError(
        index,
        f"unknown item type {kind!r}: a message ('message', or a dict with a 'role'), 'function_call', "
        "'function_call_output', 'custom_tool_call', 'reasoning', or another Responses input item type "
        "(see agentflow.agent.item_checks.ITEM_TYPES)",
        source=source,
    )


def _check_message(item: Mapping[str, Any], index: int, source: str) -> tuple[tuple[str, ...], str | None]:
    role = item.get("role")
    if not isinstance(role, str) or role not in MESSAGE_ROLES:
        raise HistoryError(
            index,
            f"unknown message role {role!r}: one of 'user', 'assistant', 'system', 'developer', or 'tool' "
            "(a Chat tool result)",
            source=source,
        )
    content = item.get("content")
    if role == "tool":
        call_id = _call_id(item, "tool_call_id", "tool message", index, source)
        if not isinstance(content, str):
            _check_parts(content, index, source, "a tool message's 'content'")
        return (), call_id
    if role == "assistant":
        if content is not None and not isinstance(content, str):
            _check_parts(content, index, source, "a message's 'content'")
        return _chat_calls(item.get("tool_calls"), index, source), None
    if not isinstance(content, str):
        _check_parts(content, index, source, f"a {role} message's 'content'")
    return (), None


def _chat_calls(raw: Any, index: int, source: str) -> tuple[str, ...]:
    """The ids of a Chat assistant item's ``tool_calls`` (function and custom calls), each checked."""
    if raw is None:
        return ()
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise HistoryError(index, f"'tool_calls' must be a list, got {type(raw).__name__}", source=source)
    ids: list[str] = []
    for position, entry in enumerate(raw):
        where = f"tool call {position}"
        if not isinstance(entry, Mapping):
            raise HistoryError(index, f"{where} must be an object, got {entry!r:.80}", source=source)
        call_id = entry.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise HistoryError(index, f"{where} needs a non-empty string 'id'", source=source)
        body_key = "custom" if entry.get("type") == "custom" else "function"
        body = entry.get(body_key)
        if not isinstance(body, Mapping) or not isinstance(body.get("name"), str) or not body["name"]:
            raise HistoryError(
                index, f"{where} needs a {body_key!r} object with a non-empty 'name'", source=source
            )
        ids.append(call_id)
    return tuple(ids)


def _call_id(item: Mapping[str, Any], key: str, what: str, index: int, source: str) -> str:
    call_id = item.get(key)
    if not isinstance(call_id, str) or not call_id:
        raise HistoryError(index, f"a {what} needs a non-empty string {key!r}", source=source)
    return call_id


def _check_parts(content: Any, index: int, source: str, what: str) -> None:
    """``content``: a list of parts, each an object with a string ``type``, text parts with a string ``text``.

    Only what every server refuses: which part types a protocol carries is its conversion's to say."""
    if not isinstance(content, Sequence) or isinstance(content, str | bytes):
        raise HistoryError(
            index, f"{what} must be a string or a list of parts, got {type(content).__name__}", source=source
        )
    for position, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if not isinstance(kind, str):
            raise HistoryError(
                index,
                f"part {position} of {what} must be an object with a string 'type', got {part!r:.80}",
                source=source,
            )
        if kind in _TEXT_PARTS and not isinstance(part.get("text"), str):
            raise HistoryError(
                index, f"part {position} of {what} is a {kind} part without a string 'text'", source=source
            )
