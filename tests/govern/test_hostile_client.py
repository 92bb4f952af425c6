"""A hostile client in front of the gateway (the upstream is the hostile fake, answering
plainly unless told otherwise).

Every vendor reasoning control of the independent inventory (:mod:`tests.govern.oracle`)
never reaches the upstream, sent through the official SDK of the dialect (JSON and stream)
and through foreign dialects' endpoints; the model pin holds. Ill-typed, oversized or
undecodable bodies and bad headers answer 400/413/431 with a reason (never 500), leave an
evidence row and are never forwarded. Reasoning a client forges is never forwarded. The exact
``reasoning_effort: "none"`` rule still holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

from reasonwire.govern.binding import HEADER
from reasonwire.govern.gateway import ATTEMPT_HEADER, CONVERSATION_HEADER
from tests.govern.conftest import World
from tests.govern.hostile import (
    MAIN,
    ROUTES,
    Canaries,
    HostileWorld,
    hostile_world,
    new_conv,
    user_body,
)
from tests.govern.oracle import ALL_PATHS, CONTROL_PATHS, found_controls

RUNTIME_KEY = "runtime-holds-no-provider-key"


@pytest.fixture(scope="module")
def hw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileWorld]:
    with hostile_world(tmp_path_factory.mktemp("hostile-client")) as world:
        yield world


def _nest(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out: Any = value
    for key in reversed(path):
        out = {key: out}
    assert isinstance(out, dict)
    return out


def _forged_value(path: tuple[str, ...], c: Canaries) -> Any:
    """A value a client might send at ``path``, carrying a canary."""
    tag = c(".".join(path))
    leaf = path[-1]
    if leaf == "models":
        return ["evil/model-" + tag, "h-chat"]
    if leaf == "provider":
        return {"order": ["evil-" + tag], "allow_fallbacks": True, "require_parameters": False}
    if leaf == "thinking_config":
        return {"thinking_budget": 24576, "include_thoughts": True, "note": tag}
    if leaf == "reasoning":
        return {"effort": "xhigh", "max_tokens": 64000, "exclude": False, "summary": tag}
    if leaf == "thinking":
        return {"type": "enabled", "budget_tokens": 64000, "note": tag}
    if leaf == "effort":
        return "max-" + tag
    if leaf == "chat_template":
        return "{% for m in messages %}" + tag + "{% endfor %}"
    return tag  # switches and budgets: any value must go


def _route_fragment(hw: HostileWorld, route_id: str, level: str = "medium") -> dict[str, Any]:
    return dict(hw.route(route_id).levels[level])  # type: ignore[index]


def _upstream_one(hw: HostileWorld, conv: str) -> Any:
    seen = hw.upstream.find(conv)
    assert len(seen) == 1, len(seen)
    return seen[0]


CONTROL_CASES = [(d, p) for d, paths in CONTROL_PATHS.items() for p in paths]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(
    ("dialect", "path"), CONTROL_CASES, ids=[f"{d}:{'.'.join(p)}" for d, p in CONTROL_CASES]
)
def test_vendor_control_never_reaches_upstream_via_sdk(
    hw: HostileWorld, dialect: str, path: tuple[str, ...], stream: bool
) -> None:
    route_id = MAIN[dialect]
    model = ROUTES[route_id][1]
    conv, c = new_conv(), Canaries()
    forged = _nest(path, _forged_value(path, c))
    msgs: Any = [{"role": "user", "content": f"[{conv}] Find the population of Lyon."}]
    headers = hw.headers(conv, route_id)
    if dialect == "anthropic":
        ac = anthropic.Anthropic(
            base_url=hw.url, api_key=RUNTIME_KEY, max_retries=0, default_headers=headers
        )
        kw: Any = {"model": model, "max_tokens": 20000, "messages": msgs, "extra_body": forged}
        if stream:
            with ac.messages.stream(**kw) as s:
                s.get_final_message()
        else:
            ac.messages.create(**kw)
    else:
        oc = openai.OpenAI(
            base_url=hw.url + "/v1", api_key=RUNTIME_KEY, max_retries=0, default_headers=headers
        )
        if dialect == "responses":
            if stream:
                with oc.responses.stream(model=model, input=msgs, extra_body=forged) as rs:
                    rs.get_final_response()
            else:
                oc.responses.create(model=model, input=msgs, extra_body=forged)
        elif stream:
            with oc.chat.completions.create(
                model=model, messages=msgs, stream=True, extra_body=forged
            ) as cs:
                for _ in cs:
                    pass
        else:
            oc.chat.completions.create(model=model, messages=msgs, extra_body=forged)
    up = _upstream_one(hw, conv)
    fragment = _route_fragment(hw, route_id)
    assert found_controls("any", up.body) == found_controls("any", fragment)
    assert c.leaked(up.text) == {}, "a client control reached the upstream"
    assert up.body["model"] == model  # the model pin holds (models / provider lists too)
    for key in ("models", "provider", "route", "extra_body", "google"):
        assert key not in up.body
    (row,) = hw.rows(conv)
    assert row.outcome == "forwarded" and row.resolved == "medium"
    assert path[0] in row.controls_removed.split(",") or ".".join(path) in row.controls_removed


@pytest.mark.parametrize("dialect", sorted(MAIN))
def test_every_known_control_sent_to_any_endpoint_is_dropped(
    hw: HostileWorld, dialect: str
) -> None:
    """Every dialect's controls at once, at every endpoint (a compatible server may honour
    a foreign dialect's field), JSON and stream."""
    route_id = MAIN[dialect]
    for stream in (False, True):
        conv, c = new_conv(), Canaries()
        body = user_body(route_id, conv, stream=stream)
        for path in ALL_PATHS:
            node = body
            for key in path[:-1]:
                node = node.setdefault(key, {}) if isinstance(node.get(key, {}), dict) else {}
            node[path[-1]] = _forged_value(path, c)
        got = hw.post(route_id, conv, body)
        assert got.status == 200, got.raw
        up = _upstream_one(hw, conv)
        assert found_controls("any", up.body) == found_controls(
            "any", _route_fragment(hw, route_id)
        )
        assert c.leaked(up.text) == {}


