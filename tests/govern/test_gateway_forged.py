"""Hypothesis: whatever reasoning controls a client forges, in any dialect, the upstream (the
recorded simulator) receives exactly the route's fragment for the resolved level."""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reasonwire.govern.levels import LEVELS
from tests.govern.conftest import World, new_conv
from tests.govern.oracle import ALL_PATHS, found_controls

ROUTES = {
    "chat": ("chat/sim-chat-all", "/v1/chat/completions"),
    "responses": ("responses/sim-gpt", "/v1/responses"),
    "anthropic": ("anthropic/sim-claude", "/v1/messages"),
}

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**9), 10**9),
    st.sampled_from(["none", "minimal", "low", "medium", "high", "xhigh", "max", "enabled"]),
    st.text(max_size=8),
)
json_value = st.recursive(
    json_leaf,
    lambda kids: st.one_of(
        st.lists(kids, max_size=3), st.dictionaries(st.text(max_size=6), kids, max_size=3)
    ),
    max_leaves=6,
)
forged_controls = st.dictionaries(
    st.sampled_from(ALL_PATHS),
    json_value,
    max_size=6,
)


def _body(dialect: str, model: str, conv: str) -> dict[str, Any]:
    msg = [{"role": "user", "content": f"[{conv}] hello"}]
    if dialect == "responses":
        return {"model": model, "input": msg}
    if dialect == "anthropic":
        return {"model": model, "max_tokens": 20000, "messages": msg}
    return {"model": model, "messages": msg}


def _put(body: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = body
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[path[-1]] = value


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    dialect=st.sampled_from(sorted(ROUTES)),
    level=st.sampled_from(LEVELS),
    forged=forged_controls,
    keep_other=st.booleans(),
    stream=st.booleans(),
)
def test_forged_controls_never_reach_upstream(
    world: World,
    dialect: str,
    level: str,
    forged: dict[tuple[str, ...], Any],
    keep_other: bool,
    stream: bool,
) -> None:
    route_id, path = ROUTES[dialect]
    route = world.gateway.registry.routes[route_id]
    conv = new_conv()
    body = _body(dialect, route.model, conv)
    if keep_other:
        body["chat_template_kwargs"] = {"custom_flag": "kept"}
    for p, v in forged.items():
        _put(body, p, v)
    if stream:
        body["stream"] = True
    token = world.token(conv, route_id, level)  # type: ignore[arg-type]
    with httpx.Client(base_url=world.url, timeout=10) as c:
        c.post(path, content=json.dumps(body), headers=world.headers(conv, token)).read()
    seen = world.recorder.find(conv)
    assert len(seen) == 1
    upstream = seen[0]["body"]
    controls = found_controls("any", upstream)
    expected = found_controls("any", dict(route.levels[level]))  # type: ignore[index]
    assert controls == expected
    if keep_other and "chat_template_kwargs" not in expected:
        # any template kwarg may be a thinking switch or budget: the whole object goes
        assert "chat_template_kwargs" not in upstream
    rows = world.store.rows(conv)
    assert [(r.requested, r.resolved) for r in rows] == [(level, level)]


def test_exact_none_kept_only_where_no_governed_reasoning_is_injected(world: World) -> None:
    """``reasoning_effort: "none"`` survives on a route whose level sets no reasoning, and only
    alone and exact; anything else beside it, or another value, is stripped."""
    route = world.gateway.registry.routes["chat/sim-plain"]
    cases = [
        ({"reasoning_effort": "none"}, {"reasoning_effort": "none"}),
        ({"reasoning_effort": "None"}, {}),
        ({"reasoning_effort": "none", "thinking": {"type": "enabled"}}, {}),
        ({"reasoning_effort": "low"}, {}),
    ]
    for forged, expected in cases:
        conv = new_conv()
        body = {"model": route.model, "messages": [{"role": "user", "content": conv}], **forged}
        with httpx.Client(base_url=world.url, timeout=10) as c:
            c.post(
                "/v1/chat/completions",
                json=body,
                headers=world.headers(conv, world.token(conv, route.route_id, "low")),
            )
        (seen,) = world.recorder.find(conv)
        assert found_controls("chat", seen["body"]) == expected, forged
    # On a route that injects effort, "none" is replaced by the governed value.
    conv = new_conv()
    body = {"model": "sim-chat-all", "messages": [{"role": "user", "content": conv}]}
    body["reasoning_effort"] = "none"
    with httpx.Client(base_url=world.url, timeout=10) as c:
        c.post(
            "/v1/chat/completions",
            json=body,
            headers=world.headers(conv, world.token(conv, "chat/sim-chat-all", "medium")),
        )
    (seen,) = world.recorder.find(conv)
    assert seen["body"]["reasoning_effort"] == "medium"
