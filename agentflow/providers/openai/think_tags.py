"""Reasoning a server left inline in the answer, as a leading ``<think>…</think>`` block.

Servers without a reasoning parser (vLLM or SGLang started without one, older Ollama, LM Studio, llama.cpp,
some DeepSeek-R1 / QwQ / Qwen3 deployments, LiteLLM passing them through) send the model's reasoning in
``content``, wrapped in think tags, instead of in ``reasoning_content``. This module tells the two apart;
it must not touch an answer that merely *mentions* a tag, so it only ever looks at how the content begins.

Pure, no I/O: ``split_think_block`` reads a whole answer, ``ThinkTagSplitter`` a stream's content deltas.
Both follow the same rules, so a stream's pieces joined are exactly the blocking split of its content:

- Only a *leading* block counts: content whose first non-whitespace characters are the open tag (which is
  how these models emit it). Anything else is the answer, tags and all.
- The reasoning is what lies between the tags, without its leading whitespace; a block of whitespace only
  (Qwen3 with thinking turned off sends ``<think>\\n\\n</think>\\n\\n``) is no reasoning at all.
- The answer is what follows the close tag, without its leading line breaks (servers send ``</think>\\n\\n``).
- A block that is never closed (the answer ended inside it, usually at the token limit) was all reasoning:
  the answer is empty.
- Only the first block is split; a later ``<think>`` is answer text.
- An empty open tag, ``("", "</think>")``, is for a chat template that opens the block in the *prompt*
  (DeepSeek-R1 and its distills end the generation prompt with ``<think>\n``): content starts inside the
  block, everything up to the close tag is reasoning, and content without the close tag was all reasoning.
  Only for a template that always opens it: an answer that did not think would be read as reasoning.

A stream holds back no more than could still turn out to be a tag: before the decision, the leading
whitespace and a partial open tag (``<thi``); inside the block, a partial close tag (``</thi``). Once the
content is known not to open with the tag, or the answer after the block has begun, the splitter is
``done`` and its owner passes content straight through, with no further scanning.
"""

from __future__ import annotations

from typing import TypeAlias

__all__ = ["DEFAULT_THINK_TAGS", "ThinkTagSplitter", "ThinkTags", "check_think_tags", "split_think_block"]

ThinkTags: TypeAlias = tuple[str, str]
"""An ``(open, close)`` tag pair, such as ``("<think>", "</think>")``."""

DEFAULT_THINK_TAGS: ThinkTags = ("<think>", "</think>")
"""The tags DeepSeek-R1, QwQ, Qwen3, MiniMax and their distills wrap their reasoning in."""

Piece: TypeAlias = tuple[bool, str]
"""``(is_reasoning, text)``: one piece of content, reasoning or answer."""

_LINE_BREAKS = "\r\n"

# Splitter states.
_OPENING = 0  # nothing decided yet: holding leading whitespace and a partial open tag
_THINK_START = 1  # inside the block, no reasoning text yet (its leading whitespace is dropped)
_THINKING = 2  # inside the block
_ANSWER_START = 3  # after the block, before the answer's first character (line breaks are dropped)
_DONE = 4  # content passes through as answer text


def check_think_tags(tags: object) -> ThinkTags | None:
    """``tags`` as a ``ThinkTags`` pair (``None`` stays ``None``: no splitting); ``TypeError`` /
    ``ValueError`` for anything but two different, non-empty strings.

    >>> check_think_tags(["<think>", "</think>"])
    ('<think>', '</think>')
    """
    if tags is None:
        return None
    if not isinstance(tags, tuple | list) or len(tags) != 2 or not all(isinstance(t, str) for t in tags):
        raise TypeError(
            f"think_tags must be an (open, close) pair of strings such as {DEFAULT_THINK_TAGS!r}, or None "
            f"to leave think blocks in the text; got {tags!r}"
        )
    open_tag, close_tag = tags
    if not close_tag or open_tag == close_tag:
        raise ValueError(
            f"think_tags must be two different strings, the close tag non-empty (an empty open tag: the "
            f"chat template opens the block in the prompt), got {tags!r}"
        )
    if open_tag[:1].isspace():  # content is matched after its leading whitespace: such a tag never would be
        raise ValueError(f"the open think tag must not start with whitespace, got {open_tag!r}")
    return open_tag, close_tag