def test_client_headers_never_reach_upstream(hw: HostileWorld) -> None:
    c = Canaries()
    forged = {
        "authorization": "Bearer " + c("client authorization"),
        "x-api-key": c("client x-api-key"),
        "anthropic-beta": "interleaved-thinking-2025-05-14," + c("beta"),
        "openai-organization": c("org"),
        "x-goog-api-key": c("goog"),
        "http-referer": c("referer"),
        "x-title": c("title"),
        "x-reasoning-effort": "high",
        "anthropic-version": "2023-06-01",
    }
    for dialect, route_id in MAIN.items():
        conv = new_conv()
        got = hw.post(route_id, conv, user_body(route_id, conv), headers=forged)
        assert got.status == 200
        up = _upstream_one(hw, conv)
        assert c.leaked(json.dumps(up.headers)) == {}
        allowed = {"host", "content-length", "content-type", "accept-encoding"}
        allowed |= {"x-api-key", "anthropic-version"} if dialect == "anthropic" else set()
        allowed |= set() if dialect == "anthropic" else {"authorization"}
        assert set(up.headers) <= allowed, set(up.headers) - allowed
        auth = up.headers.get("x-api-key") or up.headers.get("authorization", "")
        assert auth.endswith(hw.key)
        assert HEADER not in up.headers and CONVERSATION_HEADER not in up.headers


# -- the model pin ------------------------------------------------------------------------------


def test_model_pin_holds(hw: HostileWorld) -> None:
    route_id = "chat/h-chat"
    conv = new_conv()
    got = hw.post(route_id, conv, {**user_body(route_id, conv), "model": "evil/other-model"})
    assert got.status == 403 and got.json()["error"]["code"] == "provider-mismatch"
    assert hw.upstream.find(conv) == []
    # Duplicate keys: the gateway forwards its own reading of the body, never the client's
    # bytes, so the upstream cannot read the other copy.
    for first, last, ok in (("evil/other-model", "h-chat", True), ("h-chat", "evil/x", False)):
        conv = new_conv()
        text = json.dumps(user_body(route_id, conv))
        raw = ('{"model": "' + first + '", ' + text[1:]).replace(
            '"model": "h-chat"', '"model": "' + last + '"'
        )
        got = hw.post(route_id, conv, raw=raw.encode())
        assert (got.status == 200) is ok, got.raw
        seen = hw.upstream.find(conv)
        if ok:
            (up,) = seen
            assert "evil" not in up.text and up.body["model"] == "h-chat"
        else:
            assert seen == []


# -- bodies and headers that must be refused ----------------------------------------------------

DEEP = 70


def _deep(n: int) -> Any:
    v: Any = "leaf"
    for _ in range(n):
        v = {"k": v}
    return v


def _chat(conv: str, **over: Any) -> dict[str, Any]:
    return {**user_body("chat/h-chat", conv), **over}


