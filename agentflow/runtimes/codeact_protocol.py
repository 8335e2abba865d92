"""The CodeAct message protocol: read a model's answer, and write what a code step produced.

The model answers each turn with one JSON object::

    {"type": "code", "language": "python", "code": "..."}     run this code
    {"type": "final", "output": "..."}                       the final answer

``parse_answer`` turns the answer text into a ``CodeMessage``, a ``FinalMessage`` or ``NotProtocol`` (with
the reason), tolerating what models actually send: Markdown fences and prose around the object, a non-protocol
``{…}`` before the real one, raw newlines inside the JSON strings (invalid JSON, but the most common slip
when a model writes code into a string), escapes JSON does not know and stray quotes inside the strings
(``codeact_repair``), ``"py"``/``"python3"`` as the language, the code as a list of lines, several code
objects in one answer (joined), and code in Markdown fences or ``<code>`` blocks instead of JSON (the format
of smolagents and of models trained on it): fences tagged as Python, and untagged fences whose text reads as
Python code; a fence tagged with another programming language is code the runtime will not run, and says
so. A leading ``<think>…</think>`` (or ``<thinking>…</thinking>``) block is reasoning a server left in the
answer (``think_tags=None``, as MiniMax-M2 wants): it is skipped, so an object or a fence the model only
considered there is never run nor taken as the answer. It reads at most the first ``MAX_ANSWER_CHARS``
characters of the answer after that block, in time linear in them (and parses at most ``_SNIFF_CHARS`` of
its untagged fences), so a runaway answer (a megabyte of ``{``) cannot stall the event loop.

``code_result_text`` / ``code_error_text`` write the outcome of a step as the reference's memory texts,
``CODE_RESULT: {"result":…,"stdout":…}`` and ``CODE_ERROR: {"error":…,"stdout":…}`` (compact JSON, keys in
that order; ``stdout`` and ``stderr`` only when non-empty, then a ``note`` when the runtime has one, such as
code of the same answer that did not run); ``step_text`` shows the model at most a given
number of characters of a step's value (``result_preview``) and of what it printed (``output_preview``),
with a marker saying what was cut.

Pure functions and values: no I/O, no awaits. JSON goes through orjson.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final, Literal, TypeAlias

import attrs
import orjson

from ..exact_json import dumps as exact_dumps
from ..providers.openai.think_tags import DEFAULT_THINK_TAGS, ThinkTags, split_think_block
from ..sandbox.code_result import CodeResult
from .codeact_repair import REPAIRABLE, repair_object
from .json_text import MAX_SCANNED_CHARS, json_spans

__all__ = [
    "CODE_ERROR_PREFIX",
    "CODE_RESULT_PREFIX",
    "MAX_ANSWER_CHARS",
    "OTHER_LANGUAGES",
    "OUTPUT_CUT",
    "PYTHON_NAMES",
    "RESULT_TRUNCATED",
    "Answer",
    "CodeMessage",
    "FinalMessage",
    "NotProtocol",
    "answer_body",
    "answer_text",
    "code_error_text",
    "code_result_text",
    "fenced_code",
    "output_preview",
    "parse_answer",
    "result_preview",
    "step_text",
]

CODE_RESULT_PREFIX: Final = "CODE_RESULT: "
CODE_ERROR_PREFIX: Final = "CODE_ERROR: "
PYTHON_NAMES: Final = frozenset({"python", "python3", "py", "py3", "ipython", "ipython3"})
"""The ``language`` values and fence tags read as Python (compared lower-cased); a missing or blank language
is Python too, and so is an untagged fence whose text reads as Python code."""
OTHER_LANGUAGES: Final = frozenset(
    {
        "bash", "sh", "shell", "zsh", "fish", "powershell", "pwsh", "ps1", "cmd", "bat", "batch",
        "javascript", "js", "jsx", "node", "nodejs", "typescript", "ts", "tsx",
        "ruby", "rb", "perl", "php", "lua", "r", "julia", "sql",
        "go", "golang", "rust", "rs", "java", "kotlin", "scala", "swift", "c", "cpp", "c++", "csharp", "cs",
    }
)  # fmt: skip
"""Fence tags (lower-cased) of programming languages other than Python: a block tagged so is code the model
may have meant to run, and only Python runs. Other tags (``json``, ``text``, ``yaml``, ``console``…) mark data
or sample output: such blocks are neither code nor a reason to send an answer back."""
RESULT_TRUNCATED: Final = (
    " [... result truncated: {missing} more characters not shown; keep big values in variables and "
    "return only the part you need to see ...]"
)
"""The marker ending a step's value cut by ``result_preview`` (``{missing}``: characters left out)."""
OUTPUT_CUT: Final = "\n[... {missing} characters of output cut here; print less, or only what you need ...]\n"
"""The marker ``output_preview`` puts where it cut the middle of a step's printed output."""

