"""CodeAct's sandbox: start it and ask what this host lets it isolate."""

from __future__ import annotations

import anyio

from agentflow.sandbox import ProcessSandbox, SandboxIsolation


async def main() -> None:
    # --8<-- [start:isolation]
    async with ProcessSandbox() as sandbox:
        isolation = await sandbox.start()
        print(isolation)  # SandboxIsolation(namespaces=True, network_isolated=True, ...)
        print(isolation.notes)  # why something is missing, or what was chosen instead
    # --8<-- [end:isolation]
    assert isinstance(isolation, SandboxIsolation)


if __name__ == "__main__":
    anyio.run(main)
