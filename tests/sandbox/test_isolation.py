"""What the code cannot reach: the host's environment, the network, root's files, other sandboxes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import anyio
import pytest
from anyio.abc import SocketStream

from agentflow.sandbox import ProcessSandbox
from agentflow.sandbox.launch import sandbox_environment

from .conftest import HostTools

SECRET = "sk-agentflow-test-secret-4711"


def attempt(expression: str) -> str:
    """Code whose value is ``expression``'s value, or the name of the ``OSError`` it raised."""
    return f"try:\n    r = {expression}\nexcept OSError as e:\n    r = type(e).__name__\nr"


async def test_the_environment_is_scrubbed(
    sandbox: ProcessSandbox, tools: HostTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    result = await sandbox.execute("import os\ndict(os.environ)", tools)
    assert result.value == sandbox_environment(result.value["HOME"])
    assert SECRET not in str(result.value)


async def test_the_host_environment_cannot_be_read_through_proc(
    sandbox: ProcessSandbox, tools: HostTools, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # set before the sandbox starts
    isolation = await sandbox.start()
    assert isolation.host_environment_protected, isolation.notes
    code = f"""
import os
found = []
for pid in ['self', '{os.getpid()}', '{os.getppid()}', '1'] + [p for p in os.listdir('/proc') if p.isdigit()]:
    try:
        with open(f'/proc/{{pid}}/environ', 'rb') as handle:
            found.append(handle.read().decode('latin-1'))
    except OSError:
        pass
found
"""
    result = await sandbox.execute(code, tools)
    assert result.ok, result.error
    assert not any(SECRET in text for text in result.value)


async def test_host_processes_are_invisible(sandbox: ProcessSandbox, tools: HostTools) -> None:
    isolation = await sandbox.start()
    if not isolation.host_processes_hidden:
        pytest.skip(f"no PID namespace here: {isolation.notes}")
    result = await sandbox.execute(
        "import os\nsorted(int(p) for p in os.listdir('/proc') if p.isdigit())", tools
    )
    assert result.value == [1]  # only the runner itself


async def serve_once(*, task_status: anyio.abc.TaskStatus[int]) -> None:
    async def handle(stream: SocketStream) -> None:
        async with stream:
            await stream.send(b"hello from the host")

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    task_status.started(port)
    await listener.serve(handle)


CONNECT = """
import socket
try:
    with socket.create_connection(('127.0.0.1', {port}), timeout=5) as s:
        result = s.recv(100).decode()
except OSError as e:
    result = type(e).__name__ + ': ' + str(e)
result
"""


async def test_there_is_no_network(sandbox: ProcessSandbox, tools: HostTools) -> None:
    isolation = await sandbox.start()
    if not isolation.network_isolated:
        pytest.skip(f"no network namespace here: {isolation.notes}")
    async with anyio.create_task_group() as tasks:
        port = await tasks.start(serve_once)
        result = await sandbox.execute(CONNECT.format(port=port), tools)
        tasks.cancel_scope.cancel()
    assert result.value.startswith("OSError: [Errno 101] Network is unreachable")
    interfaces = await sandbox.execute("import socket\n[name for _i, name in socket.if_nameindex()]", tools)
    assert interfaces.value == ["lo"]  # and it is down: nothing routes anywhere


async def test_network_true_keeps_the_hosts_network(tools: HostTools) -> None:
    async with ProcessSandbox(network=True) as box, anyio.create_task_group() as tasks:
        isolation = await box.start()
        assert not isolation.network_isolated
        port = await tasks.start(serve_once)
        result = await box.execute(CONNECT.format(port=port), tools)
        tasks.cancel_scope.cancel()
    assert result.value == "hello from the host"


async def test_a_separate_user_cannot_touch_roots_private_files(
    sandbox: ProcessSandbox, tools: HostTools, tmp_path: Path
) -> None:
    isolation = await sandbox.start()
    if not isolation.separate_user:
        pytest.skip("the host does not run as root: the sandbox has the host's uid")
    # One in the sandbox's own working directory, which it sees whatever its /tmp, and one in the host's
    # /tmp (pytest's tmp_path), which a private /tmp hides altogether.
    workdir = (await sandbox.execute("import os\nos.getcwd()", tools)).value
    os.chmod(tmp_path, 0o755)
    for private, refused in (
        (Path(workdir) / "private.txt", "PermissionError"),
        (tmp_path / "private.txt", "FileNotFoundError" if isolation.private_tmp else "PermissionError"),
    ):
        private.write_text(SECRET)
        private.chmod(stat.S_IRUSR | stat.S_IWUSR)
        result = await sandbox.execute(attempt(f"open({str(private)!r}).read()"), tools)
        assert result.value == refused, private
    uid = await sandbox.execute("import os\n[os.getuid(), os.geteuid(), os.getgroups()]", tools)
    assert uid.value == [1000, 1000, []] if isolation.namespaces else uid.value[0] != 0


async def test_the_working_directory_is_private_and_removed_at_close(tools: HostTools) -> None:
    box = ProcessSandbox()
    result = await box.execute("import os\nopen('notes.txt', 'w').write('x')\nos.getcwd()", tools)
    workdir = anyio.Path(result.value)
    assert await (workdir / "notes.txt").exists()
    assert stat.S_IMODE((await workdir.stat()).st_mode) == 0o700
    await box.aclose()
    assert not await workdir.exists()


async def test_two_sandboxes_do_not_see_each_other(tools: HostTools) -> None:
    async with ProcessSandbox() as first, ProcessSandbox() as second:
        one = await first.execute("import os\nx = 'first'\nos.getcwd()", tools)
        await second.execute("x = 'second'", tools)
        peek = await second.execute(attempt(f"__import__('os').listdir({one.value!r})"), tools)
        assert (await first.execute("x", tools)).value == "first"
    isolation = first.isolation
    assert isolation is not None
    if isolation.private_tmp:  # each has its own /tmp: the other's directory is not even there
        assert peek.value == "FileNotFoundError"
    elif isolation.separate_user:
        assert peek.value == "PermissionError"