MAX_ANSWER_CHARS: Final = MAX_SCANNED_CHARS
"""The most characters of an answer ``parse_answer`` reads (as many as the model-backed planner reads).

Finding the objects is linear in the text, but each candidate is decoded on its own, so the text is bounded
too: a longer answer is read from its start, and a ``NotProtocol`` reason says the rest was not read.
"""
_MAX_CANDIDATES = 64
"""How many ``{`` positions an answer is searched from (bounds the decoding work on brace-heavy prose)."""
_MAX_UNCLOSED = 4
"""How many of them may run to the end of the answer without closing before the search gives up."""
_CODE_TYPE = re.compile(
    r'\s*(?:"[^"\\]{0,20}"\s*:\s*"[^"\\]{0,20}"\s*,\s*){0,4}"type"\s*:\s*"code"', re.IGNORECASE
)
"""An object that starts as a code message: ``"type": "code"``, maybe after a few short string members
(``"language": "python"``)."""
_PROTOCOL_START = re.compile(
    r"""\{\s*(?:(["'])[^"'\\]{0,20}\1\s*:\s*(["'])[^"'\\]{0,20}\2\s*,\s*){0,4}"""
    r"""(["'])type\3\s*:\s*(["'])\s*(code|final)\s*\4""",
    re.IGNORECASE,
)
"""Anywhere in an answer: the start of a code or final object (the model tried to write the protocol), also
in single quotes (a Python dict)."""
_LEADING_OBJECT = re.compile(
    r"""\s*(?:(?:```|~~~)[\w-]*\s*)?\{\s*(["'])(?:type|code|output|language)\1\s*:"""
)
"""An answer that opens with an object whose first key is one of the protocol's."""
_MAX_REPAIRS = 4
"""How many objects of one search ``codeact_repair`` may try to read (each read is linear in the text)."""
_MAX_JOINED = 32
"""The most code objects (or fenced blocks) of one answer joined into one step."""
_FENCE_OPEN = re.compile(r"`{3,}|~{3,}")
"""A Markdown fence: three or more backticks or tildes, closed by as many of the same (or more)."""
_SNIFF_CHARS = 16_000
"""How many characters of its untagged fences an answer may have parsed to tell code from other text (parsing
costs about a millisecond per 1,500 characters, on the event loop)."""
_TOP_LEVEL_LINE = re.compile(r"\n(?=[^\s)\]}])")
"""A line break before a line that starts a top-level statement (where a long block is cut to be parsed)."""
_CODE_OPEN = "<code>"
_REASONING_TAGS: Final[tuple[ThinkTags, ...]] = (DEFAULT_THINK_TAGS, ("<thinking>", "</thinking>"))
"""The tag pairs of a leading reasoning block ``answer_body`` skips."""
_CODE_CLOSE = "</code>"


@attrs.frozen
class CodeMessage:
    """``{"type": "code", …}``: the model wants ``code`` run. ``language`` is as the model wrote it.

    >>> CodeMessage("1 + 1", "Python3").is_python, CodeMessage("1", "js").is_python
    (True, False)
    """

    code: str
    language: str = "python"
    skipped: tuple[str, ...] = attrs.field(default=(), eq=False, repr=False)
    """The languages of code the same answer held that will not run (a ```` ```bash ```` fence after Python
    fences, a JavaScript code object after a Python one): the model is told, in the step's outcome."""

    @property
    def is_python(self) -> bool:
        """Whether ``language`` names Python (see ``PYTHON_NAMES``)."""
        return not self.language.strip() or self.language.strip().lower() in PYTHON_NAMES


@attrs.frozen
class FinalMessage:
    """``{"type": "final", "output": …}``: the final answer (a non-string output as compact JSON).

    ``value`` is the output as decoded (a dict, a list, a number…; the text itself by default), for an agent
    with an ``output_type``; ``output`` is its text, so two messages with the same text are equal.

    >>> parse_answer('{"type": "final", "output": {"total": 3}}').value
    {'total': 3}
    """

    output: str
    value: Any = attrs.field(
        default=attrs.Factory(lambda self: self.output, takes_self=True), eq=False, repr=False
    )


