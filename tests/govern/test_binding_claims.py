"""The binding's expiry and claim types at their boundaries (RFC 7519 4.1.4).

"The processing of the exp claim requires that the current date/time MUST be before the
expiration date/time": a binding is valid up to the second before ``exp`` and refused at ``exp``
itself. A NumericDate is a JSON number; a signed ``exp`` of any other type is a refusal with a
reason (the signer's fault), never a server error.
"""

from __future__ import annotations

import jwt
import pytest

from reasonwire.errors import PolicyRefusal
from reasonwire.govern.binding import ALGORITHM, KeyRing, issue, verify

ISSUED = 1_700_000_000  # in the past: PyJWT checks iat against the real clock
TTL = 900


def _token(ring: KeyRing) -> str:
    return issue(
        ring,
        conversation_id="c",
        task_id="t",
        runtime_id="rt",
        runtime_version="1",
        route_id="r",
        requested="auto",
        ceiling="high",
        ttl_seconds=TTL,
        now=ISSUED,
    )


def test_valid_until_the_second_before_exp_refused_at_exp() -> None:
    ring = KeyRing.generate()
    token = _token(ring)
    exp = ISSUED + TTL
    assert verify(ring, token, now=exp - 1).expires_at == exp
    assert verify(ring, token, now=exp - 0.001).expires_at == exp
    with pytest.raises(PolicyRefusal) as refused:
        verify(ring, token, now=exp)
    assert refused.value.reason == "binding-expired"


@pytest.mark.parametrize("bad", ["1900000000", None, True, [1900000000], {"n": 1}])
def test_exp_that_is_not_a_number_is_a_refusal(bad: object) -> None:
    ring = KeyRing.generate()
    good = jwt.decode(_token(ring), options={"verify_signature": False})
    claims = {**good, "exp": bad}
    token = jwt.encode(
        claims, ring.private[ring.active], algorithm=ALGORITHM, headers={"kid": ring.active}
    )
    with pytest.raises(PolicyRefusal) as refused:
        verify(ring, token, now=ISSUED)
    assert refused.value.reason == "binding-invalid"
    # PyJWT itself takes a null claim for a missing one; every other type is named by us
    assert (
        "MissingRequiredClaim" in str(refused.value)
        if bad is None
        else "NumericDate" in str(refused.value)
    )
