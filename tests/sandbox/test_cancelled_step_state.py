"""A persistent sandbox whose step is cancelled loses its process, and with it the state: nothing returns
from the cancelled step to say so, so the next step's result does (as after a change of limits)."""

from __future__ import annotations

from typing import Any

import anyio

from agentflow.sandbox import ProcessSandbox

from .conftest import HostTools


async def test_the_step_after_a_cancelled_one_says_that_the_state_is_gone(sandbox: ProcessSandbox) -> None:
    started = anyio.Event()

    async def hang(args: dict[str, Any]) -> Any:
        started.set()
        await anyio.sleep_forever()

    tools = HostTools(hang=hang)
    assert (await sandbox.execute("x = 5", tools, tools.names)).ok
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(sandbox.execute, "hang()", tools, tools.names)
        await started.wait()
        tasks.cancel_scope.cancel()
    after = await sandbox.execute("'x' in globals()", tools, tools.names)
    assert after.value is False
    assert after.stderr == (
        "[note: the previous step was cancelled while it ran, so the sandbox was restarted, so variables, "
        "imports and files from earlier steps are gone]"
    )
    # Said once: the step after that one runs on as usual.
    assert (await sandbox.execute("1", tools, tools.names)).stderr == ""


async def test_a_cancelled_step_of_a_fresh_process_per_step_needs_no_note() -> None:
    started = anyio.Event()

    async def hang(args: dict[str, Any]) -> Any:
        started.set()
        await anyio.sleep_forever()

    tools = HostTools(hang=hang)
    async with ProcessSandbox(persistent=False) as sandbox:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(sandbox.execute, "hang()", tools, tools.names)
            await started.wait()
            tasks.cancel_scope.cancel()
        assert (await sandbox.execute("1", tools, tools.names)).stderr == ""