def split_think_block(content: str, tags: ThinkTags) -> tuple[str, str | None] | None:
    """``(answer, reasoning)`` of an answer that opens with a think block, ``None`` when it does not.

    ``reasoning`` is ``None`` for an empty block. The rules are the module's.

    >>> split_think_block("<think>\\nThe user greets me.\\n</think>\\n\\nHello!", DEFAULT_THINK_TAGS)
    ('Hello!', 'The user greets me.\\n')
    >>> split_think_block("<think>\\n\\n</think>\\n\\nHello!", DEFAULT_THINK_TAGS)
    ('Hello!', None)
    >>> split_think_block("Use <think> tags.", DEFAULT_THINK_TAGS) is None
    True
    """
    open_tag, close_tag = tags
    if not content.startswith(open_tag):
        # An ordinary answer fails on its first character, without a copy of the text.
        if not content[:1].isspace():
            return None
        content = content.lstrip()
        if not content.startswith(open_tag):
            return None
    body = content[len(open_tag) :]
    end = body.find(close_tag)
    if end < 0:
        return "", body.lstrip() or None
    return body[end + len(close_tag) :].lstrip(_LINE_BREAKS), body[:end].lstrip() or None


def _partial_tag(text: str, tag: str) -> int:
    """The length of the longest end of ``text`` that is the start of ``tag`` (and not all of it)."""
    longest = min(len(tag) - 1, len(text))
    if longest <= 0 or tag[0] not in text[-longest:]:  # the usual case: no tag could be starting
        return 0
    for size in range(longest, 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


class ThinkTagSplitter:
    """Splits one stream's text content into reasoning and answer pieces at a leading think block.

    ``feed`` each content delta in order; it returns the pieces that are now certain. When ``done`` turns
    true, everything after is answer text: stop feeding and pass it through. ``pending()`` is what the
    held-back text would be if the content ended now; ``close()`` returns it and ends the splitter.

    >>> s = ThinkTagSplitter(DEFAULT_THINK_TAGS)
    >>> s.feed("<thi"), s.feed("nk>Hm.</th"), s.feed("ink>\\n\\nHi"), s.done
    ([], [(True, 'Hm.')], [(False, 'Hi')], True)
    """

    __slots__ = ("_close", "_held", "_open", "_state")

    def __init__(self, tags: ThinkTags = DEFAULT_THINK_TAGS) -> None:
        self._open, self._close = tags
        self._held = ""
        self._state = _OPENING

    @property
    def done(self) -> bool:
        """Whether the rest of the content is answer text, to pass through without the splitter."""
        return self._state == _DONE

    def feed(self, text: str) -> list[Piece]:
        """The pieces of one content delta (with what was held back before it) that are now certain."""
        state = self._state
        out: list[Piece] = []
        if state == _OPENING:
            text = self._held + text
            head = text.lstrip()
            open_tag = self._open
            if head.startswith(open_tag):
                state = _THINK_START
                text = head[len(open_tag) :]
                self._held = ""
            elif open_tag.startswith(head):  # whitespace so far, or a partial tag: not decided yet
                self._held = text
                return out
            else:
                self._held = ""
                self._state = _DONE
                out.append((False, text))
                return out
        if state in (_THINK_START, _THINKING):
            text = self._held + text
            close_tag = self._close
            end = text.find(close_tag)
            if end < 0:
                kept = _partial_tag(text, close_tag)
                self._held = text[len(text) - kept :] if kept else ""
                thought = text[: len(text) - kept]
                rest = None
            else:
                self._held = ""
                thought = text[:end]
                rest = text[end + len(close_tag) :]
            if state == _THINK_START:
                thought = thought.lstrip()
            if thought:
                state = _THINKING
                out.append((True, thought))
            if rest is None:
                self._state = state
                return out
            state = _ANSWER_START
            text = rest
        if state == _ANSWER_START:
            text = text.lstrip(_LINE_BREAKS)
            if text:
                state = _DONE
                out.append((False, text))
        self._state = state
        return out

    def pending(self) -> list[Piece]:
        """What the held-back text is if the content ends now (the splitter is left as it is)."""
        held = self._held
        state = self._state
        if not held:
            return []
        if state == _OPENING:
            return [(False, held)]  # whitespace or a partial open tag: answer text after all
        if state == _THINK_START:
            held = held.lstrip()
            return [(True, held)] if held else []
        return [(True, held)]  # a partial close tag: the unclosed block was all reasoning

    def close(self) -> list[Piece]:
        """``pending()``, and the splitter is ``done``: the content has ended."""
        out = self.pending()
        self._held = ""
        self._state = _DONE
        return out
