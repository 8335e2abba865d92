"""Memory: the in-memory default and the pair-aware window (examples, then a property test)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentflow.agent.items import (
    assistant_item,
    function_call_item,
    function_call_output_item,
    is_model_output_item,
    is_system_item,
    is_user_item,
    system_item,
    tool_call_ids,
    tool_output_call_id,
    user_item,
)
from agentflow.agent.memory import InMemoryMemory, Memory, WindowedMemory
from agentflow.model.messages import AiMessage, SystemMessage, ToolCall, ToolResultMessage, UserMessage


def _items(memory: InMemoryMemory) -> tuple[Any, ...]:
    return memory.items  # a call, so that mypy does not narrow the property between assertions


def _reasoning(n: int) -> dict[str, Any]:
    return {"type": "reasoning", "id": f"rs_{n}", "encrypted_content": "gAAA", "summary": []}


# --- InMemoryMemory -------------------------------------------------------------------------------


def test_in_memory_memory_keeps_every_item_in_order() -> None:
    memory = InMemoryMemory()
    assert isinstance(memory, Memory)
    memory.add(user_item("a"))
    memory.extend([assistant_item("b"), UserMessage("c")])
    assert _items(memory) == (user_item("a"), assistant_item("b"), UserMessage("c"))
    assert len(memory) == 3


def test_memory_items_is_a_snapshot() -> None:
    memory = InMemoryMemory([user_item("a")])
    before = memory.items
    memory.add(user_item("b"))
    assert before == (user_item("a"),)


def test_memory_snapshot_and_restore_roll_back() -> None:
    memory = InMemoryMemory([user_item("a")])
    saved = memory.snapshot()
    memory.extend([user_item("b"), user_item("c")])
    memory.restore(saved)
    assert memory.snapshot() == (user_item("a"),)
    memory.clear()
    assert len(memory) == 0


def test_memory_rejects_what_is_not_an_item_and_adds_nothing() -> None:
    memory = InMemoryMemory()
    with pytest.raises(TypeError, match="user_item"):
        memory.add("hello")
    with pytest.raises(TypeError):
        memory.extend([user_item("a"), 42])
    assert _items(memory) == ()


# --- WindowedMemory examples ----------------------------------------------------------------------


def test_windowed_memory_needs_a_positive_size() -> None:
    with pytest.raises(ValueError, match="max_items"):
        WindowedMemory(0)


def test_windowed_memory_keeps_the_last_items_and_leading_system_items() -> None:
    memory = WindowedMemory(2, [system_item("s"), SystemMessage("s2")])
    for n in range(5):
        memory.add(user_item(str(n)))
    assert _items(memory) == (system_item("s"), SystemMessage("s2"), user_item("3"), user_item("4"))


def test_windowed_memory_trims_system_items_written_later_like_any_other() -> None:
    # CodeAct writes each step's CODE_RESULT, DeepResearch each re-plan, as system items mid-conversation:
    # a cut that brings one to the front must not pin it, or memory grows without bound.
    memory = WindowedMemory(3, [system_item("instructions")])
    for n in range(10):
        memory.extend([assistant_item(f"code {n}"), system_item(f"CODE_RESULT: {n}")])
    assert len(memory) <= 4
    assert _items(memory)[0] == system_item("instructions")
    assert system_item("CODE_RESULT: 0") not in _items(memory)
    memory.clear()
    memory.extend([system_item("new instructions"), user_item("q")])
    for n in range(5):
        memory.add(user_item(str(n)))
    assert _items(memory)[0] == system_item("new instructions")  # pinned anew after clear()


def test_windowed_memory_drops_a_whole_tool_turn_rather_than_orphan_an_output() -> None:
    memory = WindowedMemory(3)
    memory.extend(
        [
            user_item("q"),
            assistant_item(None, [ToolCall("c1", "f", "{}"), ToolCall("c2", "g", "{}")]),
            function_call_output_item("c1", "1"),
            function_call_output_item("c2", "2"),
            assistant_item("done"),
        ]
    )
    # The last three items would start at the "c2" output; the first valid start after it is "done". The
    # question stays ahead of the window.
    assert _items(memory) == (user_item("q"), assistant_item("done"))


def test_windowed_memory_keeps_more_than_max_items_when_a_turn_cannot_be_cut() -> None:
    memory = WindowedMemory(2)
    turn = [assistant_item(None, [ToolCall("c1", "f", "{}"), ToolCall("c2", "g", "{}")])]
    memory.extend(
        [user_item("q"), *turn, function_call_output_item("c1", "1"), function_call_output_item("c2", "2")]
    )
    assert _items(memory) == (
        user_item("q"),
        *turn,
        function_call_output_item("c1", "1"),
        function_call_output_item("c2", "2"),
    )


def test_windowed_memory_keeps_a_pending_call_until_its_output_arrives() -> None:
    memory = WindowedMemory(1)
    memory.add(user_item("q"))
    memory.add(function_call_item("c1", "f", "{}"))
    assert _items(memory) == (user_item("q"), function_call_item("c1", "f", "{}"))
    memory.add(function_call_output_item("c1", "x"))
    call, output = function_call_item("c1", "f", "{}"), function_call_output_item("c1", "x")
    assert _items(memory) == (user_item("q"), call, output)
    memory.add(user_item("next"))
    assert _items(memory) == (user_item("next"),)


def test_windowed_memory_keeps_reasoning_with_the_calls_it_produced() -> None:
    memory = WindowedMemory(3)
    turn = [_reasoning(1), function_call_item("c1", "f", "{}")]
    memory.extend([user_item("q"), *turn, function_call_output_item("c1", "x")])
    assert _items(memory) == (user_item("q"), *turn, function_call_output_item("c1", "x"))
    memory.add(assistant_item("answer"))
    # Starting at the function_call would strand it without its reasoning item; the whole turn goes instead.
    assert _items(memory) == (user_item("q"), assistant_item("answer"))


def test_windowed_memory_pairs_reused_call_ids_with_the_latest_call() -> None:
    memory = WindowedMemory(3)
    memory.extend(
        [
            function_call_item("call_0", "f", "{}"),
            function_call_output_item("call_0", "a"),
            user_item("again"),
            function_call_item("call_0", "f", "{}"),
            function_call_output_item("call_0", "b"),
        ]
    )
    assert _items(memory) == (
        user_item("again"),
        function_call_item("call_0", "f", "{}"),
        function_call_output_item("call_0", "b"),
    )


def test_windowed_memory_handles_message_values() -> None:
    memory = WindowedMemory(2)
    call_turn = AiMessage(tool_calls=[ToolCall("c1", "f", "{}")])
    memory.extend([UserMessage("q"), call_turn, ToolResultMessage("c1", "x")])
    assert _items(memory) == (UserMessage("q"), call_turn, ToolResultMessage("c1", "x"))
    memory.add(AiMessage("done"))
    assert _items(memory) == (UserMessage("q"), AiMessage("done"))


def test_windowed_memory_keeps_the_question_of_a_long_tool_loop() -> None:
    memory = WindowedMemory(4, [system_item("s")])
    memory.extend([user_item("old question"), assistant_item("old answer"), user_item("question")])
    for n in range(10):
        memory.extend([function_call_item(f"c{n}", "f", "{}"), function_call_output_item(f"c{n}", str(n))])
    assert _items(memory) == (
        system_item("s"),
        user_item("question"),
        function_call_item("c9", "f", "{}"),
        function_call_output_item("c9", "9"),
    )
    memory.extend([user_item("next question"), assistant_item("answer")])  # a newer question replaces it
    assert user_item("question") not in _items(memory)
    assert _items(memory)[-2:] == (user_item("next question"), assistant_item("answer"))


# --- the property: any window keeps every tool call with its outputs ------------------------------


@st.composite
def conversations(draw: st.DrawFn) -> list[Any]:
    """A valid conversation: system items, then turns of user input and model steps with tool calls whose
    outputs follow (in any order), in the dict, Chat-memory and Message shapes."""
    items: list[Any] = [system_item(f"s{n}") for n in range(draw(st.integers(0, 2)))]
    counter = 0
    for _turn in range(draw(st.integers(1, 5))):
        items.append(user_item("q") if draw(st.booleans()) else UserMessage("q"))
        for _step in range(draw(st.integers(0, 3))):
            n_calls = draw(st.integers(0, 3))
            ids = [f"call_{counter + k}" if draw(st.booleans()) else f"call_{k}" for k in range(n_calls)]
            counter += n_calls
            calls = [ToolCall(i, "f", "{}") for i in ids]
            shape = draw(st.sampled_from(["responses", "chat", "message"]))
            if draw(st.booleans()):
                items.append(_reasoning(counter))
            if shape == "responses":
                if draw(st.booleans()):
                    items.append(assistant_item("thinking aloud"))
                items.extend(function_call_item(c.id, c.name, c.arguments) for c in calls)
            elif shape == "chat":
                items.append(assistant_item("text" if draw(st.booleans()) else None, calls))
            else:
                items.append(AiMessage("text", tool_calls=calls))
            order = draw(st.permutations(calls))
            for call in order:
                if shape == "message":
                    items.append(ToolResultMessage(call.id, "out"))
                else:
                    items.append(function_call_output_item(call.id, "out"))
        items.append(assistant_item("final"))
    return items


def _pairs(items: list[Any]) -> dict[int, list[int]]:
    """Each calling item's output indices (an output answers the latest earlier call of its id)."""
    latest: dict[str, int] = {}
    owners: dict[int, list[int]] = {}
    for index, item in enumerate(items):
        for call_id in tool_call_ids(item):
            latest[call_id] = index
            owners.setdefault(index, [])
        answered = tool_output_call_id(item)
        if answered is not None:
            owners[latest[answered]].append(index)
    return owners