@attrs.frozen
class NotProtocol:
    """An answer that holds no protocol object: the raw ``text``, and ``reason`` saying what was wrong.

    ``cut_code``: the answer is longer than ``MAX_ANSWER_CHARS`` and its protocol object, a code object, runs
    past that point, so it was not read whole. That is code too long to read, not an answer for the user.

    ``attempt``: what the answer seems to have tried to write, though it could not be read: ``"code"`` (it
    holds the start of a code object, or a Python fence or ``<code>`` block that never closes), ``"final"``
    (the start of a final object), ``"other"`` (it opens with an object keyed like the protocol's, such as
    ``{"type": "search"}``), or ``None``: plain prose. Only plain prose can be an answer for the user.

    ``other_code``: prose (``attempt`` ``None``) whose only code is in fences tagged with another language
    (``OTHER_LANGUAGES``): the blocks of the first such language, joined. It may be code the model meant to
    run or an example in an answer for the user; the runtime asks the model which, a bounded number of times.

    >>> parse_answer('{"type": "final", "output": {"broken": }').attempt
    'final'
    >>> parse_answer("Paris is the capital.").attempt is None
    True
    >>> parse_answer("List them:\\n```bash\\nls -la\\n```").other_code
    CodeMessage(code='ls -la', language='bash')
    """

    text: str
    reason: str
    cut_code: bool = False
    attempt: Literal["code", "final", "other"] | None = None
    other_code: CodeMessage | None = None


Answer: TypeAlias = CodeMessage | FinalMessage | NotProtocol
"""What ``parse_answer`` returns."""


def parse_answer(text: str) -> Answer:
    """Read one model answer: its protocol objects decide, else its fenced Python code.

    Objects are found by ``json_text.json_spans``, whose scanner understands JSON strings, so fences, prose
    and braces inside the code do not confuse it; an object that is not valid JSON, or valid JSON but not a
    protocol message, is skipped in favour of a later (or nested) one. An object that starts as a protocol
    message but is not valid JSON is read by ``codeact_repair`` (unknown escapes such as ``\\d`` kept, a stray
    quote inside the code or output). A code object without a string ``code``, or a final object without
    ``output``, is not the protocol (nothing is guessed or dropped); ``"output": null`` is ``""``.

    The first protocol object decides. A final one is the answer; a code one is joined by the code objects
    that follow it (up to a final object, or one in another language, which ``skipped`` names), as the
    model wrote them to run in that order. An answer with no protocol object but Python in Markdown fences
    (see ``fenced_code``) or ``<code>…</code>`` blocks is a code message too, its blocks joined, and
    ``skipped`` names the languages of its fences in ``OTHER_LANGUAGES``; without Python, such fences make
    it a ``NotProtocol`` with ``other_code``. Only the first ``MAX_ANSWER_CHARS`` characters are read, of the
    answer after a leading reasoning block (``answer_body``).

    >>> parse_answer('Sure!\\n```json\\n{"type": "code", "language": "python", "code": "2 ** 10"}\\n```')
    CodeMessage(code='2 ** 10', language='python')
    >>> parse_answer('{"type": "final", "output": {"total": 3}}')
    FinalMessage(output='{"total":3}')
    >>> parse_answer("Thought: compute it.\\n```py\\n2 ** 10\\n```")
    CodeMessage(code='2 ** 10', language='python')
    >>> parse_answer("The answer is 42.").reason
    'the answer holds no JSON object'
    >>> parse_answer('<think>Or {"type": "final", "output": "a guess"}?</think>{"type": "code", "code": "1"}')
    CodeMessage(code='1', language='python')
    """
    body = answer_body(text)
    read = body[:MAX_ANSWER_CHARS]
    found = _next_message(read, 0)
    if isinstance(found, _Miss):
        return _not_protocol(text, len(body), read, found)
    message, end = found
    if isinstance(message, FinalMessage):
        return message
    codes = [message]
    skipped: tuple[str, ...] = ()
    while len(codes) < _MAX_JOINED:
        following = _next_message(read, end)
        if isinstance(following, _Miss):
            break
        other, end = following
        if not isinstance(other, CodeMessage):
            break  # what a final object after code claims, the code's outcome will tell
        if not _same_language(message, other):
            if message.is_python:
                skipped = (other.language,)  # the model is told it did not run
            break
        codes.append(other)
    if len(codes) == 1 and not skipped:
        return message
    return CodeMessage(_joined(c.code for c in codes), message.language, skipped)


