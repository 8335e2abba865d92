"""Measurement 4: what ``import agentflow`` costs on top of importing its four runtime dependencies.

Each sample is a fresh interpreter (``python -c``) that times one import statement with
``time.perf_counter`` (interpreter start-up excluded), with bytecode cached as in an installed package
(see ``bytecode_cache``). Variants alternate run by run, so all see the same disk cache and machine load;
the median is reported:

- deps: ``import aiohttp, attrs, orjson, anyio``, with anyio's lazily imported parts loaded;
- agentflow: the same, then ``import agentflow`` (whatever it imports today);
- agentflow, all public: the same, then ``import agentflow`` and every public module of the package that
  imports here (providers, agent, runtimes, tools, sandbox…) — what ``import agentflow`` costs once it
  exports the public names (``agentflow.OpenAIChatModel``, ``agentflow.Agent``…), and what any real
  program loads.

Every variant starts with the deps statement, so the paired difference is exactly what agentflow adds.
(Timing a bare ``import agentflow`` against deps would subtract the anyio parts that deps loads and
agentflow does not, and under-report agentflow by their cost.)

The target (issue 2 §6) is on the difference to deps, paired run by run: ≤ 15 ms, checked for both.
``top_offenders`` reads ``python -X importtime`` and lists the modules that agentflow adds to its
dependencies, by their own (self) time.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from .harness import Config, Figure, Measurement, Target

__all__ = ["DEPS", "measure", "top_offenders"]

# anyio ≥ 4.12 imports its parts lazily, on first use: loading them all here keeps their cost out of
# agentflow's figure (they are anyio's, and any anyio user pays them).
DEPS = "import aiohttp, attrs, orjson, anyio; [getattr(anyio, name) for name in dir(anyio)]"
PUBLIC_MODULES = (
    "agentflow.providers.openai.chat_model",
    "agentflow.providers.openai.responses_model",
    "agentflow.agent",
    "agentflow.runtimes",
    "agentflow.tools",
    "agentflow.bus",
    "agentflow.sandbox",
)
ALL = "agentflow, all public"
_TIMER = "import time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t)"


@contextmanager
def bytecode_cache() -> Iterator[Mapping[str, str]]:
    """An environment whose interpreters write and reuse bytecode in a private temporary cache.

    An installed package has its ``.pyc`` files; a source checkout run with ``PYTHONDONTWRITEBYTECODE``
    would compile every agentflow module at every import and blame agentflow for the compiler. The
    cache lives outside the tree (``PYTHONPYCACHEPREFIX``) and is deleted afterwards.
    """
    with tempfile.TemporaryDirectory(prefix="agentflow-bench-pyc-") as prefix:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = prefix
        yield env


def _time_import(statement: str, env: Mapping[str, str]) -> float:
    """Seconds that ``statement`` takes in a fresh interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", _TIMER.format(stmt=statement)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return float(out.stdout.strip())


def _importtime(statement: str, env: Mapping[str, str]) -> list[tuple[str, int, int]]:
    """``(module, self µs, cumulative µs)`` for every module ``statement`` imports (``-X importtime``)."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    rows = []
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = (part.strip() for part in line[len("import time:") :].split("|"))
        rows.append((name.strip(), int(self_us), int(cumulative_us)))
    return rows


def top_offenders(
    statement: str, env: Mapping[str, str], count: int = 10, runs: int = 3
) -> list[tuple[str, float]]:
    """The modules ``statement`` imports beyond the dependencies, by self time (ms, best of ``runs``)."""
    baseline = {name for name, _, _ in _importtime(DEPS, env)}
    best: dict[str, int] = {}
    for _ in range(runs):
        for name, us, _ in _importtime(statement, env):
            if name not in baseline:
                best[name] = min(us, best.get(name, us))
    extra = [(name, us / 1e3) for name, us in best.items()]
    return sorted(extra, key=lambda row: row[1], reverse=True)[:count]


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except Exception:  # a package under construction may fail in any way: leave it out, and say so
        return False
    return True


def measure(config: Config) -> Measurement:
    """Median import time of each variant, in ms; the targets are on the paired differences to deps."""
    modules = [m for m in PUBLIC_MODULES if _importable(m)]
    variants = {
        "deps": DEPS,
        "agentflow": f"{DEPS}; import agentflow",
        ALL: f"{DEPS}; import agentflow, " + ", ".join(modules),
    }
    samples: dict[str, list[float]] = {name: [] for name in variants}
    with bytecode_cache() as env:
        for statement in variants.values():
            _time_import(statement, env)  # compiles into the cache; not timed
        for _ in range(max(1, config.import_runs)):
            for name, statement in variants.items():
                samples[name].append(_time_import(statement, env) * 1e3)
        offenders = top_offenders(variants[ALL], env, count=8, runs=1 if config.quick else 3)
    figures = [Figure(name, values) for name, values in samples.items()]
    # The added cost, paired run by run (each pair ran back to back in the same conditions).
    for name in ("agentflow", ALL):
        added = [a - d for a, d in zip(samples[name], samples["deps"], strict=True)]
        figures.append(Figure(f"{name} − deps", added, note="paired per run", ratios=False))
    result = Measurement(
        key="import_time",
        title="import time (fresh interpreter, start-up excluded)",
        unit="ms",
        figures=figures,
        targets=[Target("agentflow − deps", 15.0), Target(f"{ALL} − deps", 15.0)],
        floor="deps",
        sdk=None,
    )
    result.notes.append(f"median of {config.import_runs} fresh interpreters per variant")
    missing = sorted(set(PUBLIC_MODULES) - set(modules))
    result.notes.append(
        f"'{ALL}' imports {', '.join(modules)}"
        + (f" (left out, not importable: {missing})" if missing else "")
    )
    if offenders:
        listed = ", ".join(f"{name} {ms:.1f}" for name, ms in offenders)
        result.notes.append(f"-X importtime, slowest modules agentflow adds (self ms): {listed}")
    return result
