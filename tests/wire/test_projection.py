"""The stream projection reads each event's data as the SSE decoder's text events give it:
UTF-8 with undecodable bytes replaced, then stripped of whitespace (Unicode's, as ``str.strip``
takes it), then JSON; what it sends is that value reduced to the event shape."""

from __future__ import annotations

from reasonwire.wire.registry import get_dialect


def _projected(raw: bytes) -> bytes:
    projector = get_dialect("chat").stream_projector()
    return projector.feed(raw) + projector.close()


def test_event_data_is_read_as_text_with_bad_bytes_replaced() -> None:
    raw = b'data: {"id":"a\xffb","choices":[],"secret":1}\n\n'
    assert _projected(raw) == 'data: {"id":"a\ufffdb","choices":[]}\n\n'.encode()


def test_event_data_is_stripped_of_unicode_whitespace() -> None:
    raw = 'data: \u00a0{"id":"x","choices":[]}\u2003\n\ndata: [DONE]\n\n'.encode()
    assert _projected(raw) == b'data: {"id":"x","choices":[]}\n\ndata: [DONE]\n\n'


def test_event_data_that_is_not_json_is_dropped() -> None:
    raw = b'data: {"id":\n\ndata: {"id":"y","choices":[]}\n\n'
    assert _projected(raw) == b'data: {"id":"y","choices":[]}\n\n'