def _same_language(first: CodeMessage, other: CodeMessage) -> bool:
    """Whether two code objects are in one language (``"python"`` and ``"py"`` are)."""
    if first.is_python or other.is_python:
        return first.is_python and other.is_python
    return first.language.lower() == other.language.lower()


def answer_body(text: str) -> str:
    """``text`` without a leading reasoning block: a ``<think>…</think>`` or ``<thinking>…</thinking>`` block
    a server left inline (see ``providers.openai.think_tags``, whose rules hold: only a block the text opens
    with, only the first; one never closed was all reasoning, so nothing is left). Other text is returned as
    it is.

    What the model thought is not what it answered: an object or a fence in there is a draft, never code to
    run or a final answer.

    >>> answer_body("<think>\\nTry ```python\\nimport os\\n```?\\n</think>\\n\\nThe answer is 4.")
    'The answer is 4.'
    >>> answer_body("<thinking>cut here"), answer_body("Use <think> tags.")
    ('', 'Use <think> tags.')
    """
    for tags in _REASONING_TAGS:
        split = split_think_block(text, tags)
        if split is not None:
            return split[0]
    return text


@attrs.frozen
class _Miss:
    """No protocol message in the text searched: the best reason why, and whether a code object was cut at
    the read limit."""

    reason: str | None
    rank: int
    cut_code: bool


def _next_message(read: str, offset: int) -> tuple[CodeMessage | FinalMessage, int] | _Miss:
    """The first protocol message in ``read`` from ``offset`` and where it ends, or why there is none."""
    best_reason: str | None = None
    best_rank = -1
    cut_code = False
    repairs = 0
    for span in json_spans(
        read[offset:] if offset else read,
        opening="{",
        nested=True,
        max_spans=_MAX_CANDIDATES,
        max_unclosed=_MAX_UNCLOSED,
    ):
        start = offset + span.start
        if span.error is None:
            message = _message(span.value)
            if not isinstance(message, str):
                return message, offset + span.end
            if best_rank < 2:
                best_reason, best_rank = message, 2
            continue
        if repairs < _MAX_REPAIRS and REPAIRABLE.match(read, start) is not None:
            repairs += 1
            repaired = repair_object(read, start)
            if repaired is not None:
                message = _message(repaired.value)
                if not isinstance(message, str):
                    return message, repaired.end
        if not span.complete and not cut_code:
            # Any unclosed code object, not only the first bad span: a stray "{…}" in the prose before
            # a code object cut at the read limit must not hide it.
            cut_code = _CODE_TYPE.match(read, start + 1) is not None
        if best_rank < 1:
            # A later "{" may still close (prose can open a brace it never closes): the search goes on.
            best_rank = 1
            if span.complete:
                best_reason = f"the JSON object is not valid JSON ({span.error})"
            else:
                best_reason = "the JSON object is not complete (no closing brace)"
    return _Miss(best_reason, best_rank, cut_code)


def _not_protocol(text: str, length: int, read: str, miss: _Miss) -> Answer:
    """An answer without protocol objects (``length`` characters after its reasoning, ``read`` the part
    read): its fenced code, or ``NotProtocol`` saying why."""
    fences = _code_fences(read)
    python = fences.python or _tagged_blocks(read)
    if python:
        return CodeMessage(_joined(python), skipped=tuple(dict.fromkeys(tag for tag, _ in fences.other)))
    if miss.rank == 1 and miss.cut_code and length > MAX_ANSWER_CHARS:
        return NotProtocol(
            text,
            f"the answer is {length} characters long and only its first {MAX_ANSWER_CHARS} are read, so "
            "its code object was cut off; write shorter code (compute or load large data instead of writing "
            "it out in the code)",
            cut_code=True,
            attempt="code",
        )
    reason = miss.reason or "the answer holds no JSON object"
    if length > MAX_ANSWER_CHARS:
        reason += f" (only the first {MAX_ANSWER_CHARS} of its {length} characters were read)"
    attempt = _attempt(read)
    other_code = None
    if attempt is None and fences.other:
        language = fences.other[0][0]
        other_code = CodeMessage(_joined(code for tag, code in fences.other if tag == language), language)
    return NotProtocol(text, reason, attempt=attempt, other_code=other_code)


