"""The example page in headless Chromium: the streamed events appear in the DOM as they arrive.

Needs Debian's ``chromium``. When it is missing the test installs it (``apt-get install -y chromium``, as
root); if that is not possible it fails with a message saying what to install, rather than skipping.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from web_support import aiohttp_service, load_example

from agentflow.agent.agent import Agent

_CANDIDATES = ("chromium", "chromium-browser")


def _find_chromium() -> str | None:
    for name in _CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


def _install_chromium() -> str:
    """Install Debian's chromium package, or fail with what to do."""
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        pytest.fail(
            "headless Chromium is needed for this test and is not installed; install it with "
            "'apt-get install -y chromium' (Debian/Ubuntu, as root) or put a 'chromium' binary on PATH",
            pytrace=False,
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in ([apt, "update", "-qq"], [apt, "install", "-y", "-qq", "chromium"]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            pytest.fail(
                f"installing chromium failed ({' '.join(command)} exited {done.returncode}):\n"
                f"{done.stderr[-2000:]}",
                pytrace=False,
            )
    found = _find_chromium()
    if found is None:
        pytest.fail("apt-get installed chromium but no chromium binary is on PATH", pytrace=False)
    return found


@pytest.fixture(scope="session")
def chromium() -> str:
    return _find_chromium() or _install_chromium()


@pytest.fixture
async def demo_agent() -> AsyncIterator[Agent]:
    web_agent = load_example("web_agent")
    async with web_agent.demo_server() as server, web_agent.build_agent(server.base_url) as agent:
        yield agent


async def test_page_shows_the_streamed_events_in_headless_chromium(
    chromium: str, demo_agent: Agent, tmp_path: Path
) -> None:
    async with aiohttp_service(demo_agent) as url:
        command = [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            # Virtual time runs the page until it is idle (the stream closed) or the budget is spent.
            "--virtual-time-budget=30000",
            "--dump-dom",
            f"{url}/?q=Weather+in+Oslo",
        ]
        with anyio.fail_after(120):  # a hang guard, not a timing assertion
            done = await anyio.run_process(command, check=False)
    dom = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()[-2000:]

    assert 'data-state="finished"' in dom, dom[-3000:]
    answer = re.search(r'<div id="answer">(.*?)</div>', dom, re.S)
    assert answer is not None
    assert answer.group(1) == "In Oslo it is 21 °C and sunny; local time 14:05."
    types = re.findall(r'<li class="event" data-type="([a-z_]+)" data-seq="(\d+)"', dom)
    assert [int(seq) for _, seq in types] == list(range(1, len(types) + 1))
    names = [name for name, _ in types]
    assert names[0] == "run_started"
    assert names[-1] == "run_finished"
    assert names.count("text_delta") > 1
    assert {"tool_started", "tool_succeeded", "step_finished"} <= set(names)
