"""Memory items: plain JSON-able dicts in the OpenAI Responses item shape, and their conversions.

A conversation is a sequence of items. An item is either a dict in the Responses item shape (what the
constructors below build, and what the Responses API returns as output items) or an agentflow ``Message``.
This module is where the item API is imported from; it holds no code of its own, and re-exports five
modules, one job each: ``item_shapes`` builds items (``Message`` values too: ``message_to_item``) and
classifies them (for pair-aware memory trimming), ``chat_items`` converts a conversation for Chat Completions
(``to_chat_messages``), ``responses_items`` for Responses (``to_responses_input``), ``item_json`` stores
one as JSON (``dump_items`` / ``load_items``), and ``item_checks`` checks one where it enters a run
(``check_items``, ``HistoryError``: ``load_items``, ``history=`` and a session store's load call it).

``to_chat_messages`` is also the typed, read-only view of a conversation, whichever protocol wrote it:
``UserMessage``, ``AiMessage`` (its text, ``tool_calls`` and Chat reasoning), ``ToolResultMessage``…
(Responses ``reasoning`` items are skipped; hosted tool calls, which have no such form, raise).

Pure functions only: no I/O, no awaits. Nothing is silently dropped: an item that has no form on the target
protocol raises ``TypeError`` (not an item at all) or ``ValueError`` (an item this protocol cannot carry),
naming the item's position. Documented exceptions: reasoning goes back only in the form the protocol that
made it takes (``reasoning`` items, from Responses, are skipped on Chat Completions, and a Chat assistant
item's ``reasoning_content`` / ``reasoning`` text is left out on Responses), and so do a Chat server's
provider fields (OpenRouter's ``reasoning_details``, Gemini's per-call ``extra_content``) and a Chat user
message's ``name`` (all left out on Responses).

A GPT-5 custom tool call is kept in the shape of the protocol that made it (a Chat ``tool_calls`` entry
``{"type": "custom", "custom": {"name", "input"}}``, or a Responses ``custom_tool_call`` item); its result
is a ``function_call_output`` like any other, which Responses gets as a ``custom_tool_call_output``.

A Chat assistant item keeps its reasoning under the key the server sent it in (``reasoning_content`` from
DeepSeek, ``reasoning`` from OpenRouter or Groq), so the next Chat request sends it back under that name —
DeepSeek's thinking mode answers 400 without it — and a server that never sent one (OpenAI) never gets one.

Where this differs from the reference's ``AgentInputItem`` shapes, on purpose, so that every item built
here is also valid Responses input: assistant text is an ``output_text`` part (the Responses API rejects
``input_text`` on assistant messages), and an image part's ``image_url`` is the URL string.

>>> to_chat_messages([system_item("Be brief."), user_item("hi")])
[SystemMessage(text='Be brief.'), UserMessage(content='hi', name=None)]
"""

from __future__ import annotations

from .chat_items import ChatMessageCache, to_chat_messages
from .item_checks import HistoryError, check_items
from .item_json import dump_items, load_items
from .item_shapes import MAPPINGS as MAPPINGS  # imported from here too, though not in ``__all__``
from .item_shapes import (
    NOTE_ROLES,
    RUNTIME_NOTE_PREFIXES,
    Item,
    NoteRole,
    assistant_item,
    check_note_role,
    developer_item,
    function_call_item,
    function_call_output_item,
    is_model_output_item,
    is_runtime_note,
    is_system_item,
    is_tool_output_item,
    item_text,
    message_item,
    message_to_item,
    system_item,
    to_items,
    tool_call_ids,
    tool_output_call_id,
    user_item,
    with_call_ids,
)
from .item_shapes import is_user_item as is_user_item  # likewise
from .responses_items import to_responses_input

__all__ = [
    "NOTE_ROLES",
    "RUNTIME_NOTE_PREFIXES",
    "ChatMessageCache",
    "HistoryError",
    "Item",
    "NoteRole",
    "assistant_item",
    "check_items",
    "check_note_role",
    "developer_item",
    "dump_items",
    "function_call_item",
    "function_call_output_item",
    "is_model_output_item",
    "is_runtime_note",
    "is_system_item",
    "is_tool_output_item",
    "item_text",
    "load_items",
    "message_item",
    "message_to_item",
    "system_item",
    "to_chat_messages",
    "to_items",
    "to_responses_input",
    "tool_call_ids",
    "tool_output_call_id",
    "user_item",
    "with_call_ids",
]
