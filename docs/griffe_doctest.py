"""A Griffe extension for the API reference: agentflow's docstrings use doctest examples (``>>>``) and
reST literal blocks (``Usage::``); Markdown would render the first as block quotes. This wraps each doctest
block in a ``pycon`` fence and each ``::`` block in a ``python`` fence. Build-time only: nothing imports it.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any

import griffe

_LITERAL_INTRO = re.compile(r"::\s*$")


def _fence(lines: list[str], language: str) -> list[str]:
    body = textwrap.dedent("\n".join(lines)).splitlines()
    return [f"```{language}", *body, "```"]


def fence_examples(text: str) -> str:
    """Wrap doctest blocks and reST literal blocks of a docstring in Markdown code fences."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    in_fence = False
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            in_fence = not in_fence
            out.append(line)
            i += 1
            continue
        if not in_fence and stripped.startswith(">>>"):
            block: list[str] = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            out.extend(_fence(block, "pycon"))
            continue
        if not in_fence and _LITERAL_INTRO.search(line) and i + 1 < len(lines):
            base = len(line) - len(line.lstrip())
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            if j < len(lines) and len(lines[j]) - len(lines[j].lstrip()) > base:
                block = []
                while j < len(lines) and (
                    not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > base
                ):
                    block.append(lines[j])
                    j += 1
                while block and not block[-1].strip():
                    block.pop()
                out.append(_LITERAL_INTRO.sub(":", line))
                out.append("")
                out.extend(_fence(block, "python"))
                out.append("")
                i = j
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Fence the examples of every docstring Griffe loads."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_examples(obj.docstring.value)
