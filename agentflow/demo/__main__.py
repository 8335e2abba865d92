"""``python -m agentflow.demo`` (``make demo``): the demo of ``agentflow.demo.scenario``.

``--offline`` uses the bundled scripted model even when ``OPENAI_API_KEY`` is set. Offline on a terminal the
streamed text is paced (``PACE`` seconds a fragment) so it can be watched streaming; piped output is not.
Exit code 0 when every section succeeded, 1 when one failed, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys

import anyio

from .render import Renderer, use_color
from .scenario import endpoint_from_env, run_demo

PACE = 0.012
"""Seconds per streamed text fragment offline on a terminal (the whole demo then takes about 3 s)."""


def main(argv: list[str] | None = None) -> int:
    """Run the demo; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m agentflow.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--offline", action="store_true", help="use the bundled scripted model")
    args = parser.parse_args(argv)
    with contextlib.suppress(AttributeError, ValueError):
        sys.stdout.reconfigure(errors="replace")  # type: ignore[union-attr]
    endpoint = None if args.offline else endpoint_from_env(os.environ)
    render = Renderer(sys.stdout, color=use_color(sys.stdout))
    pace = PACE if endpoint is None and sys.stdout.isatty() else 0.0
    try:
        failed = anyio.run(functools.partial(run_demo, render, endpoint, pace=pace))
    except KeyboardInterrupt:
        render.finish()
        print("agentflow demo: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        render.finish()
        print(f"agentflow demo: error: {type(exc).__name__}: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
