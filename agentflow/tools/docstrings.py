"""Tool and parameter descriptions from docstrings (Google, NumPy, reST and Epydoc styles, auto-detected).

A thin wrapper over ``docstring-parser``, imported on first use so ``import agentflow`` stays light (it
costs ~4 ms). Pure: text in, descriptions out.
"""

from __future__ import annotations

import inspect

import attrs

__all__ = ["DocInfo", "parse_docstring"]


@attrs.frozen
class DocInfo:
    """A parsed docstring: the description (summary and body, without the sections) and per-parameter text."""

    description: str = ""
    params: dict[str, str] = attrs.field(factory=dict)


def parse_docstring(doc: str | None) -> DocInfo:
    """Split a docstring into a description and parameter descriptions.

    >>> info = parse_docstring('''Weather for a city.
    ...
    ...     Args:
    ...         city: The city name.
    ...     ''')
    >>> info.description, info.params
    ('Weather for a city.', {'city': 'The city name.'})
    """
    if not doc or not doc.strip():
        return DocInfo()
    text = inspect.cleandoc(doc)
    import docstring_parser

    try:
        parsed = docstring_parser.parse(text)
    except docstring_parser.ParseError:
        # Keep every word the author wrote rather than guessing at a malformed section.
        return DocInfo(text)
    parts = [p.strip() for p in (parsed.short_description, parsed.long_description) if p and p.strip()]
    params: dict[str, str] = {}
    for param in parsed.params:
        if param.arg_name and param.description:
            # "*args"/"**kwargs" style names and "name (type)" leftovers are reduced to the bare name.
            name = param.arg_name.lstrip("*").split(" ")[0]
            params[name] = " ".join(param.description.split())
    return DocInfo("\n\n".join(parts), params)
