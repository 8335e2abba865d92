"""A step's value is held to ``max_result_bytes`` on the host too: code that finds the channel and writes its
own outcome gets the same ``output_limit`` answer as an honest oversized value."""

from __future__ import annotations

import json

from agentflow.sandbox import CodeErrorType, ExecutionLimits, ProcessSandbox

from .conftest import HostTools

LIMITS = ExecutionLimits(max_result_bytes=1024)
FIND_CHANNEL = "import gc, sys\nch = next(o for o in gc.get_objects() if type(o).__name__ == '_Channel')\n"
STEP = "step = int(sys._getframe().f_code.co_filename.strip('<>').split()[1])\n"


async def test_a_forged_oversized_value_is_refused_like_an_honest_one(sandbox: ProcessSandbox) -> None:
    honest = await sandbox.execute("print('before')\n'x' * 16_000", HostTools(), limits=LIMITS)
    forge = "ch.send({'t': 'done', 'step': step, 'ok': True, 'value': 'x' * 16_000, 'final': True})\n"
    code = FIND_CHANNEL + STEP + "print('before')\n" + forge + "'real'"  # the forged outcome arrives first
    forged = await sandbox.execute(code, HostTools(), limits=LIMITS)
    for result in (honest, forged):
        assert not result.ok
        assert result.error_type is CodeErrorType.OUTPUT_LIMIT
        assert result.value is None
        assert not result.is_final
        assert result.stdout == "before\n"
    assert honest.error == "the result is 16002 bytes as JSON, over the limit of 1024; return a smaller " + (
        "value (a summary or a slice) instead"
    )
    assert forged.error == honest.error


async def test_a_value_at_the_limit_is_kept(sandbox: ProcessSandbox) -> None:
    # 1,022 characters and the two quotes: exactly the limit, on either side of the channel.
    result = await sandbox.execute("'é' * 511", HostTools(), limits=LIMITS)
    assert result.ok, result.error
    assert result.value == "é" * 511
    # 1,008 bytes as the runner measures JSON (with spaces), fewer as the host does (without): an honest
    # value the runner let through is never refused on the host, though its frame is over the limit.
    nested = await sandbox.execute("[{'k': [1e-05, None, True]}] * 36", HostTools(), limits=LIMITS)
    assert nested.ok, nested.error
    assert len(json.dumps(nested.value, ensure_ascii=False)) == 1008
