"""With a mount namespace, ``/tmp``, ``/var/tmp`` and ``/dev/shm`` are the sandbox's own: capped at
``max_tmp_bytes``, invisible to the host and to other sandboxes, and gone with the sandbox."""

from __future__ import annotations

import errno
import os
import shutil
import uuid
from pathlib import Path

import anyio
import pytest

from agentflow.sandbox import ExecutionLimits, ProcessSandbox, launch, workdirs
from agentflow.sandbox.launch import PRIVATE_TMP_DIRS, private_tmp_args

from .conftest import HostTools

MiB = 1024 * 1024
SMALL = ExecutionLimits(max_tmp_bytes=2 * MiB)

FILL = """
import errno
written = 0
try:
    with open({path!r}, 'wb') as handle:
        for _ in range(8):
            handle.write(b'x' * (1024 * 1024))
            handle.flush()
            written += 1
    outcome = 'no limit'
except OSError as e:
    outcome = errno.errorcode.get(e.errno, str(e.errno))
[outcome, written]
"""


async def private_sandbox(limits: ExecutionLimits = SMALL) -> ProcessSandbox:
    box = ProcessSandbox()
    isolation = await box.start(limits)
    if not isolation.private_tmp:
        await box.aclose()
        pytest.skip(f"no private /tmp here: {isolation.notes}")
    return box


@pytest.mark.parametrize("directory", ["/tmp", "/dev/shm", "/var/tmp"])
async def test_writing_past_the_cap_fails_inside_and_leaves_nothing_on_the_host(directory: str) -> None:
    if not await anyio.Path(directory).is_dir():
        pytest.skip(f"no {directory} here")
    name = f"agentflow-test-{uuid.uuid4().hex}"
    host_path = anyio.Path(directory) / name
    box = await private_sandbox()
    try:
        result = await box.execute(FILL.format(path=f"{directory}/{name}"), HostTools(), limits=SMALL)
        assert result.ok, result.error
        assert result.value[0] == errno.errorcode[errno.ENOSPC]
        assert result.value[1] <= 2  # 2 MiB in all
        assert not await host_path.exists()  # not the host's directory, even while the sandbox lives
        listed = await box.execute(
            f"import os\n{name!r} in os.listdir({directory!r})", HostTools(), limits=SMALL
        )
        assert listed.value is True  # the sandbox keeps its file until it ends
    finally:
        await box.aclose()
    assert not await host_path.exists()


async def test_the_working_directory_stays_where_the_host_made_it() -> None:
    box = await private_sandbox()
    try:
        code = (
            "import os, tempfile\n"
            "open(os.path.join(os.environ['HOME'], 'a.txt'), 'w').write('a')\n"
            "open(tempfile.gettempdir() + '/b.txt', 'w').write('b')\n"
            "[os.getcwd(), sorted(os.listdir('.')), sorted(os.environ)]"
        )
        result = await box.execute(code, HostTools(), limits=SMALL)
        assert result.ok, result.error
        workdir, names, environment = result.value
        assert names == ["a.txt", "b.txt"]
        assert sorted([p.name async for p in anyio.Path(workdir).iterdir()]) == [
            "a.txt",
            "b.txt",
        ]  # the host's directory, on its disk
        assert environment == ["HOME", "LANG", "LC_ALL", "PATH", "TMPDIR"]  # the step's sh adds nothing
    finally:
        await box.aclose()
    assert not await anyio.Path(workdir).exists()


