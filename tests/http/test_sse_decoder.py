"""SseDecoder: the event-stream rules, chunk-boundary independence (hypothesis) and the size bound."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentflow.http.sse import SseDecoder, SseEvent
from agentflow.model.errors import ProtocolError


def decode_all(body: bytes, decoder: SseDecoder | None = None) -> list[SseEvent]:
    decoder = decoder or SseDecoder()
    return decoder.feed(body) + decoder.close()


def decode_in_pieces(body: bytes, cuts: list[int]) -> list[SseEvent]:
    decoder = SseDecoder()
    events: list[SseEvent] = []
    start = 0
    for cut in sorted(set(cuts)):
        events += decoder.feed(body[start:cut])
        start = cut
    events += decoder.feed(body[start:])
    return events + decoder.close()


def test_data_lines_dispatch_on_blank_line() -> None:
    assert decode_all(b"data: a\n\ndata: b\n\n") == [SseEvent("a"), SseEvent("b")]


def test_multi_line_data_joins_with_newline() -> None:
    assert decode_all(b"data: first\ndata: second\ndata\n\n") == [SseEvent("first\nsecond\n")]


def test_event_id_and_retry_fields_are_read() -> None:
    events = decode_all(b"event: error\nid: 7\nretry: 1500\ndata: {}\n\ndata: next\n\n")
    assert events == [SseEvent("{}", "error", "7", 1500), SseEvent("next", "message", "7", None)]


def test_comments_unknown_fields_and_bad_retry_are_ignored() -> None:
    body = b": OPENROUTER PROCESSING\n\nfoo: bar\nretry: soon\ndata: x\n\n"
    assert decode_all(body) == [SseEvent("x")]


def test_field_without_space_or_colon() -> None:
    assert decode_all(b"data:x\ndata:  y\ndata\n\n") == [SseEvent("x\n y\n")]


def test_block_without_data_dispatches_nothing_and_resets_event_name() -> None:
    assert decode_all(b"event: ping\n\ndata: x\n\n") == [SseEvent("x")]


@pytest.mark.parametrize("newline", [b"\n", b"\r", b"\r\n"])
def test_every_line_ending(newline: bytes) -> None:
    body = newline.join([b"event: e", b"data: 1", b"", b"data: 2", b"", b""])
    assert decode_all(body) == [SseEvent("1", "e"), SseEvent("2")]


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n\r") == [SseEvent("a")]
    assert decoder.feed(b"\ndata: b\r\n\r\n") == [SseEvent("b")]


def test_multibyte_utf8_split_across_chunks() -> None:
    body = "data: héllo 😊 世界\n\n".encode()
    cut = body.index("😊".encode()) + 2
    decoder = SseDecoder()
    assert decoder.feed(body[:cut]) == []
    assert decoder.feed(body[cut:]) == [SseEvent("héllo 😊 世界")]


def test_close_dispatches_an_event_without_blank_line() -> None:
    assert decode_all(b"data: a\n\ndata: [DONE]\n") == [SseEvent("a"), SseEvent("[DONE]")]
    assert decode_all(b"data: [DONE]") == [SseEvent("[DONE]")]
    assert decode_all(b"") == []


def test_leading_byte_order_mark_is_skipped() -> None:
    assert decode_all("\ufeffdata: x\n\n".encode()) == [SseEvent("x")]


def test_oversized_line_raises_protocol_error() -> None:
    decoder = SseDecoder(max_event_bytes=64)
    decoder.feed(b"data: " + b"x" * 40)
    with pytest.raises(ProtocolError, match="larger than 64 bytes"):
        decoder.feed(b"x" * 40)


def test_oversized_multi_line_event_raises_protocol_error() -> None:
    decoder = SseDecoder(max_event_bytes=64)
    with pytest.raises(ProtocolError, match="larger than 64 bytes"):
        decoder.feed(b"data: 0123456789\n" * 10)


def test_events_below_the_bound_pass() -> None:
    decoder = SseDecoder(max_event_bytes=64)
    for _ in range(100):
        assert decoder.feed(b"data: 0123456789\n\n") == [SseEvent("0123456789")]


def test_max_event_bytes_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        SseDecoder(max_event_bytes=0)


# --- any chunking gives the same events --------------------------------------------------------

_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=12
)
_EVENT = st.tuples(
    st.sampled_from([None, "message", "error", "response.output_text.delta"]),
    st.lists(_TEXT, min_size=1, max_size=3),
)


def _encode(events: list[tuple[str | None, list[str]]], newlines: list[bytes]) -> bytes:
    lines: list[str] = []
    for name, data_lines in events:
        lines.append(": keep-alive")
        if name is not None:
            lines.append(f"event: {name}")
        lines.extend(f"data: {line}" for line in data_lines)
        lines.append("")
    out = bytearray()
    for i, line in enumerate(lines):
        newline = newlines[i % len(newlines)]
        if not line and out.endswith(b"\r") and newline == b"\n":
            newline = b"\r"  # CR then an empty line's LF would be one CRLF, not two line ends
        out += line.encode() + newline
    return bytes(out)


@settings(max_examples=300, deadline=None)
@given(
    events=st.lists(_EVENT, max_size=6),
    newlines=st.lists(st.sampled_from([b"\n", b"\r", b"\r\n"]), min_size=1, max_size=5),
    data=st.data(),
)
def test_any_chunking_gives_the_same_events(
    events: list[tuple[str | None, list[str]]], newlines: list[bytes], data: st.DataObject
) -> None:
    body = _encode(events, newlines)
    expected = [SseEvent("\n".join(lines), name or "message") for name, lines in events]
    assert decode_all(body) == expected
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=12))
    assert decode_in_pieces(body, cuts) == expected


@settings(max_examples=100, deadline=None)
@given(body=st.binary(max_size=200), data=st.data())
def test_arbitrary_bytes_never_depend_on_chunking(body: bytes, data: st.DataObject) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=8))
    assert decode_in_pieces(body, cuts) == decode_all(body)


def test_byte_by_byte_feeding_of_a_recorded_stream() -> None:
    body = (
        b": OPENROUTER PROCESSING\r\n\r\n"
        + 'data: {"choices":[{"delta":{"content":"Grüße 🌍"}}]}\r\n\r\n'.encode()
        + b'event: error\r\ndata: {"error":{}}\r\n\r\n'
    )
    decoder = SseDecoder()
    events: list[SseEvent] = []
    for i in range(len(body)):
        events += decoder.feed(body[i : i + 1])
    events += decoder.close()
    assert events == decode_all(body)
    assert events[0].data == '{"choices":[{"delta":{"content":"Grüße 🌍"}}]}'
    assert events[1].event == "error"
