"""Errors of the sandbox itself (the host side), as opposed to errors of the code it runs.

Bad code never raises: it ends as a ``CodeResult`` with ``ok=False``. These are raised when the sandbox
cannot do its job at all.
"""

from __future__ import annotations

__all__ = ["SandboxClosedError", "SandboxError", "SandboxStartError", "SandboxUnavailableError"]


class SandboxError(Exception):
    """Base of the sandbox's own failures."""


class SandboxUnavailableError(SandboxError):
    """This platform cannot host the sandbox, or cannot give the isolation that ``strict=True`` asks for."""


class SandboxStartError(SandboxError):
    """The sandbox process did not start or did not greet the host in time (the message holds its stderr)."""


class SandboxClosedError(SandboxError):
    """The executor was used after ``aclose()``."""
