"""What code inside the sandbox can call, described for the model's prompt.

The wording lives here, next to the runner that implements it, so the CodeAct instructions and the
sandbox cannot drift apart. Pure text; the runtime decides where it goes in the prompt.
"""

from __future__ import annotations

from ._runner import is_stub_name

__all__ = ["callable_by_name", "code_api_text"]


def callable_by_name(tool_name: str) -> bool:
    """Whether code can call ``tool_name`` as a function; other names need ``call_tool("name", ...)``.

    A name qualifies when it is a Python identifier, not a keyword, not private, and shadows neither a
    builtin nor a sandbox helper.

    >>> callable_by_name("get_weather"), callable_by_name("get-weather"), callable_by_name("print")
    (True, False, False)
    """
    return is_stub_name(tool_name)


def code_api_text(
    *,
    persistent: bool = True,
    network: bool = False,
    site_packages: bool = False,
    per_request: bool = False,
    threads: bool = False,
    python_version: str | None = None,
) -> str:
    """The paragraph that tells the model how its code reaches tools and ends a step.

    ``per_request``: the interpreter's state lasts for one request only (CodeAct gives each run its own
    sandbox), so code the model sees from earlier requests in the conversation has to be run again.
    ``threads``: the code may start threads and processes (``ExecutionLimits.max_processes`` above 0);
    without them, the text says so and points at the helpers that run calls at the same time, since code
    reaching for a ``ThreadPoolExecutor`` only fails with ``RuntimeError: can't start new thread``.

    >>> "final_answer(x)" in code_api_text()
    True
    >>> code_api_text(per_request=True).splitlines()[-2][:88]
    'Variables, functions and imports persist between your code steps for the current request'
    >>> "cannot start threads" in code_api_text(threads=True)
    False
    >>> code_api_text(python_version="3.11", threads=True).splitlines()[-1][:30]
    'The code runs on Python 3.11: '
    """
    lines = [
        "Tools are Python functions in your code: call one by name with keyword arguments, e.g. "
        '`search(query="x")` (or positional ones, in the order listed), or with `call_tool("tool_name", '
        "{...})` (works for every tool name). "
        "A call returns the tool's result as a Python value; a failed call raises `ToolError`, whose "
        "message says why.",
        'To run several tool calls at the same time use `parallel(("tool_a", {...}), ("tool_b", {...}))` '
        'or `map_tool("tool_name", [args1, args2, ...])`; both return the results in order. Top-level '
        '`await` works too: `await asyncio.gather(acall_tool("a", {...}), acall_tool("b", {...}))`.',
        "The result of a code step is the value of its last expression (or of a top-level `return x`). "
        "Call `final_answer(x)` to finish with `x` as the final answer. `print()` output is shown to you, "
        "cut when it is long.",
    ]
    if not persistent:
        state = "Every code step starts in a fresh interpreter: nothing persists between steps."
    elif per_request:
        state = (
            "Variables, functions and imports persist between your code steps for the current request only: "
            "each new user request starts in a fresh interpreter, so anything defined by code earlier in "
            "the conversation is gone and must be defined or computed again."
        )
    else:
        state = "Variables, functions and imports persist between your code steps."
    reach = "The code has network access." if network else "The code has no network access."
    packages = (
        "Installed packages can be imported."
        if site_packages
        else "Only the Python standard library is available."
    )
    lines.append(f"{state} {reach} {packages} Tool calls are how you reach the outside world.")
    if python_version:
        # Models otherwise write for whichever Python they saw most (3.12's f-strings, 3.13's modules).
        lines.append(f"The code runs on Python {python_version}: use only what that version has.")
    if not threads:
        lines.append(
            "The code cannot start threads or processes (no `threading`, `concurrent.futures` pools, "
            "`subprocess` or `multiprocessing`): use `parallel`, `map_tool` or `asyncio` to run tool calls "
            "at the same time."
        )
    return "\n".join(lines)
