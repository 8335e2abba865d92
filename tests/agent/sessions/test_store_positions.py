"""``StorePosition``: the ``start`` of an append that names the generation it was counted in. The stores
refuse one of another generation (the session was cleared since), and check a plain count as they always
did."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from session_store_support import texts

from agentflow import InMemoryStore, SessionStore, SQLiteStore
from agentflow.agent.items import user_item
from agentflow.agent.stores import StoreConflict, StoredItems, StorePosition, check_append


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    if request.param == "memory":
        yield InMemoryStore()
    else:
        async with SQLiteStore(tmp_path / "chats.db") as sqlite:
            yield sqlite


async def test_positions_of_another_generation_conflict_and_plain_counts_are_checked_as_before(
    store: SessionStore,
) -> None:
    await store.append("u", [user_item("one")], start=StorePosition(0, generation=0))
    # A lost reply, sent again: written once.
    await store.append("u", [user_item("one")], start=StorePosition(0, generation=0))
    await store.clear("u")
    await store.append("u", [user_item("two")], start=0)  # a caller without generations: its count is right
    with pytest.raises(StoreConflict) as caught:
        await store.append("u", [user_item("three")], start=StorePosition(1, generation=0))
    assert caught.value.cleared
    await store.append("u", [user_item("three")], start=StorePosition(1, generation=1))
    assert texts(await store.load("u")) == ["user:two", "user:three"]


async def test_a_load_is_stored_items_equal_to_the_plain_list(store: SessionStore) -> None:
    await store.append("u", [user_item("one")])
    loaded = await store.load("u")
    assert isinstance(loaded, StoredItems)
    assert loaded == [user_item("one")]


def test_a_position_is_its_count_to_code_that_knows_no_generations() -> None:
    start = StorePosition(3, generation=7)
    assert start == 3
    assert f"{start}" == str(start) == "3"
    assert [0, 1, 2, 3, 4][start:] == [3, 4]
    assert check_append("s", [b"{}"], start, 3, lambda: [b"x"]) == 0  # a store without generations
    assert check_append("s", [b"{}"], start, 3, lambda: [b"x"], generation=7) == 0
    with pytest.raises(StoreConflict, match="cleared"):
        check_append("s", [b"{}"], start, 3, lambda: [b"x"], generation=8)
    # A plain count, from a caller that read no generation, is checked by its count alone.
    assert check_append("s", [b"{}"], 3, 3, lambda: [b"x"], generation=8) == 0
