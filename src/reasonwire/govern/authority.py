"""The checks every governed call makes once its binding has verified, wherever it runs (the
gateway, the LiteLLM hook): the policy re-resolves the requested level now (a runtime or
route revoked, a policy lowered since the binding was signed), the ceiling the binding was
signed under still holds, and the conversation's effort and intent stay what they were on
its first call. One function, so that the two enforcement points cannot drift apart."""

from __future__ import annotations

from reasonwire.errors import PolicyRefusal
from reasonwire.govern.binding import Binding
from reasonwire.govern.evidence import EvidenceStore, check_intent
from reasonwire.govern.levels import Level
from reasonwire.govern.policy import OrgPolicy, Resolution, resolve
from reasonwire.govern.registry import Registry


def policy_now(registry: Registry, policy: OrgPolicy, b: Binding) -> Resolution:
    """What the policy resolves the binding's request to now (:class:`PolicyRefusal` when a
    runtime or route was revoked, or the level is no longer allowed). Its
    ``runtime_qualification`` is evidence even when :func:`settle_effort` then refuses."""
    return resolve(
        registry,
        policy,
        runtime_id=b.runtime_id,
        runtime_version=b.runtime_version,
        route_id=b.route_id,
        requested=b.requested,
    )


def settle_effort(store: EvidenceStore, b: Binding, res: Resolution) -> Level:
    """The level this call runs at, given what the policy says now (:func:`policy_now`);
    :class:`PolicyRefusal` with the reason otherwise."""
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
    return res.resolved


__all__ = ["policy_now", "settle_effort"]
