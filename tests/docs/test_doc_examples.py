"""Every code example in the docs runs here.

The pages hold no Python of their own: each ```{.python} block includes (pymdownx.snippets) a file, or a
marked section of a file, under ``docs/examples/``. Every example file defines ``async def main()``, which
runs offline against ``agentflow.testing.ScriptedServer`` and asserts what it shows; the web-service
examples are driven over real HTTP by ``tests/web`` instead.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

from agentflow.http.request_guard import guard

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"
# Served and exercised over HTTP (and in headless Chromium) by tests/web.
WEB_EXAMPLES = {"aiohttp_service.py", "fastapi_service.py", "web_agent.py"}
# Examples that build models on real providers' URLs over a transport that answers them itself.
REAL_URLS = {"providers.py"}
# Pages owned by other authors that still hold an inline python block, and the example file (run here) that
# should replace it. Remove an entry once its page includes the example instead.
PENDING_PAGES: dict[str, str] = {}

_FENCE = re.compile(
    r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)(?P=fence)\s*$",
    re.M | re.S,
)
_SNIPPET = re.compile(r'^\s*--8<--\s+"(?P<path>[^":]+)(?::(?P<section>[\w-]+))?"\s*$')


def _load(path: Path) -> ModuleType:
    name = f"agentflow_docs_example_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _runnable() -> list[Path]:
    return sorted(p for p in EXAMPLES.glob("*.py") if p.name not in WEB_EXAMPLES)


def _pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


@pytest.mark.parametrize("path", _runnable(), ids=lambda p: p.name)
async def test_example_runs(
    path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if path.name in REAL_URLS:
        # It names real providers' URLs on purpose; its transport answers them, nothing leaves the machine.
        monkeypatch.setattr(guard, "on", False)
    module = _load(path)
    main = getattr(module, "main", None)
    assert main is not None, f"{path.name} needs an 'async def main()' (or belongs in WEB_EXAMPLES)"
    await main()
    capsys.readouterr()


def test_web_examples_exist() -> None:
    missing = {name for name in WEB_EXAMPLES if not (EXAMPLES / name).is_file()}
    assert not missing


def _is_python(info: str) -> bool:
    """``python``, ``py``, or the attribute form ``{.python}`` (which ``ruff format`` leaves alone)."""
    words = info.strip().strip("{}").split()
    return bool(words) and words[0].lstrip(".") in ("python", "py", "python3")


def _python_blocks(page: Path) -> list[str]:
    return [m["body"] for m in _FENCE.finditer(page.read_text()) if _is_python(m["info"])]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_every_python_block_of_a_page_is_an_example_file(page: Path) -> None:
    if page.name in PENDING_PAGES:
        has_inline = any(
            not _SNIPPET.match(line) for b in _python_blocks(page) for line in b.splitlines() if line
        )
        assert has_inline, f"{page.name} no longer has inline python: remove it from PENDING_PAGES"
        return
    for body in _python_blocks(page):
        lines = [line for line in body.splitlines() if line.strip()]
        assert lines, f"{page.name}: an empty python block"
        for line in lines:
            match = _SNIPPET.match(line)
            assert match, (
                f'{page.name}: python blocks may only include example files (--8<-- "docs/examples/x.py"), '
                f"so that the test suite runs them; found: {line!r}"
            )
            target = ROOT / match["path"]
            assert target.is_file(), f"{page.name}: {match['path']} does not exist"
            assert target.parent == EXAMPLES, f"{page.name}: {match['path']} is not under docs/examples/"
            if match["section"]:
                text = target.read_text()
                for marker in ("start", "end"):
                    assert f"# --8<-- [{marker}:{match['section']}]" in text, (
                        f"{page.name}: {match['path']} has no section {match['section']!r} ({marker} marker)"
                    )


def test_every_example_file_is_shown_in_the_docs() -> None:
    shown = {
        Path(m["path"]).name
        for page in _pages()
        for body in _python_blocks(page)
        for line in body.splitlines()
        if (m := _SNIPPET.match(line))
    }
    shown |= {Path(target.split(":")[0]).name for target in PENDING_PAGES.values()}
    unused = {p.name for p in EXAMPLES.glob("*.py")} - shown
    assert not unused, f"example files no page includes: {sorted(unused)}"