def _valid_start(seen: list[Any], pinned: int, start: int) -> bool:
    """Whether a window made of the pinned items and ``seen[start:]`` is a valid conversation."""
    if start == pinned:
        return True
    if tool_output_call_id(seen[start]) is not None:
        return False
    if is_model_output_item(seen[start - 1]) and is_model_output_item(seen[start]):
        return False
    for caller, outputs in _pairs(seen).items():
        if caller < start and (not outputs or any(o >= start for o in outputs)):
            return False
    return True


def _best_start(seen: list[Any], pinned: int, room: int) -> int:
    """The start of the longest valid window within ``room`` items; the shortest one over it if none is."""
    wanted = max(pinned, len(seen) - room)
    within = [s for s in range(wanted, len(seen)) if _valid_start(seen, pinned, s)]
    if within:
        return within[0]
    return max((s for s in range(pinned, wanted) if _valid_start(seen, pinned, s)), default=pinned)


@settings(max_examples=300, deadline=None)
@given(history=conversations(), max_items=st.integers(1, 8), one_by_one=st.booleans())
def test_any_window_keeps_tool_calls_and_outputs_together(
    history: list[Any], max_items: int, one_by_one: bool
) -> None:
    memory = WindowedMemory(max_items)
    pinned = 0
    while pinned < len(history) and is_system_item(history[pinned]):
        pinned += 1
    steps = range(1, len(history) + 1) if one_by_one else [len(history)]
    written = 0
    for upto in steps:
        memory.extend(history[written:upto])
        written = upto
        seen = history[:upto]
        window = list(memory.items)
        fixed = min(pinned, upto)
        # Leading system items stay; the rest is a suffix of what was written, after the latest question
        # before it when a cut passed that question (a newer question may have come since).
        assert window[:fixed] == seen[:fixed]
        tail = window[fixed:]
        start = len(seen) - len(tail)
        if seen[start:] != tail:
            start += 1
            assert seen[start:] == tail[1:], "the window is not a suffix, even after a kept question"
            before = max(i for i in range(fixed, start) if is_user_item(seen[i]))
            assert tail[0] is seen[before], "what is kept ahead of the window is not the latest question"
        latest = max((i for i in range(fixed, len(seen)) if is_user_item(seen[i])), default=None)
        assert latest is None or any(x is seen[latest] for x in window), "the latest question was dropped"
        assert _valid_start(seen, fixed, start), "the window is not a valid conversation"
        # Every call in the window has all its outputs, every output its call; pending calls are kept.
        for caller, outputs in _pairs(seen).items():
            kept = caller >= start
            assert all((o >= start) == kept for o in outputs), "a tool call was separated from its output"
            if not outputs:
                assert kept, "a call still waiting for its output was dropped"
        if one_by_one:
            continue  # what is kept ahead depends on when the cuts came
        # Written at once, the window is the longest valid one within max_items (one place less when it keeps
        # the question ahead), and goes over only when none exists.
        expected = list(seen)
        if len(seen) - fixed > max_items:
            begin = _best_start(seen, fixed, max_items)
            ahead = []
            if latest is not None and latest < begin:
                begin = max(begin, _best_start(seen, fixed, max_items - 1))
                ahead = [seen[latest]]
            expected = [*seen[:fixed], *ahead, *seen[begin:]]
        assert window == expected
