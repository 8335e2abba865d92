"""``noting_waits``: awaiting a coroutine step by step in the same task and a context of its own, noticing
each wait."""

from __future__ import annotations

import asyncio
import contextlib
from contextvars import ContextVar, copy_context
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentflow.tools.suspension import noting_waits


async def test_a_coroutine_that_never_waits_is_not_noticed() -> None:
    waits: list[int] = []

    async def quick() -> int:
        return 7

    assert await noting_waits(quick(), lambda: waits.append(1), copy_context()) == 7
    assert waits == []


async def test_each_wait_is_noticed_and_values_and_exceptions_pass_through() -> None:
    waits: list[int] = []

    async def slow() -> str:
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom") as caught:
        await noting_waits(slow(), lambda: waits.append(1), copy_context())
    assert len(waits) == 3
    assert caught.value.__context__ is None


async def test_cancel_scopes_inside_run_as_when_awaited_directly() -> None:
    async def with_scopes() -> tuple[bool, str]:
        with anyio.move_on_after(0.01) as scope:
            await anyio.sleep(5)
        with anyio.CancelScope(shield=True):
            await anyio.lowlevel.checkpoint()
        return scope.cancelled_caught, "after"

    assert await noting_waits(with_scopes(), lambda: None, copy_context()) == (True, "after")


async def test_a_cancellation_reaches_the_coroutine_which_may_clean_up() -> None:
    cleaned = anyio.Event()
    started = anyio.Event()

    async def tool() -> None:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.lowlevel.checkpoint()  # a shielded clean-up still runs
            cleaned.set()

    async with anyio.create_task_group() as group:
        group.start_soon(noting_waits, tool(), lambda: None, copy_context())
        await started.wait()
        group.cancel_scope.cancel()
    assert cleaned.is_set()


async def test_what_the_coroutine_raises_while_cancelled_is_not_chained_by_the_driver() -> None:
    async def tool() -> None:
        with contextlib.suppress(BaseException):
            await anyio.sleep_forever()
        raise ValueError("after the cancel")

    task = asyncio.ensure_future(noting_waits(tool(), lambda: None, copy_context()))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(ValueError, match="after the cancel") as caught:
        await task
    assert caught.value.__context__ is None


async def test_other_awaitables_count_as_waiting_once() -> None:
    waits: list[int] = []
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    future.set_result("done")
    assert await noting_waits(future, lambda: waits.append(1), copy_context()) == "done"
    assert waits == [1]


async def test_closing_the_driver_closes_the_coroutine() -> None:
    closed: list[bool] = []

    async def tool() -> None:
        try:
            await asyncio.sleep(5)
        except GeneratorExit:
            closed.append(True)
            raise

    driver = noting_waits(tool(), lambda: None, copy_context())
    driver.send(None)  # runs to the first wait
    driver.close()
    assert closed == [True]


TENANT: ContextVar[str] = ContextVar("tenant", default="none")


async def test_the_coroutine_sees_the_caller_s_context_variables_and_keeps_its_own_changes() -> None:
    seen: list[str] = []

    async def tool() -> None:
        seen.append(TENANT.get())
        TENANT.set("acme")
        await asyncio.sleep(0)
        seen.append(TENANT.get())

    TENANT.set("caller's")
    await noting_waits(tool(), lambda: seen.append(f"wait in {TENANT.get()}"), copy_context())
    assert seen == ["caller's", "wait in caller's", "acme"]
    assert TENANT.get() == "caller's"
