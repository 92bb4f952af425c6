"""The checks every governed call makes once its binding has verified, wherever it runs (the
gateway, the LiteLLM hook): the policy re-resolves the requested level now (a runtime or
route revoked, a policy lowered since the binding was signed), the ceiling the binding was
signed under still holds, and the conversation's effort and intent stay what they were on
its first call. One function, so that the two enforcement points cannot drift apart."""

from __future__ import annotations

from reasonwire.errors import PolicyRefusal
from reasonwire.govern.binding import Binding
from reasonwire.govern.evidence import EvidenceRow, EvidenceStore, check_intent
from reasonwire.govern.levels import Level
from reasonwire.govern.policy import OrgPolicy, resolve
from reasonwire.govern.registry import Registry


def settle_effort(
    registry: Registry, policy: OrgPolicy, store: EvidenceStore, b: Binding, row: EvidenceRow
) -> Level:
    """The level this call runs at; :class:`PolicyRefusal` with the reason otherwise. Fills
    the row's qualification and resolved fields as it goes."""
    res = resolve(
        registry,
        policy,
        runtime_id=b.runtime_id,
        runtime_version=b.runtime_version,
        route_id=b.route_id,
        requested=b.requested,
    )
    row.runtime_qualification = res.runtime_qualification
    if res.ceiling != b.ceiling:
        raise PolicyRefusal(
            "ceiling-mismatch", f"binding ceiling {b.ceiling}, policy now {res.ceiling}"
        )
    fixed = store.fix_effort(b.conversation_id, res.resolved)
    if fixed != res.resolved:
        raise PolicyRefusal(
            "effort-changed",
            f"conversation was created at {fixed}, this binding resolves to {res.resolved}",
        )
    check_intent(store, b.conversation_id, b.requested)
    row.resolved = res.resolved
    return res.resolved


__all__ = ["settle_effort"]