def _asst(conv: str, **fields: Any) -> dict[str, Any]:
    msgs = [
        {"role": "user", "content": conv},
        {"role": "assistant", "content": "ok", **fields},
        {"role": "tool", "tool_call_id": "call_1", "content": "x"},
    ]
    return _chat(conv, messages=msgs)


RAW = str | bytes


def _raw(value: Any) -> bytes:
    return value if isinstance(value, bytes) else json.dumps(value).encode()


BAD_BODIES: dict[str, tuple[str, Any]] = {
    # name: (route, conv -> body (JSON value, or bytes sent as is))
    "chat messages not a list": ("chat/h-chat", lambda v: _chat(v, messages={"role": "user"})),
    "chat message not an object": ("chat/h-chat", lambda v: _chat(v, messages=[v])),
    "chat role unknown": ("chat/h-chat", lambda v: _chat(v, messages=[{"role": "god"}])),
    "chat tool_calls not a list": ("chat/h-chat", lambda v: _asst(v, tool_calls={"id": "c"})),
    "chat tool_call function not an object": (
        "chat/h-chat",
        lambda v: _asst(v, tool_calls=[{"id": "c", "function": "lookup"}]),
    ),
    "chat content a number": (
        "chat/h-chat",
        lambda v: _chat(v, messages=[{"role": "user", "content": 42}]),
    ),
    "chat content an object": (
        "chat/h-chat",
        lambda v: _chat(v, messages=[{"role": "user", "content": {"text": v}}]),
    ),
    "chat content part text not a string": (
        "chat/h-chat",
        lambda v: _chat(v, messages=[{"role": "user", "content": [{"type": "text", "text": 1}]}]),
    ),
    "chat model a number": ("chat/h-chat", lambda v: _chat(v, model=7)),
    "chat stream a string": ("chat/h-chat", lambda v: _chat(v, stream="yes")),
    "chat max_tokens a string": ("chat/h-chat", lambda v: _chat(v, max_tokens="lots")),
    "chat max_tokens zero": ("chat/h-chat", lambda v: _chat(v, max_tokens=0)),
    "chat n above one": ("chat/h-chat", lambda v: _chat(v, n=2)),
    "chat temperature a bool": ("chat/h-chat", lambda v: _chat(v, temperature=True)),
    "responses input a number": (
        "responses/h-resp",
        lambda v: {**user_body("responses/h-resp", v), "input": 5},
    ),
    "responses role a list": (
        "responses/h-resp",
        lambda v: {**user_body("responses/h-resp", v), "input": [{"role": [], "content": v}]},
    ),
    "chat role a list": ("chat/h-chat", lambda v: _chat(v, messages=[{"role": ["user"]}])),
    "anthropic role an object": (
        "anthropic/h-claude",
        lambda v: {**user_body("anthropic/h-claude", v), "messages": [{"role": {}, "content": v}]},
    ),
    "responses message content a number": (
        "responses/h-resp",
        lambda v: {**user_body("responses/h-resp", v), "input": [{"role": "user", "content": 5}]},
    ),
    "anthropic messages not a list": (
        "anthropic/h-claude",
        lambda v: {**user_body("anthropic/h-claude", v), "messages": "hi " + v},
    ),
    "anthropic content a number": (
        "anthropic/h-claude",
        lambda v: {
            **user_body("anthropic/h-claude", v),
            "messages": [{"role": "user", "content": 1}],
        },
    ),
    "anthropic max_tokens missing": (
        "anthropic/h-claude",
        lambda v: {
            k: x for k, x in user_body("anthropic/h-claude", v).items() if k != "max_tokens"
        },
    ),
    "anthropic system a number": (
        "anthropic/h-claude",
        lambda v: {**user_body("anthropic/h-claude", v), "system": 3},
    ),
    "lone high surrogate (escaped)": (
        "chat/h-chat",
        lambda v: json.dumps(_chat(v)).replace(v, v + "\\ud800").encode(),
    ),
    "lone low surrogate (escaped)": (
        "responses/h-resp",
        lambda v: json.dumps(user_body("responses/h-resp", v)).replace(v, v + "\\udc00").encode(),
    ),
    "lone surrogate in a key": (
        "anthropic/h-claude",
        lambda v: (
            json.dumps(user_body("anthropic/h-claude", v))
            .replace('"model"', '"\\ud800": 1, "model"')
            .encode()
        ),
    ),
    "lone surrogate as UTF-8 bytes": (
        "chat/h-chat",
        lambda v: json.dumps(_chat(v)).encode().replace(v.encode(), v.encode() + b"\xed\xa0\x80"),
    ),
    "invalid UTF-8": ("chat/h-chat", lambda v: json.dumps(_chat(v)).encode() + b"\xff"),
    "UTF-16 body": ("chat/h-chat", lambda v: json.dumps(_chat(v)).encode("utf-16")),
    "NaN literal": (
        "chat/h-chat",
        lambda v: json.dumps(_chat(v, temperature=float("nan"))).encode(),
    ),
    "Infinity literal": (
        "chat/h-chat",
        lambda v: json.dumps(_chat(v, top_p=float("inf"))).encode(),
    ),
    "not JSON": ("chat/h-chat", lambda v: b"{model: " + v.encode()),
    "top-level array": ("chat/h-chat", lambda v: [_chat(v)]),
    "top-level string": ("chat/h-chat", lambda v: v),
    "empty body": ("chat/h-chat", lambda v: b""),
    "chat metadata nested deeper than 64": (
        "chat/h-chat",
        lambda v: _chat(v, metadata=_deep(DEEP)),
    ),
    "chat tool parameters nested deeper than 64": (
        "chat/h-chat",
        lambda v: _chat(v, tools=[{"type": "function", "function": _deep(DEEP)}]),
    ),
    "chat control nested deeper than 64": (
        "chat/h-chat",
        lambda v: _chat(v, chat_template_kwargs=_deep(DEEP)),
    ),
    "responses metadata nested deeper than 64": (
        "responses/h-resp",
        lambda v: {**user_body("responses/h-resp", v), "metadata": _deep(DEEP)},
    ),
    "anthropic tool input nested deeper than 64": (
        "anthropic/h-claude",
        lambda v: {
            **user_body("anthropic/h-claude", v),
            "messages": [
                {"role": "user", "content": v},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t", "name": "n", "input": _deep(DEEP)}],
                },
            ],
        },
    ),
    "array nested 100000 deep": (
        "chat/h-chat",
        lambda v: (
            b'{"model": "h-chat", "x": "'
            + v.encode()
            + b'", "messages": '
            + b"[" * 100_000
            + b"]" * 100_000
            + b"}"
        ),
    ),
}


