"""The sandboxes' private working directories: made, claimed while in use, deleted, and swept when orphaned.

Each working directory ``<parent>/agentflow-sandbox-XXXXXXXX`` has a sibling claim file ``….lock`` that the
host process holds an exclusive ``flock`` on for as long as the sandbox lives. Normally the host deletes both
when it kills the sandbox. If the host process itself dies (a crash, the OOM killer, ``SIGKILL``), the kernel
drops its lock and kills the sandbox (see ``launch.py``), and nobody is left to delete the directory: the
next sandbox started in the same parent directory, by any host process of the same user, finds the claim
file unlocked and deletes both (``sweep_orphans``, once per parent directory and host process).

The claim file sits outside the working directory, so code in the sandbox cannot remove or lock it; the
sweep acts only on claim files owned by its own user, that are unlocked and not brand new, and never
follows a symbolic link. Directories without a claim file (made by older versions) are left alone.

``remove_files_of`` deletes what a sandbox's throw-away uid (host running as root) left in the host's
``/tmp``, ``/var/tmp`` and ``/dev/shm`` when it had no private ones: files of a uid nobody else runs as.

Blocking file-system calls only: the caller runs them in a worker thread where they may take a while.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Sequence

__all__ = ["WORKDIR_PREFIX", "Workdir", "remove_files_of", "sweep_orphans"]

WORKDIR_PREFIX = "agentflow-sandbox-"
"""How a working directory's name starts (``_runner.py`` checks it before it deletes its own)."""

_CLAIM_SUFFIX = ".lock"
_MIN_AGE = 10.0
"""Seconds a claim file must have existed before the sweep may take it: its maker locks it at once, but a
sweep should never race one being made."""

_swept: set[str] = set()


class Workdir:
    """A fresh private working directory (mode 0700) and the claim held on it; ``release`` deletes both."""

    def __init__(self, parent: str | None = None) -> None:
        self.path = tempfile.mkdtemp(prefix=WORKDIR_PREFIX, dir=parent)
        claim = self.path + _CLAIM_SUFFIX
        try:
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            self._fd: int | None = os.open(claim, flags, 0o600)
        except OSError:
            shutil.rmtree(self.path, ignore_errors=True)
            raise
        # Never waits: a sweep leaves claims younger than _MIN_AGE alone, and this one was just made.
        fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def release(self) -> None:
        """Delete the directory and its claim file, then drop the lock. Idempotent."""
        if self._fd is None:
            return
        shutil.rmtree(self.path, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.unlink(self.path + _CLAIM_SUFFIX)
        os.close(self._fd)
        self._fd = None


def needs_sweep(parent: str | None = None) -> bool:
    """Whether ``sweep_orphans(parent)`` has work left: not run yet for that directory in this process."""
    return os.path.realpath(parent if parent is not None else tempfile.gettempdir()) not in _swept


def sweep_orphans(parent: str | None = None) -> list[str]:
    """Delete the working directories in ``parent`` whose host process is gone; returns their paths.

    Runs once per parent directory in a host process (later calls return ``[]`` at once).
    """
    parent = parent if parent is not None else tempfile.gettempdir()
    key = os.path.realpath(parent)
    if key in _swept:
        return []
    _swept.add(key)
    removed: list[str] = []
    with contextlib.suppress(OSError), os.scandir(parent) as entries:
        for entry in entries:
            name = entry.name
            if name.startswith(WORKDIR_PREFIX) and name.endswith(_CLAIM_SUFFIX):
                workdir = os.path.join(parent, name[: -len(_CLAIM_SUFFIX)])
                if _take_orphan(entry.path, workdir):
                    removed.append(workdir)
    return removed


def _take_orphan(claim: str, workdir: str) -> bool:
    """Delete ``workdir`` and its ``claim`` file when no live host holds the claim."""
    try:
        fd = os.open(claim, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid() or time.time() - info.st_mtime < _MIN_AGE:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # its host is alive
        try:
            now = os.lstat(claim)
        except OSError:
            return False  # released by its host between the open and the lock
        if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
            return False  # released and made again since the open: not the claim this lock holds
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(os.lstat(workdir).st_mode):  # never a symbolic link
                shutil.rmtree(workdir, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.unlink(claim)
        return True
    finally:
        os.close(fd)


def remove_files_of(uid: int, directories: Sequence[str]) -> list[str]:
    """Delete the entries directly in ``directories`` that ``uid`` owns (whole trees for directories);
    returns their paths.

    For a sandbox's throw-away uid once its process is gone. In a world-writable, sticky directory no other
    user (root aside) can rename or replace such an entry, and the deletion never follows a symbolic link
    (``shutil.rmtree`` works on file descriptors and refuses a link; a link is itself unlinked), so nothing
    outside what ``uid`` made is touched.
    """
    removed: list[str] = []
    for directory in directories:
        with contextlib.suppress(OSError), os.scandir(directory) as entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if info.st_uid != uid:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)
                removed.append(entry.path)
    return removed
