"""Fixtures of the MCP tests: the test server (``mcp_test_server.py``) over stdio and over Streamable HTTP.

The HTTP server runs in-process, in a thread of its own with its own event loop (uvicorn on 127.0.0.1, an
ephemeral port), once per test module; each test connects its own client session to it. Stdio tests start
the script as a subprocess, one per test that needs one (a few: each costs a Python start-up).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

HERE = Path(__file__).resolve().parent
SERVER_SCRIPT = str(HERE / "mcp_test_server.py")


def stdio_command() -> tuple[str, list[str]]:
    """The command and arguments that run the test server over stdio."""
    return sys.executable, [SERVER_SCRIPT]


def child_processes() -> set[int]:
    """The process ids of this process's children still alive (Linux: read from /proc)."""
    found: set[int] = set()
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # fields[0] is the state, fields[1] the parent: a zombie is gone already, only not yet reaped.
        if int(fields[1]) == me and fields[0] != "Z":
            found.add(int(entry))
    return found


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The URL of the test server over Streamable HTTP, served for the module's tests."""
    sys.path.insert(0, str(HERE))
    try:
        import mcp_test_server
    finally:
        sys.path.remove(str(HERE))
    app = mcp_test_server.build().streamable_http_app()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name="mcp-test-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the MCP test server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(20)
        assert not thread.is_alive(), "the MCP test server did not stop"