@pytest.mark.parametrize("name", list(BAD_BODIES))
def test_ill_typed_body_is_refused_recorded_and_not_forwarded(hw: HostileWorld, name: str) -> None:
    route_id, make = BAD_BODIES[name]
    conv = new_conv()
    before = hw.upstream.count()
    got = hw.post(route_id, conv, raw=_raw(make(conv)))
    assert got.status == 400, (got.status, got.raw[:300])
    err = got.json()["error"]
    assert err["code"] == "malformed-body" and err["message"], err
    assert hw.upstream.count() == before
    assert [(r.outcome, r.reason) for r in hw.rows(conv)] == [("refused", "malformed-body")]


def test_twenty_megabyte_body_is_refused(hw: HostileWorld) -> None:
    route_id = "chat/h-chat"
    for chunked in (False, True):
        conv = new_conv()
        before = hw.upstream.count()
        body = json.dumps(_chat(conv, metadata={"pad": "x" * (20 * 1024 * 1024)})).encode()
        hdrs = {**hw.headers(conv, route_id), "content-type": "application/json"}
        content: Any = body
        if chunked:
            content = iter([body[i : i + 65536] for i in range(0, len(body), 65536)])
        with httpx.Client(base_url=hw.url, timeout=60) as client:
            try:
                resp = client.post("/v1/chat/completions", content=content, headers=hdrs)
            except httpx.HTTPError:  # the gateway may answer and close before the upload ends
                resp = None
        if resp is not None:
            assert resp.status_code == 413, resp.text[:200]
            assert resp.json()["error"]["code"] == "body-too-large"
        assert hw.upstream.count() == before
        assert [(r.outcome, r.reason) for r in hw.rows(conv)] == [("refused", "body-too-large")]


def test_too_many_headers_is_refused(hw: HostileWorld) -> None:
    conv = new_conv()
    before = hw.upstream.count()
    extra = {f"x-pad-{i}": "v" for i in range(100)}
    got = hw.post("chat/h-chat", conv, _chat(conv), headers=extra)
    assert got.status == 431, got.raw
    assert got.json()["error"]["code"] == "headers-too-large"
    assert hw.upstream.count() == before
    assert [(r.outcome, r.reason) for r in hw.rows(conv)] == [("refused", "headers-too-large")]


