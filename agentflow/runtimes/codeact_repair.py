"""Read a CodeAct protocol object that is almost JSON: the slips models make when they write code or prose
into a JSON string by hand.

Three slips are common, and unambiguous once the object is known to be a protocol message (it starts like
``{"type": "code"`` or ``{"type": "final"``, and holds only the protocol's four keys):

- an escape JSON does not know: ``\\d`` in a regular expression, ``\\'``, a Windows path ``C:\\Users``.
  It is kept as written, backslash and all, which is what the writer meant in Python source or in a path
  (only ``\\'`` in the final answer's text is read as the apostrophe it stands for);
- a trailing comma before the closing brace;
- a double quote left unescaped inside the ``code`` or ``output`` string
  (``"output": "It is called "Dune"."``). The string then runs to the last unescaped quote that can end it:
  one followed by ``, "<another protocol key>":`` (the first such), or else by the object's ``}`` (the last
  such in the answer, or in the Markdown fence the object is in).

``repair_object`` is only the fallback of ``codeact_protocol.parse_answer`` for an object that is not valid
JSON; the JSON escapes that exist (``\\n``, ``\\"``, ``\\u00e9``…) keep their meaning. Pure functions, no
I/O. Each call reads the text from the object's start once or twice (linear), and ``parse_answer`` bounds
how many it makes.
"""

from __future__ import annotations

import re
from typing import Final

import attrs

__all__ = ["REPAIRABLE", "RepairedObject", "repair_object"]

REPAIRABLE: Final = re.compile(
    r'\{\s*(?:"(?:type|language)"\s*:\s*"[^"\\]{0,20}"\s*,\s*){0,2}"type"\s*:\s*"\s*(?:code|final)\s*"',
    re.IGNORECASE,
)
"""The start of an object ``repair_object`` may read: ``"type": "code"`` or ``"final"``, maybe after
``"language"``."""

_LONG_KEYS: Final = frozenset({"code", "output"})
_KEY: Final = re.compile(r'\s*"(type|language|code|output)"\s*:\s*')
_SHORT_STRING: Final = re.compile(r'"((?:[^"\\\n]|\\.){0,100})"')
_AFTER_VALUE: Final = re.compile(r"\s*([,}])")
_QUOTE_OR_ESCAPE: Final = re.compile(r'\\.|"', re.DOTALL)
_CLOSING: Final = re.compile(r'"\s*,?\s*\}')
_CLOSING_BRACE: Final = re.compile(r"\s*\}")
_KNOWN_ESCAPE: Final = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_PROSE_ESCAPE: Final = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt\']))')
_SIMPLE_ESCAPES: Final = {
    "'": "'",
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
_FENCE: Final = "```"


@attrs.frozen
class RepairedObject:
    """What ``repair_object`` read: the object's members (all strings) and where the object ends."""

    value: dict[str, str]
    end: int


def repair_object(text: str, start: int) -> RepairedObject | None:
    """Read the protocol object that opens at ``text[start]`` despite the slips above; ``None`` when it is
    not one (an unknown key, a value that is not a string, a string that never ends, no closing brace).

    >>> repair_object('{"type": "code", "code": "re.findall(\\'\\\\d+\\', s)"}', 0).value["code"]
    "re.findall('\\\\d+', s)"
    >>> repair_object('{"type": "final", "output": "It is "Dune"."}', 0).value
    {'type': 'final', 'output': 'It is "Dune".'}
    >>> repair_object('{"type": "final", "answer": "x"}', 0) is None
    True
    """
    if REPAIRABLE.match(text, start) is None:
        return None
    region_end = _region_end(text, start)
    members: dict[str, str] = {}
    index = start + 1
    while True:
        key_match = _KEY.match(text, index, region_end)
        if key_match is None or key_match[1] in members:
            return None
        key = key_match[1]
        index = key_match.end()
        if key in _LONG_KEYS:
            if not text.startswith('"', index):
                return None
            later = frozenset(("type", "language", "code", "output")) - members.keys() - {key}
            end = _long_string_end(text, index + 1, region_end, later)
            if end is None:
                return None
            members[key] = _unescape(text[index + 1 : end], prose=key == "output")
            index = end + 1
        else:
            short = _SHORT_STRING.match(text, index, region_end)
            if short is None:
                return None
            members[key] = _unescape(short[1], prose=False)
            index = short.end()
        after = _AFTER_VALUE.match(text, index, region_end)
        if after is None:
            return None
        index = after.end()
        if after[1] == ",":
            closing = _CLOSING_BRACE.match(text, index, region_end)  # a trailing comma: ``"x",}``
            if closing is None:
                continue
            index = closing.end()
        return RepairedObject(members, index)


def _region_end(text: str, start: int) -> int:
    """Where the object at ``start`` must end: the closing fence of the Markdown fence it is in, if it is in
    one (so prose after the fence cannot extend its last string), else the end of the text."""
    if text.count(_FENCE, 0, start) % 2 == 0:
        return len(text)
    closing = text.find(_FENCE, start)
    return len(text) if closing == -1 else closing


def _long_string_end(text: str, begin: int, region_end: int, later_keys: frozenset[str]) -> int | None:
    """The index of the quote that ends the ``code`` / ``output`` string starting at ``begin``.

    An unescaped quote followed by ``, "<a key not read yet>":`` ends it (the first one: the object goes on
    after it, so no earlier quote can end the object); without one, the last unescaped quote followed by
    ``}`` does.
    """
    member = re.compile(r'"\s*,\s*"(?:' + "|".join(sorted(later_keys)) + r')"\s*:') if later_keys else None
    last_closing: int | None = None
    for found in _QUOTE_OR_ESCAPE.finditer(text, begin, region_end):
        if found[0] != '"':
            continue  # an escape, ``\\"`` included: never the end
        quote = found.start()
        if member is not None and member.match(text, quote, region_end):
            return quote
        if _CLOSING.match(text, quote, region_end):
            last_closing = quote
    return last_closing


def _unescape(raw: str, *, prose: bool) -> str:
    """``raw`` with JSON's escapes decoded; a backslash before anything else stays as written, except ``\\'``
    in ``prose`` (the final answer's text), where it can only mean the apostrophe (in code it may be Python's
    own escape, ``'it\\'s'``)."""
    decoded = (_PROSE_ESCAPE if prose else _KNOWN_ESCAPE).sub(_escape_value, raw)
    try:
        # ``\\ud83d\\ude00`` decodes to two surrogates: joined into the one character they stand for.
        return decoded.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeError:  # a lone surrogate: shown as the replacement character, as JSON text cannot hold it
        return decoded.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _escape_value(match: re.Match[str]) -> str:
    if match[1] is not None:
        return chr(int(match[1], 16))
    return _SIMPLE_ESCAPES[match[2]]
