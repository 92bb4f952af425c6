"""The doctor's tables name only what the dialect objects own, and the framing rules hold
at their boundaries (sizes from the Fernet spec and protobuf wire format, built here)."""

from __future__ import annotations

import base64

import pytest

from reasonwire.doctor import framing
from reasonwire.doctor.facts import ENVELOPES, RULES
from reasonwire.wire import get_dialect
from reasonwire.wire.registry import names


def test_every_carrier_kind_is_the_dialects_own() -> None:
    assert set(RULES) == set(names())
    for dialect, rules in RULES.items():
        # (Chat's reasoning_details is a text carrier whose entries hold opaque signatures)
        kinds = {c.name for c in get_dialect(dialect).carriers}
        for spec in rules.opaque:
            assert spec.kind in kinds, (dialect, spec.kind)


def fernet(blocks: int, extra: int = 0) -> str:
    return base64.urlsafe_b64encode(b"\x80" + bytes(8 + 16 + 16 * blocks + 32 + extra)).decode()


@pytest.mark.parametrize("blocks", [1, 2, 7])
def test_fernet_sizes_at_the_boundary(blocks: int) -> None:
    assert framing.check_fernet(fernet(blocks)) is None
    for extra in (-1, 1, 15):
        problem = framing.check_fernet(fernet(blocks, extra))
        assert problem is not None and problem.kind == "truncated"
    assert framing.check_fernet(fernet(0)) is not None  # no ciphertext block at all
    bad = base64.urlsafe_b64encode(b"\x81" + bytes(8 + 16 + 16 + 32)).decode()
    assert framing.check_fernet(bad) == framing.Problem(
        "undecodable", "not a Fernet token (version byte 0x80 missing)"
    )


def pb(payload: bytes, declared: int | None = None) -> str:
    n = len(payload) if declared is None else declared
    assert n < 128
    return base64.b64encode(b"\x12" + bytes([n]) + payload).decode()


def test_protobuf_declared_length_at_the_boundary() -> None:
    env = ENVELOPES["anthropic"]
    assert framing.check_protobuf(pb(b"x" * 30), env, urlsafe_ok=False) is None
    p = framing.check_protobuf(pb(b"x" * 30, 31), env, urlsafe_ok=False)
    assert p is not None and p.kind == "truncated"
    p = framing.check_protobuf(pb(b"x" * 30, 29), env, urlsafe_ok=False)  # a byte left over
    assert p is not None and p.kind in {"undecodable", "truncated"}


def test_varint_of_ten_bytes_is_the_limit() -> None:
    ok = b"\x08" + b"\xff" * 9 + b"\x01"  # field 1 varint: 10 bytes
    assert framing.protobuf_fields(ok) == [(1, 0)]
    with pytest.raises(ValueError):
        framing.protobuf_fields(b"\x08" + b"\xff" * 10 + b"\x01")


def test_base64_length_multiple_of_four() -> None:
    value = pb(b"x" * 31)
    for cut in (1, 2, 3):
        p = framing.check_protobuf(value[:-cut], ENVELOPES["anthropic"], urlsafe_ok=False)
        assert p is not None and p.kind == "truncated"
        assert f"length {len(value) - cut} is not a multiple of 4" in p.detail
