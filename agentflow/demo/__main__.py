"""``python -m agentflow.demo`` (``make demo``): the demo of ``agentflow.demo.scenario``.

``--offline`` uses the bundled scripted model even when ``OPENAI_API_KEY`` is set. Exit code 0 when every
section succeeded, 1 when one failed, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

import anyio

from .render import Renderer, use_color
from .scenario import endpoint_from_env, run_demo


def main(argv: list[str] | None = None) -> int:
    """Run the demo; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m agentflow.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--offline", action="store_true", help="use the bundled scripted model")
    args = parser.parse_args(argv)
    with contextlib.suppress(AttributeError, ValueError):
        sys.stdout.reconfigure(errors="replace")  # type: ignore[union-attr]
    endpoint = None if args.offline else endpoint_from_env(os.environ)
    render = Renderer(sys.stdout, color=use_color(sys.stdout))
    try:
        failed = anyio.run(run_demo, render, endpoint)
    except KeyboardInterrupt:
        render.finish()
        print("agentflow demo: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        render.finish()
        print(f"agentflow demo: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
