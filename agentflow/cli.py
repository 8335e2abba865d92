"""``agentflow run "question"``: run an agent from the command line and watch it work.

::

    agentflow run "What is 1234 * 5678, and what time is it?"             # needs OPENAI_API_KEY
    agentflow run "…" --runtime deep-research --protocol responses --model gpt-4.1-mini
    agentflow run "…" --base-url http://localhost:11434/v1 --model llama3.2   # any compatible server
    agentflow run "…" --offline                                            # the bundled scripted model
    agentflow run "…" --json | jq .type                                    # one JSON event per line
    agentflow --version                                                    # "agentflow" and its version

The agent has two safe built-in tools, ``calculator`` (arithmetic only) and ``utc_now`` (see
``agentflow.demo.tools``). The endpoint comes from ``--base-url`` or ``OPENAI_BASE_URL`` (default: the
OpenAI API), the key from the environment variable ``--api-key-env`` names (default ``OPENAI_API_KEY``,
sent to a ``--base-url`` other than OpenAI's only when ``--api-key-env`` names it; the key is never
printed), the model from ``--model`` or ``AGENTFLOW_MODEL`` (default ``gpt-4o-mini``).

Output is the live rendering of ``agentflow.demo.render`` (colours only on a terminal without ``NO_COLOR``),
or with ``--json`` newline-delimited ``event.to_dict()`` JSON. Errors are one line on stderr. Exit codes:
0 the run finished, 1 it failed (model or network error…), 2 bad arguments or configuration, 130 cancelled
with Ctrl-C (the first Ctrl-C cancels the run cleanly, a second one stops waiting for it), 143 stopped with
SIGTERM (the same, as a supervisor expects).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, NoReturn

import anyio
import attrs
from anyio.abc import TaskStatus

__all__ = ["CliConfig", "ConfigError", "build_parser", "main", "resolve_config"]

PROG = "agentflow"
DEFAULT_MODEL = "gpt-4o-mini"
RUNTIMES = ("react", "codeact", "deep-research")
PROTOCOLS = ("chat", "responses")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_CANCELLED = 130
EXIT_TERMINATED = 143
"""128 + SIGTERM: what a supervisor (systemd, Kubernetes, a shell) expects of a process it stopped."""


class ConfigError(Exception):
    """The command line and environment do not say how to reach a model (exit code 2)."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr (exit code 2), not usage plus a message."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{PROG}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``agentflow`` argument parser."""
    from . import __version__

    parser = _Parser(prog=PROG, description="Run agentflow agents from the command line.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    run = commands.add_parser(
        "run",
        help="run an agent on a question and stream what it does",
        description="Run an agent (with the built-in tools calculator and utc_now) on a question.",
    )
    run.add_argument("question", help="what to ask the agent")
    run.add_argument("--runtime", choices=RUNTIMES, default="react", help="how the agent works (react)")
    run.add_argument("--protocol", choices=PROTOCOLS, default="chat", help="model API to use (chat)")
    run.add_argument("--base-url", help="OpenAI-compatible base URL (default: $OPENAI_BASE_URL or OpenAI)")
    run.add_argument("--model", help=f"model name (default: $AGENTFLOW_MODEL or {DEFAULT_MODEL})")
    run.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="environment variable holding the API key (default: OPENAI_API_KEY)",
    )
    run.add_argument("--json", action="store_true", help="print newline-delimited JSON events")
    run.add_argument(
        "--offline", action="store_true", help="use the bundled scripted model on a local server"
    )
    run.add_argument("--max-steps", type=_positive_int, default=20, help="step limit of the run (20)")
    run.add_argument(
        "--replan-every",
        type=_positive_int,
        metavar="N",
        help="deep-research: re-plan after every N steps",
    )
    return parser


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


@attrs.frozen
class CliConfig:
    """Where the model lives; with ``offline``, ``base_url`` is ``None`` (the local server's is used)."""

    model: str
    base_url: str | None = None
    api_key: str | None = attrs.field(default=None, repr=lambda key: "<set>" if key else "None")
    offline: bool = False


def resolve_config(args: argparse.Namespace, environ: Mapping[str, str]) -> CliConfig:
    """The model endpoint from the arguments and the environment; ``ConfigError`` when there is none.

    >>> args = build_parser().parse_args(["run", "hi"])
    >>> resolve_config(args, {"OPENAI_API_KEY": "sk-x"})
    CliConfig(model='gpt-4o-mini', base_url='https://api.openai.com/v1', api_key=<set>, offline=False)
    """
    from .providers.openai.client import DEFAULT_BASE_URL
    from .providers.openai.environment import is_openai_url

    model = args.model or environ.get("AGENTFLOW_MODEL") or DEFAULT_MODEL
    if args.offline:
        if args.base_url:
            raise ConfigError("--offline runs the bundled scripted model: drop --base-url, or drop --offline")
        return CliConfig(model=model, offline=True)
    key_env = args.api_key_env or "OPENAI_API_KEY"
    api_key = environ.get(key_env) or None
    if args.api_key_env and api_key is None:
        raise ConfigError(f"the environment variable {key_env} (named by --api-key-env) is not set or empty")
    base_url = args.base_url or environ.get("OPENAI_BASE_URL") or None
    if base_url is None and api_key is None:
        raise ConfigError(
            "no model endpoint configured: set OPENAI_API_KEY (optionally OPENAI_BASE_URL and "
            "AGENTFLOW_MODEL), pass --base-url for a local OpenAI-compatible server, or add --offline "
            "to try the bundled scripted model"
        )
    if api_key is not None and args.base_url and not args.api_key_env and not is_openai_url(args.base_url):
        # OPENAI_API_KEY is OpenAI's key: it goes to a server named on the command line only when
        # --api-key-env says so (the model classes keep the same rule for OPENAI_API_KEY).
        api_key = None
    return CliConfig(model=model, base_url=base_url or DEFAULT_BASE_URL, api_key=api_key)


def _fail(message: str, code: int) -> int:
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr, flush=True)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """The ``agentflow`` command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command != "run":
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    if not args.question.strip():
        return _fail("the question is empty", EXIT_USAGE)
    try:
        config = resolve_config(args, os.environ)
    except ConfigError as exc:
        return _fail(str(exc), EXIT_USAGE)
    with contextlib.suppress(AttributeError, ValueError):
        # Model text can hold any character; never die on a terminal's narrow encoding.
        sys.stdout.reconfigure(errors="replace")  # type: ignore[union-attr]
    try:
        return anyio.run(_run, args, config)
    except KeyboardInterrupt:
        return _fail("cancelled", EXIT_CANCELLED)
    except Exception as exc:
        error = _leaf(exc)
        if isinstance(error, BrokenPipeError):
            # The reader went away (`agentflow run … | head`): stop quietly, as other tools do.
            with contextlib.suppress(OSError, ValueError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            return EXIT_OK
        if isinstance(error, ValueError | TypeError):  # a bad base URL, an unavailable runtime…
            return _fail(str(error), EXIT_USAGE)
        return _fail(f"{type(error).__name__}: {error}", EXIT_FAILED)


def _leaf(exc: BaseException) -> BaseException:
    """The first plain exception inside (nested) exception groups (a task group's), stopping at a group that
    is an error of its own (``AllModelsFailedError``: every model failed, which says more than its first)."""
    from .model.errors import ModelError

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions and not isinstance(exc, ModelError):
        exc = exc.exceptions[0]
    return exc


# --- the run ------------------------------------------------------------------------------------------------


def _emitter(use_json: bool) -> Callable[[Any], None]:
    from .demo.render import Renderer, json_line, use_color

    if use_json:
        binary: IO[bytes] = sys.stdout.buffer

        def write_json(event: Any) -> None:
            binary.write(json_line(event))
            binary.flush()

        return write_json
    return Renderer(sys.stdout, color=use_color(sys.stdout))


@attrs.define
class _Interrupts:
    """How many times the user pressed Ctrl-C (or sent SIGTERM) during the run, and the first signal's exit
    code (130 for Ctrl-C, 143 for SIGTERM)."""

    count: int = 0
    code: int = EXIT_CANCELLED


async def _watch_signals(run: Any, interrupts: _Interrupts, *, task_status: TaskStatus[None]) -> None:
    """First SIGINT/SIGTERM: cancel the run (it ends with ``RunCancelled``); second: stop waiting for it."""
    try:
        receiver = anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM)
        with receiver as signals:
            task_status.started()
            async for received in signals:
                interrupts.count += 1
                if interrupts.count == 1:
                    interrupts.code = EXIT_TERMINATED if received == signal.SIGTERM else EXIT_CANCELLED
                    await run.cancel()
                else:
                    _abandon(interrupts.code)
    except NotImplementedError:  # no signal receiver on this platform: Ctrl-C raises KeyboardInterrupt
        task_status.started()


def _abandon(code: int) -> NoReturn:
    """Leave now, clean-up or not: the run's clean-up (memory, a tool's own) is shielded from cancellation,
    so asking twice means not waiting for it at all."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    _fail("cancelled; clean-up abandoned", code)
    os._exit(code)