def fenced_code(text: str) -> str | None:
    """The code of the Python blocks in ``text``, joined: Markdown fences (```` ``` ```` or ``~~~``) tagged
    ``python``/``py``/``ipython`` (``PYTHON_NAMES``: what models trained on other agent formats write) or
    untagged ones whose text reads as Python code, else ``<code>…</code>`` blocks; ``None`` when it has none.

    An untagged block reads as code when it parses as Python and does something: it calls, assigns, imports,
    defines, loops, branches… (``print(x)``, ``x = 1``). Sample output, JSON or a shell command
    (``[1, 2]``, ``total: 3``, ``ls -la``, ``pip install x``) does not; a block that calls ``final_answer(``
    is code even when it does not parse (its ``SyntaxError`` is for the model to see). Blank blocks are
    skipped; a block that never closes (an answer cut short) is not code.

    >>> fenced_code("First:\\n```python\\nx = 1\\n```\\nthen\\n~~~py\\nx + 1\\n~~~")
    'x = 1\\n\\nx + 1'
    >>> fenced_code("<code>\\nfinal_answer(2)\\n</code>"), fenced_code("```json\\n{}\\n```")
    ('final_answer(2)', None)
    >>> fenced_code("Let me compute:\\n```\\nfinal_answer(6 * 7)\\n```"), fenced_code("```\\n[1, 2]\\n```")
    ('final_answer(6 * 7)', None)
    """
    blocks = _code_fences(text).python or _tagged_blocks(text)
    return _joined(blocks) if blocks else None


@attrs.frozen
class _Fence:
    """A Markdown fence: the first word of its info string, lower-cased (``""`` untagged), and its text."""

    tag: str
    body: str
    closed: bool


def _fences(text: str) -> Iterator[_Fence]:
    """The fences of ``text`` in order; the last one may be unclosed (it then runs to the end of the text).

    Found left to right, each search starting past the last fence: linear in the text however many fences it
    opens. A fence opens anywhere (not only at a line start: ``Code:```py``, as models write it) and closes at
    the next run of at least as many of its character, so a ```` ``` ```` inside a ``~~~`` block, or inside a
    longer fence, does not close it.
    """
    index = 0
    while True:
        opening = _FENCE_OPEN.search(text, index)
        if opening is None:
            return
        marker = opening[0]
        line_end = text.find("\n", opening.end())
        words = text[opening.end() : len(text) if line_end == -1 else line_end].split(None, 1)
        tag = words[0].strip("{}.").lower() if words else ""  # ``{.python}``: pandoc's way
        if line_end == -1:
            yield _Fence(tag, "", closed=False)
            return
        closing = text.find(marker, line_end)
        if closing == -1:
            yield _Fence(tag, text[line_end + 1 :], closed=False)
            return
        yield _Fence(tag, text[line_end + 1 : closing], closed=True)
        index = closing + len(marker)


@attrs.frozen
class _CodeFences:
    """The closed, non-blank fences of an answer that hold code: Python (tagged, or untagged code), and the
    ``(tag, code)`` of those in another language (``OTHER_LANGUAGES``)."""

    python: list[str]
    other: list[tuple[str, str]]


def _code_fences(text: str) -> _CodeFences:
    python: list[str] = []
    other: list[tuple[str, str]] = []
    sniff_left = _SNIFF_CHARS
    for fence in _fences(text):
        if len(python) >= _MAX_JOINED or len(other) >= _MAX_JOINED:
            break
        if not fence.closed or not fence.body.strip():
            continue
        if fence.tag in PYTHON_NAMES:
            python.append(fence.body)
        elif fence.tag in OTHER_LANGUAGES:
            other.append((fence.tag, fence.body))
        elif not fence.tag:
            sniffed = min(len(fence.body), sniff_left)
            sniff_left -= sniffed
            if _reads_as_code(fence.body, sniffed):
                python.append(fence.body)
    return _CodeFences(python, other)