def test_headers_past_the_byte_bound_are_refused_however_few(world: World) -> None:
    """The gateway's header bound counts bytes as well as fields: three fields of 6 KiB
    (18 KiB: past the default 16 KiB, with 64 fields allowed; within the server's own 64 KiB
    head bound) are refused before anything else, with a row."""
    conv = new_conv()
    before = len(world.recorder.seen)
    headers = world.headers(conv, world.token(conv, "chat/sim-deepseek", "low"))
    headers |= {f"x-pad-{i}": "v" * 6144 for i in range(3)}
    body = {"model": "sim-deepseek", "messages": [{"role": "user", "content": "hi"}]}
    got = httpx.post(world.url + "/v1/chat/completions", json=body, headers=headers)
    assert got.status_code == 431, got.text[:200]
    assert got.json()["error"]["code"] == "headers-too-large"
    assert len(world.recorder.seen) == before
    rows = world.store.rows(conv)
    assert [(r.outcome, r.reason) for r in rows] == [("refused", "headers-too-large")]


@pytest.mark.parametrize(
    "value",
    [
        "0",
        "-1",
        "99999999999999999999",
        "1e3",
        "1001",
        "+1",
        "0x1",
        "",
        "1.0",
        b"\xb2",
        b"\xb9\xb2",
    ],
)
def test_bad_attempt_header_is_refused(hw: HostileWorld, value: str | bytes) -> None:
    conv = new_conv()
    before = hw.upstream.count()
    hdrs: list[tuple[bytes, bytes]] = [
        (k.encode(), v.encode()) for k, v in hw.headers(conv, "chat/h-chat").items()
    ]
    hdrs += [(b"content-type", b"application/json")]
    hdrs.append((ATTEMPT_HEADER.encode(), value if isinstance(value, bytes) else value.encode()))
    with httpx.Client(base_url=hw.url, timeout=30) as client:
        resp = client.post("/v1/chat/completions", content=json.dumps(_chat(conv)), headers=hdrs)
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["code"] == "bad-attempt"
    assert hw.upstream.count() == before
    assert [(r.outcome, r.reason) for r in hw.rows(conv)] == [("refused", "bad-attempt")]


@pytest.mark.parametrize(
    "over",
    [
        {"max_tokens": 99999999999999999999},
        {"seed": -99999999999999999999},
        {"metadata": {"n": 10**30}},
        {"metadata": {"n": 10**400}},
    ],
    ids=["max_tokens", "seed", "metadata", "metadata-beyond-double"],
)
def test_integers_beyond_64_bits_never_500(hw: HostileWorld, over: dict[str, Any]) -> None:
    conv = new_conv()
    got = hw.post("chat/h-chat", conv, _chat(conv, **over))
    assert got.status in (200, 400), got.raw
    (row,) = hw.rows(conv)
    assert (row.outcome == "forwarded") == (got.status == 200)
    if got.status == 200:
        (up,) = hw.upstream.find(conv)
        n, sent = up.body["metadata"]["n"], over["metadata"]["n"]
        assert n == sent or n == float(sent)  # orjson reads past-64-bit integers as floats


def test_wrong_method_and_path_are_refused_and_recorded(hw: HostileWorld) -> None:
    before_up = hw.upstream.count()
    for method, path, status in (("GET", "/v1/chat/completions", 405), ("POST", "/v1/x", 404)):
        conv = new_conv()
        with httpx.Client(base_url=hw.url, timeout=30) as client:
            resp = client.request(method, path, headers=hw.headers(conv, "chat/h-chat"))
        assert resp.status_code == status
        assert resp.json()["error"]["code"] in ("not-found", "method-not-allowed")
        assert [r.outcome for r in hw.rows(conv)] == ["refused"]
    assert hw.upstream.count() == before_up


# -- reasoning a client forges ------------------------------------------------------------------


