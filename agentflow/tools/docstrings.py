"""Tool, parameter and return descriptions from docstrings (Google, NumPy, reST and Epydoc styles,
auto-detected).

A thin wrapper over ``docstring-parser``, imported on first use so ``import agentflow`` stays light (it
costs ~4 ms). Pure: text in, descriptions out.
"""

from __future__ import annotations

import inspect

import attrs

__all__ = ["DocInfo", "parse_docstring"]


@attrs.frozen
class DocInfo:
    """A parsed docstring: the description (summary and body, without the sections), per-parameter text, and
    what its ``Returns`` section says (``""`` when it has none)."""

    description: str = ""
    params: dict[str, str] = attrs.field(factory=dict)
    returns: str = ""


def parse_docstring(doc: str | None) -> DocInfo:
    """Split a docstring into a description, parameter descriptions and the description of what it returns.

    >>> info = parse_docstring('''Weather for a city.
    ...
    ...     Args:
    ...         city: The city name.
    ...
    ...     Returns:
    ...         The temperature in degrees Celsius.
    ...     ''')
    >>> info.description, info.params, info.returns
    ('Weather for a city.', {'city': 'The city name.'}, 'The temperature in degrees Celsius.')
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
    returned = parsed.returns.description if parsed.returns is not None else None
    returns = " ".join(returned.split()) if returned else ""
    return DocInfo("\n\n".join(parts), params, returns)