async def _run(args: argparse.Namespace, config: CliConfig) -> int:
    from .agent.agent import Agent
    from .agent.agents import Agents
    from .agent.options import AgentOptions
    from .demo.responder import respond
    from .demo.tools import BUILTIN_TOOLS
    from .events import RunFailed
    from .providers.openai.chat_model import OpenAIChatModel
    from .providers.openai.responses_model import OpenAIResponsesModel
    from .testing import ScriptedServer

    emit = _emitter(args.json)
    async with contextlib.AsyncExitStack() as stack:
        base_url = config.base_url
        if config.offline:
            server = await stack.enter_async_context(ScriptedServer(respond))
            base_url = server.base_url
        assert base_url is not None
        model_type = OpenAIResponsesModel if args.protocol == "responses" else OpenAIChatModel
        model = model_type(base_url=base_url, api_key=config.api_key, model=config.model)
        stack.push_async_callback(model.aclose)
        options = AgentOptions(max_steps=args.max_steps)
        if args.runtime == "deep-research":
            agent = Agents.deep_research(
                model, planner="model", replan_every=args.replan_every, tools=BUILTIN_TOOLS, options=options
            )
        else:
            if args.replan_every is not None:
                raise ValueError("--replan-every applies to --runtime deep-research only")
            agent = Agent(model, runtime=args.runtime, tools=BUILTIN_TOOLS, options=options)
        interrupts = _Interrupts()
        async with agent.stream(args.question) as run, anyio.create_task_group() as tasks:
            await tasks.start(_watch_signals, run, interrupts)
            async for event in run:
                emit(event)
                if isinstance(event, RunFailed):
                    _fail(f"{event.error_type}: {event.error}", EXIT_FAILED)
            tasks.cancel_scope.cancel()
        if run.error is not None:
            return EXIT_FAILED
        if interrupts.count:
            return _fail("cancelled", interrupts.code)
    return EXIT_OK