async def test_the_code_cannot_unmount_its_tmp_to_reach_the_host_s() -> None:
    box = await private_sandbox()
    try:
        code = (
            "import ctypes, os\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "[[libc.umount2(d.encode(), flag), ctypes.get_errno()] for d in ('/tmp', '/dev/shm') "
            "for flag in (0, 2)]"  # 2: MNT_DETACH
        )
        result = await box.execute(code, HostTools(), limits=SMALL)
        assert result.ok, result.error
        assert all(status == -1 and code in (errno.EPERM, errno.EINVAL) for status, code in result.value)
        mounted = await box.execute("open('/proc/self/mounts').read()", HostTools(), limits=SMALL)
        assert "tmpfs /tmp tmpfs" in mounted.value
    finally:
        await box.aclose()


UNSHARE_AND_UNMOUNT = """
import ctypes, os
read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:  # single-threaded, as unshare(CLONE_NEWUSER) wants
    libc = ctypes.CDLL(None, use_errno=True)
    status = [libc.unshare(0x10000000 | 0x00020000), ctypes.get_errno()]  # CLONE_NEWUSER | CLONE_NEWNS
    status += [libc.umount2(b'/tmp', 2), ctypes.get_errno()]  # MNT_DETACH, with every capability
    os.write(write_end, repr(status).encode())
    os._exit(0)
os.waitpid(pid, 0)
eval(os.read(read_end, 100))
"""


async def test_a_namespace_of_the_code_s_own_cannot_unmount_it_either() -> None:
    limits = ExecutionLimits(max_tmp_bytes=2 * MiB, max_processes=1)
    box = await private_sandbox(limits)
    try:
        result = await box.execute(UNSHARE_AND_UNMOUNT, HostTools(), limits=limits)
        assert result.ok, result.error
        # Copied into a namespace the code owns, the mounts are locked together: nothing is revealed.
        assert result.value[0] == 0  # the namespace was made
        assert result.value[2:] == [-1, errno.EINVAL]
    finally:
        await box.aclose()


async def test_a_new_cap_restarts_the_sandbox() -> None:
    box = await private_sandbox()
    try:
        size = "import os\nst = os.statvfs('/tmp')\nst.f_blocks * st.f_frsize"
        assert (await box.execute(size, HostTools(), limits=SMALL)).value == 2 * MiB
        bigger = await box.execute(size, HostTools(), limits=ExecutionLimits(max_tmp_bytes=4 * MiB))
        assert bigger.value == 4 * MiB
        assert bigger.stderr.startswith("[note: the execution limits changed")
    finally:
        await box.aclose()


def test_the_step_is_told_the_cap_and_where_to_re_attach_the_working_directory() -> None:
    assert private_tmp_args(("/tmp", "/dev/shm"), 64 * MiB, "/tmp/agentflow-sandbox-x") == [
        "--private-tmp",
        str(64 * MiB),
        "16384",  # one inode per page: empty files cannot eat kernel memory past the cap
        str(launch.INNER_ID),
        "/tmp/agentflow-sandbox-x",
        "/tmp",
        "/dev/shm",
        "--",
    ]
    assert private_tmp_args(("/tmp",), 64 * MiB, "/srv/work/agentflow-sandbox-x")[4] == ""
    assert private_tmp_args(("/tmp",), 64 * MiB, "/tmpfoo/agentflow-sandbox-x")[4] == ""


def test_a_cap_of_less_than_a_mebibyte_is_refused() -> None:
    with pytest.raises(ValueError, match="max_tmp_bytes must be at least 1048576"):
        ExecutionLimits(max_tmp_bytes=0)  # a tmpfs of size 0 would have no limit at all


@pytest.mark.skipif(shutil.which("unshare") is None, reason="no unshare: no namespaces")
async def test_where_the_mounts_fail_the_namespaces_stay_and_a_note_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(launch, "_PLANS", {})
    # The host's /proc/<its pid>: a directory on the host, missing in the sandbox's own /proc.
    monkeypatch.setattr(launch, "PRIVATE_TMP_DIRS", ("/proc/self",))
    plan = await launch.plan_launch(python=None, network=False, switch_user=launch.can_switch_user())
    if not plan.isolation.namespaces:
        pytest.skip(f"no namespaces here: {plan.isolation.notes}")
    assert not plan.isolation.private_tmp
    assert plan.tmp_dirs == ()
    failed = [note for note in plan.isolation.notes if "namespaces with a private /tmp" in note]
    assert failed, plan.isolation.notes
    assert f"the sandbox's private /tmp failed: FileNotFoundError(2, 'mount /proc/{os.getpid()}" in failed[0]
    assert any(note.startswith("/tmp and /dev/shm are the host's") for note in plan.isolation.notes)


def test_only_directories_that_exist_are_covered_once() -> None:
    wrapping = launch._private_tmp_wrapping((), "/usr/bin/unshare", network=False)
    assert wrapping is not None
    real = [os.path.realpath(d) for d in PRIVATE_TMP_DIRS if os.path.isdir(d)]
    assert list(wrapping.tmp_dirs) == list(dict.fromkeys(real))


LEAVE_FILES = """
import os
os.mkdir('/tmp/{name}-dir')
open('/tmp/{name}-dir/inner', 'w').write('x')
open('/tmp/{name}', 'w').write('x')
open('/dev/shm/{name}', 'w').write('x')
os.symlink({target!r}, '/tmp/{name}-link')
sorted(n for n in os.listdir('/tmp') if n.startswith({name!r}))
"""


@pytest.mark.skipif(not launch.can_switch_user(), reason="throw-away uids need a host running as root")
async def test_without_a_private_tmp_what_a_throw_away_uid_left_there_goes_with_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("agentflow.sandbox.launch.shutil.which", lambda name, path=None: None)
    monkeypatch.setattr(launch, "_PLANS", {})
    target = tmp_path / "host-file"  # a link to it is deleted, never what it points to
    target.write_text("host")
    name = f"agentflow-test-{uuid.uuid4().hex}"
    left = [f"/tmp/{name}", f"/tmp/{name}-dir", f"/tmp/{name}-link", f"/dev/shm/{name}"]
    async with ProcessSandbox() as box:
        isolation = await box.start()
        assert isolation.separate_user
        assert not isolation.private_tmp
        assert "/tmp and /dev/shm are the host's" in " ".join(isolation.notes)
        result = await box.execute(LEAVE_FILES.format(name=name, target=str(target)), HostTools())
        assert result.value == [name, f"{name}-dir", f"{name}-link"], result.error
        assert all([await anyio.Path(path).exists() or await anyio.Path(path).is_symlink() for path in left])
    assert not any([await anyio.Path(path).exists() or await anyio.Path(path).is_symlink() for path in left])
    assert await anyio.Path(target).read_text() == "host"


@pytest.mark.skipif(not launch.can_switch_user(), reason="giving files to other uids needs root")
def test_only_the_uid_s_own_entries_are_removed(tmp_path: Path) -> None:
    sandbox_uid, other_uid = launch.dynamic_id(), launch.dynamic_id()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("keep")
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "tree").mkdir()
    (shared / "tree" / "leaf").write_text("x")
    (shared / "file").write_text("x")
    (shared / "link").symlink_to(outside)
    (shared / "others").write_text("x")
    for path in (shared / "tree", shared / "tree" / "leaf", shared / "file", shared / "link"):
        os.chown(path, sandbox_uid, sandbox_uid, follow_symlinks=False)
    os.chown(shared / "others", other_uid, other_uid)
    removed = workdirs.remove_files_of(sandbox_uid, [str(shared), str(tmp_path / "missing")])
    assert sorted(Path(path).name for path in removed) == ["file", "link", "tree"]
    assert sorted(path.name for path in shared.iterdir()) == ["others"]
    assert (outside / "keep").read_text() == "keep"
