"""A conversation is checked where it enters — ``load_items``, ``history=``, a session store's load — so a
mistake is a ``HistoryError`` naming the item before any model call, not a provider's 400 at the first one.
What a run repairs (a tool call left without its output) is let through, in either protocol's shape."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from agentflow.agent.agent import Agent
from agentflow.agent.item_checks import ITEM_TYPES, HistoryError, check_items
from agentflow.agent.items import (
    assistant_item,
    dump_items,
    function_call_item,
    function_call_output_item,
    load_items,
    system_item,
    user_item,
)
from agentflow.agent.memory import InMemoryMemory
from agentflow.agent.sqlite_store import SQLiteStore
from agentflow.agent.stores import InMemoryStore, SessionStoreError, decode_items, encode_item
from agentflow.model.messages import AiMessage, ToolCall, ToolResultMessage, UserMessage
from agentflow.testing.fake import FakeModelClient, reply


def call(call_id: str, name: str = "f") -> dict[str, Any]:
    return function_call_item(call_id, name, "{}")


def output(call_id: str, text: str = "42") -> dict[str, Any]:
    return function_call_output_item(call_id, text)


def chat_call(call_id: str) -> dict[str, Any]:
    return assistant_item("", [ToolCall(call_id, "f", "{}")])


def chat_output(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "42"}


# --- what is refused -------------------------------------------------------------------------------------

REFUSED: list[tuple[str, list[Any], int, str]] = [
    ("orphan output", [user_item("q"), output("c1")], 1, "which no item of the conversation makes"),
    ("orphan Chat tool message", [user_item("q"), chat_output("c1")], 1, "orphan tool output"),
    ("output before its call", [user_item("q"), output("c1"), call("c1")], 1, "comes after it (item 2)"),
    (
        "Chat output before its call",
        [chat_output("c1"), chat_call("c1")],
        0,
        "goes after its call",
    ),
    ("second output", [call("c1"), output("c1"), output("c1")], 2, "a second time (item 1 answered it)"),
    (
        "unknown item type",
        [user_item("q"), {"type": "function_call_ouput", "call_id": "c1"}],
        1,
        "unknown item",
    ),
    ("type not a string", [{"type": 3, "role": "user", "content": "q"}], 0, "needs a string 'type'"),
    ("no type nor role", [{"content": "q"}], 0, "got keys ['content']"),
    ("unknown role", [{"role": "robot", "content": "hi"}], 0, "unknown message role 'robot'"),
    ("message without role", [{"type": "message", "content": "hi"}], 0, "unknown message role None"),
    ("user content missing", [{"role": "user"}], 0, "must be a string or a list of parts"),
    ("part without type", [{"role": "user", "content": [{"text": "hi"}]}], 0, "string 'type'"),
    ("text part without text", [{"role": "user", "content": [{"type": "input_text"}]}], 0, "string 'text'"),
    ("call without call_id", [{"type": "function_call", "name": "f", "arguments": "{}"}], 0, "'call_id'"),
    ("call without name", [{"type": "function_call", "call_id": "c1", "arguments": "{}"}], 0, "'name'"),
    ("output without call_id", [call("c1"), {"type": "function_call_output", "output": "x"}], 1, "'call_id'"),
    ("output not text", [call("c1"), {**output("c1"), "output": 42}], 1, "'output' must be a string"),
    ("Chat call without id", [{"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}], 0, "'id'"),
    ("Chat call without name", [{"role": "assistant", "tool_calls": [{"id": "c1"}]}], 0, "'function' object"),
    ("Chat tool without id", [chat_call("c1"), {"role": "tool", "content": "x"}], 1, "'tool_call_id'"),
    ("ToolResultMessage orphan", [UserMessage("q"), ToolResultMessage("c9", "x")], 1, "ToolResultMessage"),
    ("AiMessage call without id", [AiMessage(None, [ToolCall("", "f", "{}")])], 0, "non-empty ids"),
    ("ToolResultMessage without id", [ToolResultMessage("", "x")], 0, "non-empty call_id"),
]


@pytest.mark.parametrize(
    ("items", "index", "message"), [case[1:] for case in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_check_items_names_the_item_and_what_is_wrong(items: list[Any], index: int, message: str) -> None:
    with pytest.raises(HistoryError, match=rf"^history item {index}: .*{_escaped(message)}") as caught:
        check_items(items)
    assert caught.value.index == index
    assert isinstance(caught.value, ValueError)


def _escaped(text: str) -> str:
    return re.escape(text)


def test_load_items_refuses_a_conversation_no_provider_takes() -> None:
    data = dump_items([user_item("q"), assistant_item("a"), output("c1")])
    with pytest.raises(HistoryError, match=r"^load_items item 2: a function_call_output answers call 'c1'"):
        load_items(data)
    with pytest.raises(HistoryError, match="unknown message role 'robot'"):
        load_items(b'[{"role": "robot", "content": "beep"}]')


def test_load_items_check_false_reads_a_piece_of_a_conversation() -> None:
    # One run's items stored apart: its input answers a call an earlier piece holds.
    piece = dump_items([output("c1"), assistant_item("done")])
    assert load_items(piece, check=False) == [output("c1"), assistant_item("done")]
    with pytest.raises(HistoryError):
        load_items(piece)
    check_items([call("c1"), *load_items(piece, check=False)])


async def test_history_is_refused_before_any_model_call() -> None:
    model = FakeModelClient([reply("never")])
    agent = Agent(model)
    with pytest.raises(HistoryError, match=r"^history item 1: .*orphan tool output"):
        await agent.run("q", history=[user_item("a"), output("c1")])
    with pytest.raises(HistoryError, match=r"^history item 0: unknown message role 'bot'"):
        agent.stream("q", history=[{"role": "bot", "content": "x"}])
    assert model.prompts == []


def test_run_sync_checks_history_too() -> None:
    model = FakeModelClient([reply("never")])
    with pytest.raises(HistoryError, match="ToolResultMessage answers call 'c2'"):
        Agent(model).run_sync("q", history=[AiMessage("hi"), ToolResultMessage("c2", "x")])
    assert model.prompts == []


# --- what is let through ---------------------------------------------------------------------------------

ACCEPTED: list[tuple[str, list[Any]]] = [
    ("Responses call and output", [user_item("q"), call("c1"), output("c1"), assistant_item("a")]),
    ("Chat call and tool message", [user_item("q"), chat_call("c1"), chat_output("c1")]),
    ("Chat call, Responses output", [chat_call("c1"), output("c1")]),
    ("trailing call without output", [user_item("q"), call("c1")]),
    ("call without output mid-conversation", [call("c1"), user_item("next"), assistant_item("a")]),
    ("parallel calls, outputs in any order", [call("c1"), call("c2"), output("c2"), output("c1")]),
    ("an id reused in a later turn", [call("call_0"), output("call_0"), call("call_0"), output("call_0")]),
    (
        "custom call answered as the runtime writes it",
        [{"type": "custom_tool_call", "call_id": "c1", "name": "sql", "input": "SELECT 1"}, output("c1")],
    ),
    (
        "Chat custom call",
        [{"role": "assistant", "tool_calls": [{"id": "c1", "type": "custom", "custom": {"name": "sql"}}]}],
    ),
    (
        "Message values",
        [UserMessage("q"), AiMessage(None, [ToolCall("c1", "f", "{}")]), ToolResultMessage("c1", "x")],
    ),
    (
        "a Responses answer as the server sent it",
        [
            system_item("sys"),
            user_item("see", ["https://x/cat.png"]),
            {"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAA", "summary": []},
            {"id": "ws_1", "type": "web_search_call", "status": "completed", "action": {"query": "q"}},
            {"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": [{"type": "input_text", "text": "x"}],
            },
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": "é", "annotations": []},
                    {"type": "refusal", "refusal": "no"},
                ],
            },
        ],
    ),
    (
        "a server item of a type added later",
        [{"id": "x_1", "type": "tool_search_call", "status": "completed"}],
    ),
    (
        "Chat reasoning and provider fields",
        [{**assistant_item("a"), "reasoning_content": "r", "reasoning_details": []}],
    ),
    (
        "string content",
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "tool_calls": []}],
    ),
]


@pytest.mark.parametrize("items", [case[1] for case in ACCEPTED], ids=[case[0] for case in ACCEPTED])
def test_what_a_run_writes_or_repairs_is_let_through(items: list[Any]) -> None:
    check_items(items)
    dicts = [item for item in items if isinstance(item, Mapping)]
    if len(dicts) == len(items):
        assert load_items(dump_items(items)) == items


def test_the_responses_input_item_types_are_known() -> None:
    assert {"message", "function_call", "function_call_output", "reasoning", "item_reference"} <= ITEM_TYPES


async def test_a_run_still_answers_a_call_the_history_left_open() -> None:
    model = FakeModelClient([reply("done")])
    history = load_items(dump_items([user_item("go"), call("c1")]))
    result = await Agent(model).run("again", history=history)
    assert [item.get("type") for item in result.new_items] == ["function_call_output", "message", "message"]
    assert result.new_items[0]["output"].startswith('TOOL_ERROR: {"errorType":"cancelled"')


async def test_the_input_may_answer_the_call_the_history_left_open() -> None:
    # A person answering a call the stored conversation ends with (an approval, say): no synthetic result.
    model = FakeModelClient([reply("thanks")])
    result = await Agent(model).run([output("c1", "approved")], history=[user_item("go"), call("c1")])
    assert [item.get("type") for item in model.prompts[0].items] == [
        "message",
        "function_call",
        "function_call_output",
    ]
    assert result.new_items[0] == output("c1", "approved")


# --- a session store's load ------------------------------------------------------------------------------


class ListStore:
    """A store of its own that hands back plain lists (no ``decode_items``)."""

    def __init__(self, items: Sequence[Any]) -> None:
        self.items = list(items)

    async def load(self, session_id: str) -> list[Any]:
        return list(self.items)

    async def append(self, session_id: str, items: Sequence[Any], *, start: int | None = None) -> None:
        self.items.extend(items)

    async def clear(self, session_id: str) -> None:
        self.items.clear()


@pytest.mark.parametrize("kind", ["memory", "sqlite", "list"])
async def test_a_stored_conversation_is_checked_when_a_session_loads_it(kind: str) -> None:
    bad = [user_item("q"), assistant_item("a"), output("c7")]
    store: Any
    if kind == "list":
        store = ListStore(bad)
    else:
        store = InMemoryStore() if kind == "memory" else SQLiteStore(":memory:")
        await store.append("s1", bad)  # a store takes what it is given: it is no judge of conversations
    model = FakeModelClient([reply("never")])
    session = Agent(model).session(InMemoryMemory([system_item("seed")]), session_id="s1", store=store)
    try:
        with pytest.raises(SessionStoreError, match=r"stored item 2: .*fix that item in the store") as caught:
            await session.run("q2")
    finally:
        if kind == "sqlite":
            store.close()
    assert caught.value.operation == "load"
    assert isinstance(caught.value.__cause__, HistoryError)
    assert caught.value.__cause__.index == 2
    assert model.prompts == []
    assert [item["role"] for item in session.items] == ["system"]  # memory untouched


def test_decode_items_leaves_the_check_to_the_session() -> None:
    # Rows are read whole and checked once, by the session: the store's own helper does not check twice.
    assert decode_items([encode_item(output("c1"))]) == [output("c1")]


def test_a_stored_row_nested_too_deeply_to_read_among_the_others_is_named() -> None:
    # It parses alone (1024 levels, orjson's limit), not inside the array the rows are read in.
    deep = b'{"a":' + b"[" * 1023 + b"]" * 1023 + b"}"
    with pytest.raises(HistoryError, match="nests too deeply") as caught:
        decode_items([encode_item(output("c1")), deep])
    assert (caught.value.index, caught.value.source) == (1, "stored")


async def test_a_stored_row_that_is_not_json_is_named_and_said_to_need_mending(tmp_path: Any) -> None:
    store = SQLiteStore(tmp_path / "chats.db")
    await store.append("s1", [user_item("q"), assistant_item("a")])
    connection = store._connect()  # a row corrupted outside agentflow
    connection.execute("UPDATE agentflow_session_items SET item = ? WHERE seq = 1", (b'{"type":',))
    model = FakeModelClient([reply("never")])
    try:
        with pytest.raises(SessionStoreError, match=r"stored item 1: is not valid JSON.*fix") as caught:
            await Agent(model).session(session_id="s1", store=store).run("q2")
    finally:
        store.close()
    assert isinstance(caught.value.__cause__, HistoryError)
    assert "the next turn loads again" not in str(caught.value)  # it would fail the same way
    assert model.prompts == []
