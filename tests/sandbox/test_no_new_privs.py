"""Code in the sandbox can gain no privileges: Linux's ``no_new_privs`` is set before any code runs (a
set-uid ``sudo`` or ``su`` then runs as the code's own uid), whether the launcher's ``setpriv`` set it or the
runner had to."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentflow.sandbox import ProcessSandbox, _runner

from .conftest import HostTools

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="no_new_privs is Linux's")

READ_FLAG = (
    "[line for line in open('/proc/self/status').read().splitlines() if line.startswith('NoNewPrivs')]"
)


async def test_code_runs_with_no_new_privs() -> None:
    async with ProcessSandbox() as box:
        result = await box.execute(READ_FLAG, HostTools())
    assert result.ok, result.error
    assert result.value == ["NoNewPrivs:\t1"]


def test_the_runner_sets_it_when_the_launcher_did_not() -> None:
    # The runner as the sandbox runs it (``-I -S``, the standard library only), in a process without it.
    source = Path(_runner.__file__).read_text()
    script = source.replace('\nif __name__ == "__main__":\n    main()\n', "\n") + (
        f"\nprint({READ_FLAG}[0])\n_forbid_new_privileges()\nprint({READ_FLAG}[0])\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines() == ["NoNewPrivs:\t0", "NoNewPrivs:\t1"]
