"""``Dialect.strip_controls``: the dialect's body controls and a profile's own, removed by
dotted name; header controls are headers, never body fields; the caller's body unchanged."""

from __future__ import annotations

from reasonwire.wire.facts import Control
from reasonwire.wire.profile import Profile
from reasonwire.wire.registry import get_dialect


def test_a_profiles_controls_are_stripped_with_the_dialects() -> None:
    profile = Profile(controls=(Control(("vendor", "knob"), "a vendor's docs", "a switch"),))
    body = {"model": "m", "reasoning_effort": "high", "vendor": {"knob": 1, "other": 2}}
    out, removed = get_dialect("chat").strip_controls(body, profile)
    assert out == {"model": "m", "vendor": {"other": 2}}
    assert removed == {"reasoning_effort": "high", "vendor.knob": 1}
    assert body == {"model": "m", "reasoning_effort": "high", "vendor": {"knob": 1, "other": 2}}
    out, removed = get_dialect("chat").strip_controls(body)  # without the profile
    assert out == {"model": "m", "vendor": {"knob": 1, "other": 2}}
    assert removed == {"reasoning_effort": "high"}


def test_a_header_control_is_not_a_body_field() -> None:
    body = {"model": "m", "anthropic-beta": "x", "thinking": {"type": "enabled"}}
    out, removed = get_dialect("anthropic").strip_controls(body)
    assert out == {"model": "m", "anthropic-beta": "x"}
    assert removed == {"thinking": {"type": "enabled"}}
