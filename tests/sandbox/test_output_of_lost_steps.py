"""Output of steps whose process is lost, and of code that floods its descriptors.

A killed step never sends the child's count of the output it cut, so a stream that used up its budget
still ends with the truncation marker. Raw writes (``os.write``) past the budget are read only so far
(``RAW_SLACK``): then the host stops reading, the code waits on its pipe until its time is up, and the
marker says that at least so many bytes were not shown."""

from __future__ import annotations

import os
import re

import pytest

from agentflow.sandbox import CodeErrorType, ExecutionLimits, ProcessSandbox, step_output

from .conftest import HostTools, short_limits


async def test_a_crashed_step_that_filled_its_output_says_it_was_cut(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    code = "import os\nprint('x' * 5000)\nos._exit(3)"
    result = await sandbox.execute(code, tools, [], ExecutionLimits(max_output_bytes=1000))
    assert result.error_type is CodeErrorType.KILLED
    assert result.stdout == "x" * 1000 + "\n[... output truncated ...]"


async def test_a_crashed_step_within_its_output_budget_has_no_marker(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    result = await sandbox.execute("import os\nprint('short')\nos._exit(3)", tools, [])
    assert result.error_type is CodeErrorType.KILLED
    assert result.stdout == "short\n"


async def test_raw_writes_past_the_budget_are_not_read_on_until_the_wall_time(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    code = "import os\nwhile True:\n    os.write(1, b'y' * 65536)"
    result = await sandbox.execute(code, tools, [], short_limits(max_output_bytes=1000))
    assert result.error_type is CodeErrorType.TIMEOUT
    head, _, marker = result.stderr.partition("\n[... output truncated: at least ")
    assert head == "y" * 1000
    dropped = int(marker.removesuffix(" more bytes not shown ...]"))
    # The slack, then at most one more read of the pipe: not what the code wrote in a second.
    assert step_output.RAW_SLACK < dropped <= step_output.RAW_SLACK + 65536
    assert (await sandbox.execute("1", tools)).value == 1  # a fresh process


async def test_the_kill_of_a_flooding_step_does_not_wait_on_the_unread_pipe(
    sandbox: ProcessSandbox, tools: HostTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The launcher reports the runner's death on stderr, the pipe the host stopped reading: it must not
    wait there until the host gives up on it and kills its process group (``_REAP_TIMEOUT``)."""
    await sandbox.start()
    child = sandbox._child
    assert child is not None
    if child._pidfd is None or not child._plan.forks:
        pytest.skip("without a pidfd and a PID namespace the process group is how the sandbox is killed")
    group_kills: list[int] = []
    real_killpg = os.killpg

    def killpg(pgid: int, signum: int) -> None:
        group_kills.append(pgid)
        real_killpg(pgid, signum)

    monkeypatch.setattr(os, "killpg", killpg)
    code = "import os\nwhile True:\n    os.write(2, b'y' * 65536)"
    result = await sandbox.execute(code, tools, [], short_limits(max_output_bytes=1000))
    assert result.error_type is CodeErrorType.TIMEOUT
    assert group_kills == []


async def test_a_raw_burst_past_the_budget_but_within_the_slack_ends_as_usual(
    sandbox: ProcessSandbox, tools: HostTools
) -> None:
    code = "import os\nos.write(2, b'z' * 200000)\n'done'"
    result = await sandbox.execute(code, tools, [], ExecutionLimits(max_output_bytes=1000))
    assert result.value == "done"
    # (The count is exact only for what was read before the outcome came; the last of a burst may not be.)
    assert re.fullmatch(
        r"z{1000}\n\[\.\.\. output truncated: \d+ more bytes not shown \.\.\.\]", result.stderr
    )
