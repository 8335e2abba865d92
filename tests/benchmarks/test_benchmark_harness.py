"""``python -m benchmarks --quick`` runs every measurement end to end (tiny sizes; no timing assertions).

The harness runs as ``make bench`` runs it: a subprocess from the repository root, which starts its own
server subprocesses. Only the shape of the results is checked, never a figure's size.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parents[2]
KEYS = [
    "import_time",
    "chat_call",
    "chat_stream",
    "responses_stream",
    "agent_loop",
    "agent_many",
    "agent_many_rss",
    "agent_stream",
    "codeact",
]
GUARD_SECONDS = 120  # only a guard against a hung run; the quick run takes a few seconds


def run_benchmarks(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=GUARD_SECONDS,
        check=False,
    )


def test_quick_run_measures_everything_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = run_benchmarks("--quick", "--json", str(out))
    assert done.returncode == 0, done.stderr
    document = orjson.loads(out.read_bytes())
    assert document["quick"] is True
    assert document["environment"]["cores"] >= 1
    measurements = {m["key"]: m for m in document["measurements"]}
    assert sorted(measurements) == sorted(KEYS)
    for key in ("chat_call", "chat_stream", "responses_stream", "agent_loop", "agent_many", "agent_stream"):
        figures = measurements[key]["figures"]
        assert {"floor", "agentflow"} <= set(figures), key
        assert figures["floor"]["x_floor"] == 1.0
        assert all(f["median"] > 0 for f in figures.values()), key
    assert measurements["import_time"]["targets"]
    codeact = measurements["codeact"]
    # The sandbox is measured when it works here, else the table says why it was skipped.
    assert codeact["skipped"] or "executor start (wall)" in codeact["figures"]
    assert "targets:" in done.stdout
    for measurement in measurements.values():
        assert measurement["failed"] is None, measurement
        assert measurement["title"] in done.stdout


def test_only_runs_the_chosen_measurements(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = run_benchmarks("--quick", "--only", "chat_call", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert [m["key"] for m in orjson.loads(out.read_bytes())["measurements"]] == ["chat_call"]


def test_an_unknown_measurement_is_refused_by_name() -> None:
    done = run_benchmarks("--only", "chat_cal")
    assert done.returncode == 2
    assert "unknown measurement(s) ['chat_cal']" in done.stderr