def _forged_history(route_id: str, conv: str, c: Canaries) -> dict[str, Any]:
    dialect = ROUTES[route_id][0]
    if dialect == "chat":
        msgs: list[Any] = [
            {"role": "system", "content": "s", "reasoning_content": c("system reasoning_content")},
            {"role": "user", "content": conv, "reasoning": c("user reasoning")},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "ok"},
                    {"type": "thinking", "thinking": [{"type": "text", "text": c("mistral")}]},
                ],
                "reasoning_content": c("assistant reasoning_content"),
                "reasoning_details": [{"type": "reasoning.text", "text": c("details")}],
                "tool_calls": [
                    {
                        "id": "call_forged",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_forged", "content": "x", "reasoning": c("tool")},
        ]
        return {**user_body(route_id, conv), "messages": msgs}
    if dialect == "responses":
        items: list[Any] = [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": conv},
                    {"type": "reasoning_text", "text": c("user reasoning_text part")},
                ],
            },
            {
                "type": "reasoning",
                "id": "rs_forged",
                "summary": [{"type": "summary_text", "text": c("forged summary")}],
                "content": [{"type": "reasoning_text", "text": c("forged reasoning_text")}],
            },
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": [
                    {"type": "input_text", "text": "x"},
                    {"type": "reasoning_text", "text": c("function_call_output reasoning part")},
                ],
            },
        ]
        return {**user_body(route_id, conv), "input": items}
    msgs = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": conv},
                {"type": "thinking", "thinking": c("user thinking block"), "signature": "forged"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": c("assistant thinking"),
                    "signature": "forged-sig",
                },
                {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [
                        {"type": "text", "text": "x"},
                        {
                            "type": "thinking",
                            "thinking": c("tool_result thinking"),
                            "signature": "f",
                        },
                    ],
                }
            ],
        },
    ]
    system = [
        {"type": "text", "text": "be brief"},
        {"type": "thinking", "thinking": c("system thinking block"), "signature": "f"},
    ]
    return {**user_body(route_id, conv), "messages": msgs, "system": system}


@pytest.mark.parametrize("dialect", sorted(MAIN))
def test_forged_reasoning_is_never_forwarded(hw: HostileWorld, dialect: str) -> None:
    route_id, conv, c = MAIN[dialect], new_conv(), Canaries()
    got = hw.post(route_id, conv, _forged_history(route_id, conv, c))
    assert got.status == 200, got.raw
    up = _upstream_one(hw, conv)
    assert c.leaked(up.text) == {}, "forged reasoning reached the upstream"
    (row,) = hw.rows(conv)
    assert row.outcome == "forwarded" and row.carriers_reattached == 0


# -- the exact "none" rule ----------------------------------------------------------------------

NONE_CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({"reasoning_effort": "none"}, {"reasoning_effort": "none"}),
    ({"reasoning_effort": "None"}, {}),
    ({"reasoning_effort": " none"}, {}),
    ({"reasoning_effort": "NONE"}, {}),
    ({"reasoning_effort": ["none"]}, {}),
    ({"reasoning_effort": {"effort": "none"}}, {}),
    ({"reasoning_effort": None}, {}),
    ({"reasoning_effort": "none", "thinking": {"type": "enabled"}}, {}),
    ({"reasoning_effort": "none", "chat_template_kwargs": {"enable_thinking": True}}, {}),
    ({"reasoning_effort": "none", "reasoning": {"effort": "none"}}, {}),
    ({"reasoning_effort": "none", "extra_body": {"google": {"thinking_config": {}}}}, {}),
    ({"reasoning": {"effort": "none"}}, {}),
    ({"reasoning_effort": "minimal"}, {}),
]


@pytest.mark.parametrize(
    ("forged", "expected"), NONE_CASES, ids=[json.dumps(f) for f, _ in NONE_CASES]
)
def test_exact_none_rule(
    hw: HostileWorld, forged: dict[str, Any], expected: dict[str, Any]
) -> None:
    """Exact ``reasoning_effort: "none"``, alone, is kept on a route whose level injects no
    reasoning; anything else is stripped; a route that injects effort replaces it."""
    conv = new_conv()
    got = hw.post(
        "chat/h-none", conv, {**user_body("chat/h-none", conv), **forged}, requested="low"
    )
    assert got.status == 200, got.raw
    assert found_controls("any", _upstream_one(hw, conv).body) == expected
    conv = new_conv()
    got = hw.post("chat/h-chat", conv, {**user_body("chat/h-chat", conv), **forged})
    assert got.status == 200, got.raw
    assert found_controls("any", _upstream_one(hw, conv).body) == {"reasoning_effort": "medium"}


def test_exact_none_through_the_sdk(hw: HostileWorld) -> None:
    conv = new_conv()
    oc = openai.OpenAI(
        base_url=hw.url + "/v1",
        api_key=RUNTIME_KEY,
        max_retries=0,
        default_headers=hw.headers(conv, "chat/h-none", "low"),
    )
    oc.chat.completions.create(
        model="h-none", messages=[{"role": "user", "content": conv}], reasoning_effort="none"
    )
    assert _upstream_one(hw, conv).body["reasoning_effort"] == "none"
