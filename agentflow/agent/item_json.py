"""A conversation as JSON: ``dump_items`` / ``load_items``, to keep a memory's items between processes.

The stored form is a JSON array of the items themselves, nothing added: every item kind a run writes (user
messages with images, assistant turns with their Chat reasoning and provider fields, Responses ``reasoning``
items with their ``encrypted_content``, function calls and custom calls in either protocol's shape, tool
results and ``TOOL_ERROR`` texts, system items) is already a JSON-ready dict, kept field for field.
``Message`` values become the item they stand for (``message_to_item``), so the requests a reloaded
conversation makes are the ones it made before. Integers beyond 64 bits keep every digit
(``agentflow.exact_json``).

``load_items`` checks the conversation it reads (``check_items``: an orphan tool output, an unknown item type
or role… is a ``HistoryError`` naming the item, not a provider's 400 at the next run's first model call); a
tool call left without its output is let through, since the next run answers it.

Pure functions only: no I/O (reading and writing the bytes, to a file or a database, is the caller's part).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .. import exact_json
from .item_checks import check_items
from .item_shapes import _MESSAGE_TYPES, Item, message_to_item

__all__ = ["dump_items", "load_items"]


def dump_items(items: Iterable[Item]) -> bytes:
    """A conversation's items as JSON bytes (a JSON array), for ``load_items`` to read back.

    Item dicts are written as they are; ``Message`` values as their items (``message_to_item``). Anything
    else, or a value inside an item that JSON cannot hold, raises ``TypeError``.

    >>> from agentflow.agent.items import user_item
    >>> from agentflow.model.messages import AiMessage
    >>> dump_items([user_item("2+2?"), AiMessage("4", reasoning="easy", reasoning_field="reasoning_content")])
    ... # doctest: +NORMALIZE_WHITESPACE
    b'[{"type":"message","role":"user","content":[{"type":"input_text","text":"2+2?"}]},\
{"type":"message","role":"assistant","content":[{"type":"output_text","text":"4"}],"reasoning_content":"easy"}]'
    """
    out: list[Any] = []
    for index, item in enumerate(items):
        if type(item) is dict:
            out.append(item)
        elif isinstance(item, _MESSAGE_TYPES):
            out.append(message_to_item(item))
        elif isinstance(item, Mapping):
            out.append(dict(item))
        else:
            raise TypeError(
                f"dump_items: item {index} is a {type(item).__name__}; items are dicts or Message values"
            )
    try:
        return exact_json.dumps(out, default=_mapping)
    except TypeError as exc:  # orjson's JSONEncodeError, whose message does not say which item
        raise TypeError(f"dump_items: the items cannot be written as JSON: {exc}") from exc


def _mapping(value: Any) -> Any:
    """orjson's ``default``: a mapping that is not a ``dict`` (a ``MappingProxyType``…) as one."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def load_items(data: bytes | str, *, check: bool = True) -> list[dict[str, Any]]:
    """The items ``dump_items`` wrote (a JSON array of item objects), ready for ``history=`` or
    ``InMemoryMemory(items)``.

    Raises ``ValueError`` when ``data`` is not JSON (``orjson.JSONDecodeError``) or not an array of objects,
    and ``HistoryError`` (a ``ValueError``) for a conversation no provider would take (``check_items``: an
    orphan tool output, one before its call, an unknown item type or message role…), naming the item. A tool
    call without its output passes: the next run answers it with a synthetic ``cancelled`` result.
    ``check=False`` reads any array of objects (a piece of a conversation, to be joined to the rest and
    checked whole with ``check_items``).

    >>> load_items(b'[{"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},'
    ...            b' {"type": "function_call_output", "call_id": "c1", "output": "42"}]')[1]
    {'type': 'function_call_output', 'call_id': 'c1', 'output': '42'}
    >>> load_items(b'[{"type": "function_call_output", "call_id": "c1", "output": "42"}]')
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    agentflow.agent.item_checks.HistoryError: load_items item 0: a function_call_output answers call 'c1', ...
    """
    if not isinstance(data, bytes | bytearray | memoryview | str):
        raise TypeError(f"load_items takes JSON bytes or text, got {type(data).__name__}")
    value = exact_json.loads(bytes(data) if isinstance(data, bytearray | memoryview) else data)
    if not isinstance(value, list):
        raise ValueError(f"load_items: expected a JSON array of items, got a JSON {type(value).__name__}")
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise ValueError(f"load_items: item {index} is not a JSON object: {item!r:.80}")
    if check:
        check_items(value, source="load_items")
    return value