def _reads_as_code(block: str, sniffed: int) -> bool:
    """Whether an untagged block is Python code (see ``fenced_code``), judged from its first ``sniffed``
    characters (cut before a top-level line, when the block is longer) and its calls to ``final_answer``.

    Parsing only builds a syntax tree: nothing in the block runs.
    """
    if "final_answer(" in block:
        return True
    head = block
    if sniffed < len(block):
        cut = max((line.start() for line in _TOP_LEVEL_LINE.finditer(block, 0, sniffed)), default=0)
        head = block[:cut]
    if not head.strip():
        return False
    try:
        tree = ast.parse(textwrap.dedent(head))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        # ValueError: a NUL byte; RecursionError / MemoryError: nesting too deep for the parser.
        return False
    return any(_acts(node) for node in ast.walk(tree))


def _acts(node: ast.AST) -> bool:
    """Whether a node of a parsed block does something: a call, or a statement other than a bare expression
    or a bare annotation (``total: 3`` is how output and YAML read)."""
    if isinstance(node, ast.Call):
        return True
    if isinstance(node, ast.AnnAssign):
        return node.value is not None
    return isinstance(node, ast.stmt) and not isinstance(node, (ast.Expr, ast.Pass))


def _tagged_blocks(text: str) -> list[str]:
    blocks: list[str] = []
    index = 0
    while len(blocks) < _MAX_JOINED:
        opening = text.find(_CODE_OPEN, index)
        if opening == -1:
            break
        closing = text.find(_CODE_CLOSE, opening)
        if closing == -1:
            break
        blocks.append(text[opening + len(_CODE_OPEN) : closing])
        index = closing + len(_CODE_CLOSE)
    return [b for b in blocks if b.strip()]


def _joined(codes: Iterable[str]) -> str:
    """Code blocks as one program, each dedented and stripped, a blank line apart (as smolagents joins)."""
    return "\n\n".join(textwrap.dedent(code).strip("\n").rstrip() for code in codes)


def _attempt(read: str) -> Literal["code", "final", "other"] | None:
    """Which protocol message an answer that holds none seems to have tried to write (see ``NotProtocol``)."""
    start = _PROTOCOL_START.search(read)
    if start is not None:
        return "code" if start[5].lower() == "code" else "final"
    if _unclosed_code_block(read):
        return "code"
    if _LEADING_OBJECT.match(read) is not None:
        return "other"
    return None


def _unclosed_code_block(read: str) -> bool:
    """Whether the answer ends inside a Python fence (tagged, or untagged holding code) or a ``<code>`` block:
    it was cut while writing code, or never closed its block."""
    last = deque(_fences(read), maxlen=1)
    if last and not last[0].closed:
        fence = last[0]
        if fence.tag in PYTHON_NAMES:
            return True
        if not fence.tag and _reads_as_code(fence.body, min(len(fence.body), _SNIFF_CHARS)):
            return True
    return read.rfind(_CODE_OPEN) > read.rfind(_CODE_CLOSE)


def _message(value: Mapping[str, Any]) -> CodeMessage | FinalMessage | str:
    """The protocol message in a decoded object, or why it is not one."""
    kind = value.get("type")
    kind = kind.strip().lower() if isinstance(kind, str) else kind
    if kind == "code":
        code = value.get("code")
        if isinstance(code, list) and all(isinstance(line, str) for line in code):
            code = "\n".join(code)
        if not isinstance(code, str):
            return 'a code message needs the code as a string in "code"'
        language = value.get("language")
        return CodeMessage(
            code, language.strip() if isinstance(language, str) and language.strip() else "python"
        )
    if kind == "final":
        if "output" not in value:
            return 'a final message needs the answer in "output"'
        return FinalMessage(answer_text(value["output"]), value["output"])
    if kind is None:
        return 'the JSON object has no "type" ("code" or "final")'
    return f'"type" must be "code" or "final", not {orjson.dumps(kind).decode()}'


# --- what a step produced ----------------------------------------------------------------------------------


def _json(payload: Mapping[str, Any]) -> str:
    # ``default=repr``: a custom executor may return values JSON cannot hold; the model still sees them.
    # Exact: code's ``2**70`` is shown with all its digits.
    return exact_dumps(payload, default=repr, option=orjson.OPT_NON_STR_KEYS).decode()


def code_result_text(value: Any, stdout: str = "", stderr: str = "", note: str = "") -> str:
    """The memory text of a successful step: ``result`` always (``null`` when the step had no value),
    ``stdout`` / ``stderr`` / ``note`` when non-empty.

    >>> code_result_text(1024, "computing\\n")
    'CODE_RESULT: {"result":1024,"stdout":"computing\\\\n"}'
    >>> code_result_text(None)
    'CODE_RESULT: {"result":null}'
    """
    return CODE_RESULT_PREFIX + _json(_with_output({"result": value}, stdout, stderr, note))


def code_error_text(error: str, stdout: str = "", stderr: str = "", note: str = "") -> str:
    """The memory text of a failed step: ``error``, then ``stdout`` / ``stderr`` / ``note`` when non-empty.

    >>> code_error_text("ZeroDivisionError: division by zero")
    'CODE_ERROR: {"error":"ZeroDivisionError: division by zero"}'
    """
    return CODE_ERROR_PREFIX + _json(_with_output({"error": error}, stdout, stderr, note))


def _with_output(payload: dict[str, Any], stdout: str, stderr: str, note: str) -> dict[str, Any]:
    """``payload`` followed by the non-empty ones of ``stdout``, ``stderr`` and ``note``, in that order."""
    for key, text in (("stdout", stdout), ("stderr", stderr), ("note", note)):
        if text:
            payload[key] = text
    return payload


def result_preview(value: Any, max_chars: int | None) -> Any:
    """``value`` as the model is shown it: unchanged when its text fits in ``max_chars``, else cut.

    A string is cut to its first ``max_chars`` characters, any other value to the first ``max_chars`` of
    its compact JSON; either way the cut text (a string) ends with a marker saying how much is missing.
    ``None`` means no limit.

    >>> result_preview([1, 2], 100), result_preview("abcdef", None)
    ([1, 2], 'abcdef')
    >>> result_preview(list(range(100)), 10)[:24]
    '[0,1,2,3,4 [... result t'
    """
    if max_chars is None:
        return value
    text = value if isinstance(value, str) else answer_text(value)
    if len(text) <= max_chars:
        return value
    return text[:max_chars] + RESULT_TRUNCATED.format(missing=len(text) - max_chars)


def output_preview(text: str, max_chars: int | None) -> str:
    """Printed output as the model is shown it: whole when it fits in ``max_chars``, else its start and its
    end (half each) around a marker saying how many characters were cut. ``None`` means no limit.

    The end is kept because that is where a traceback, a summary or the last progress line is.

    >>> output_preview("0123456789", None), output_preview("0123456789", 10)
    ('0123456789', '0123456789')
    >>> print(output_preview("".join(f"{n}\\n" for n in range(10)), 8))
    0
    1
    <BLANKLINE>
    [... 12 characters of output cut here; print less, or only what you need ...]
    8
    9
    <BLANKLINE>
    """
    if max_chars is None or len(text) <= max_chars:
        return text
    head = max_chars - max_chars // 2
    tail = max_chars // 2
    missing = len(text) - head - tail
    return text[:head] + OUTPUT_CUT.format(missing=missing) + (text[-tail:] if tail else "")


def step_text(
    result: CodeResult,
    max_result_chars: int | None = None,
    max_output_chars: int | None = None,
    note: str = "",
) -> str:
    """``CODE_RESULT`` or ``CODE_ERROR`` text for an executor's ``CodeResult``, ending with ``note`` if given.

    ``max_result_chars`` bounds how much of the step's value the text shows (see ``result_preview``),
    ``max_output_chars`` how much of its stdout and of its stderr, each (see ``output_preview``).

    >>> step_text(CodeResult(ok=True, value="x" * 50), max_result_chars=5)[:44]
    'CODE_RESULT: {"result":"xxxxx [... result tr'
    """
    stdout = output_preview(result.stdout, max_output_chars)
    stderr = output_preview(result.stderr, max_output_chars)
    if result.ok:
        return code_result_text(result_preview(result.value, max_result_chars), stdout, stderr, note)
    error = result.error or (
        f"the code step failed ({result.error_type})" if result.error_type else "the code step failed"
    )
    return code_error_text(error, stdout, stderr, note)


def answer_text(value: Any) -> str:
    """A value as answer text: a string as is, ``None`` as ``""``, anything else as compact JSON (integers
    with all their digits).

    >>> answer_text("Paris"), answer_text(None), answer_text([1, 2**70])
    ('Paris', '', '[1,1180591620717411303424]')
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return exact_dumps(value, default=repr, option=orjson.OPT_NON_STR_KEYS).decode()
