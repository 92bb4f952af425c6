"""The fold on the gateway's upstream requests, with the official SDKs as clients and the
simulator upstream (tapped: every request and answer body as bytes).

The expected folded text is written here from the rule in :mod:`reasonwire.wire.fold`'s
docstring (head + marker + tail; the texts are ASCII without CR, so every cut is safe),
applied to the reasoning the upstream itself answered with on turn 1, never by calling the
fold. What goes upstream unfolded is compared byte for byte with what a gateway without any
fold setting sends for the same conversation.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from reasonwire.govern.binding import KeyRing
from reasonwire.govern.cli import gateway as gateway_cli
from reasonwire.govern.evidence import SQLiteStore
from reasonwire.govern.gateway import Gateway
from reasonwire.govern.levels import LEVELS
from reasonwire.govern.registry import Registry, RouteRegistration
from reasonwire.govern.upstream_fold import fold_upstream
from reasonwire.govern.validator import mapping_id
from reasonwire.sim.app import build_app
from reasonwire.wire.fold import FoldSettings
from reasonwire.wire.registry import get_dialect
from tests.govern.conftest import (
    ANTHROPIC_BUDGET,
    ANTHROPIC_TOOLS,
    CHAT_TOOLS,
    POLICY,
    RESPONSES_TOOLS,
    ROOMY,
    UPSTREAM_KEY,
    UPSTREAM_KEY_ENV,
    Recorder,
    ThreadServer,
    World,
    anthropic_tool_reply,
    make_registry,
    new_conv,
)
from tests.govern.test_cli_errors import GOOD_POLICY, _one_line_error

HEAD, TAIL, FLOOR = 120, 90, 400
FOLD = FoldSettings(enabled=True, floor_chars=FLOOR, head_chars=HEAD, tail_chars=TAIL)
CANARY = "The verification word for this task is "
PROBE = "If a verification word was mentioned for this task, answer with only that word, else NONE."
# The simulator's first-turn reasoning quotes the task's first twelve words: long words make
# a reasoning text of about 800 characters, twice the floor.
LONG_WORDS = " ".join(f"w{i:02d}" + "x" * 60 for i in range(11))
BOUNDARY_TASK = "[boundary] " + LONG_WORDS + " Find the population of Lyon."


def long_task(conv: str) -> str:
    return f"[{conv}] {LONG_WORDS} Find the population of Lyon."


def folded_by_rule(text: str, head: int, tail: int) -> str:
    """The documented fold of an ASCII text without CR (every position is a safe cut):
    ``text[:head] + "\\n\\n[... N characters folded ...]\\n\\n" + text[len - tail:]``."""
    assert text.isascii() and "\r" not in text
    n = len(text)
    return text[:head] + f"\n\n[... {n - head - tail} characters folded ...]\n\n" + text[n - tail :]


class Tap(Recorder):
    """The recording upstream, with its calls in arrival order."""

    @property
    def calls(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.seen)


def _route(
    route_id: str, model: str, upstream: str, fold: FoldSettings | None
) -> RouteRegistration:
    return RouteRegistration(
        route_id=route_id,
        provider="sim",
        model=model,
        dialect="chat",
        upstream_base_url=upstream,
        qualification_id=f"Q-{route_id}",
        levels={lv: {"reasoning_effort": lv} for lv in LEVELS},
        credential_env=UPSTREAM_KEY_ENV,
        fold=fold,
    )


def _boundary_length(upstream: str) -> int:
    """How long the simulator's turn-1 reasoning for BOUNDARY_TASK is (asked directly)."""
    body = {
        "model": "sim-deepseek",
        "messages": [{"role": "user", "content": BOUNDARY_TASK}],
        "tools": CHAT_TOOLS,
    }
    r = httpx.post(upstream + "/chat/completions", json=body, headers={"authorization": "x"})
    r.raise_for_status()
    return len(r.json()["choices"][0]["message"]["reasoning_content"])


OPERATOR = replace(FOLD, providers=frozenset({"chat/fold-op", "chat/fold-pinned-off"}))


def fold_registry(upstream: str, boundary: int) -> Registry:
    """The shared routes plus: one the operator's settings fold (fold-op), one folding by its
    own setting (fold-own), one pinned off by its registration although the operator names
    it, one whose own setting names another route, the floor pair (a reasoning text of
    exactly ``floor`` and of ``floor + 1`` characters), and Anthropic / Responses routes with
    the fold on."""
    reg = make_registry(upstream)
    for route_id, fold in (
        ("chat/fold-op", None),
        ("chat/fold-own", FOLD),
        ("chat/fold-pinned-off", FoldSettings()),
        ("chat/fold-elsewhere", replace(FOLD, providers=frozenset({"chat/sim-chat-all"}))),
        ("chat/fold-at-floor", replace(FOLD, floor_chars=boundary)),
        ("chat/fold-under-floor", replace(FOLD, floor_chars=boundary + 1)),
    ):
        reg.add_route(_route(route_id, "sim-deepseek", upstream, fold))
    for old, new in (
        ("anthropic/sim-claude", "anthropic/fold"),
        ("responses/sim-gpt", "responses/fold"),
    ):
        reg.add_route(replace(reg.routes[old], route_id=new, fold=FOLD))
    return reg


@pytest.fixture(scope="module")
def tapped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[World, World, Tap]]:
    """(the folding gateway, a gateway without any fold setting, the upstream tap)."""
    mp = pytest.MonkeyPatch()
    mp.setenv(UPSTREAM_KEY_ENV, UPSTREAM_KEY)
    tap = Tap(build_app(seed=0))
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(ThreadServer(tap)).url + "/v1"
        boundary = _boundary_length(url)
        ring = KeyRing.generate("k1")
        plain = fold_registry(url, boundary)
        for r in list(plain.routes.values()):
            plain.add_route(replace(r, fold=None))
        worlds = []
        for reg, operator in ((fold_registry(url, boundary), OPERATOR), (plain, None)):
            store = SQLiteStore(tmp_path_factory.mktemp("ev") / "evidence.sqlite")
            stack.callback(store.close)
            gw = Gateway(reg, POLICY, ring, store, fold=operator, store_settings=ROOMY)
            srv = stack.enter_context(ThreadServer(gw.app))
            worlds.append(World(gw, tap, ring, srv.url, store, {"boundary": boundary}))  # type: ignore[arg-type]
        yield worlds[0], worlds[1], tap
    mp.undo()


def _answer_reasoning(raw: bytes) -> str:
    return str(json.loads(raw)["choices"][0]["message"]["reasoning_content"])


def chat_loop(world: World, conv: str, route_id: str, task: str, *, stream: bool = False) -> str:
    """Turn 1 (the model calls a tool), turn 2 (the tool result asks for the verification
    word, which lives only in the turn-1 reasoning the gateway re-attaches): the answer."""
    client = world.openai_client(conv, route_id, "low")
    messages: list[Any] = [{"role": "user", "content": task}]
    kw: Any = {"model": "sim-deepseek", "tools": CHAT_TOOLS}
    if stream:
        content, call_id, name, args = "", "", "", ""
        with client.chat.completions.create(messages=messages, stream=True, **kw) as s:
            for chunk in s:
                for ch in chunk.choices:
                    content += ch.delta.content or ""
                    for tc in ch.delta.tool_calls or []:
                        call_id = tc.id or call_id
                        name = (tc.function and tc.function.name) or name
                        args += (tc.function and tc.function.arguments) or ""
        assistant: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            ],
        }
    else:
        first = client.chat.completions.create(messages=messages, **kw)
        assistant = first.choices[0].message.model_dump(exclude_none=True)
        assert first.choices[0].message.tool_calls
        call_id = first.choices[0].message.tool_calls[0].id
    messages += [assistant, {"role": "tool", "tool_call_id": call_id, "content": "1. " + PROBE}]
    final = client.chat.completions.create(messages=messages, **kw)
    return final.choices[0].message.content or ""


def _turn1_reasoning(tap: Tap, marker: str, stream: bool = False) -> str:
    """The reasoning the upstream answered turn 1 with (JSON, or the SSE deltas joined)."""
    raw = tap.find(marker)[0]["answer"]
    if not stream:
        return _answer_reasoning(raw)
    parts = []
    for line in raw.decode().splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            for ch in json.loads(line[6:]).get("choices", []):
                parts.append(ch.get("delta", {}).get("reasoning_content") or "")
    return "".join(parts)


def _sent_reasoning(call: dict[str, Any]) -> list[str]:
    """The reasoning_content of every assistant message of a request as it went upstream."""
    body = json.loads(call["request"])
    return [m["reasoning_content"] for m in body["messages"] if "reasoning_content" in m]


# -- folded ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("route_id", "stream"),
    [("chat/fold-op", False), ("chat/fold-op", True), ("chat/fold-own", False)],
)
def test_long_replayed_reasoning_is_folded_upstream(
    tapped: tuple[World, World, Tap], route_id: str, stream: bool
) -> None:
    world, _, tap = tapped
    conv = new_conv()
    answer = chat_loop(world, conv, route_id, long_task(conv), stream=stream)
    original = _turn1_reasoning(tap, conv, stream)
    assert len(original) > FLOOR and CANARY in original[-TAIL:]
    first, second = tap.find(conv)
    assert _sent_reasoning(first) == []
    assert _sent_reasoning(second) == [folded_by_rule(original, HEAD, TAIL)]
    word = original.split(CANARY, 1)[1].rstrip(".")
    assert answer == word  # the upstream read the folded text's tail
    rows = world.store.rows(conv)
    assert [(r.outcome, r.carriers_reattached) for r in rows] == [
        ("forwarded", 0),
        ("forwarded", 1),
    ]


@pytest.mark.parametrize(
    ("route_id", "folds"), [("chat/fold-at-floor", True), ("chat/fold-under-floor", False)]
)
def test_threshold_at_floor_and_one_past_it(
    tapped: tuple[World, World, Tap], route_id: str, folds: bool
) -> None:
    world, _, tap = tapped
    conv = new_conv()
    before = len(tap.calls)
    chat_loop(world, conv, route_id, BOUNDARY_TASK)
    first, second = tap.calls[before:]
    original = _answer_reasoning(first["answer"])
    # the floor is the minimum length that folds (the spec): at-floor floor_chars ==
    # len(original) folds; under-floor floor_chars == len(original) + 1 keeps it
    assert len(original) == world.extra["boundary"]
    expected = folded_by_rule(original, HEAD, TAIL) if folds else original
    assert _sent_reasoning(second) == [expected]


# -- unchanged -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "route_id",
    [
        "chat/sim-deepseek",  # no setting of its own, not named by the operator's settings
        "chat/fold-elsewhere",  # its own setting's providers name another route
        "chat/fold-pinned-off",  # named by the operator, pinned off by its registration
    ],
)
def test_unfolded_routes_send_the_bytes_of_a_gateway_without_fold(
    tapped: tuple[World, World, Tap], route_id: str
) -> None:
    folding, plain, tap = tapped
    conv = new_conv()
    answers = [chat_loop(w, conv, route_id, long_task(conv)) for w in (folding, plain)]
    calls = tap.find(conv)
    assert len(calls) == 4 and answers[0] == answers[1]
    assert [c["request"] for c in calls[:2]] == [c["request"] for c in calls[2:]]
    assert _sent_reasoning(calls[1]) == [_answer_reasoning(calls[0]["answer"])]
    assert len(_sent_reasoning(calls[1])[0]) > FLOOR  # long enough to fold, had it applied


def test_anthropic_signed_thinking_is_never_folded(tapped: tuple[World, World, Tap]) -> None:
    world, _, tap = tapped
    conv = new_conv()
    client = world.anthropic_client(conv, "anthropic/fold", "high")
    kw: Any = {
        "model": "sim-claude",
        "max_tokens": 20000,
        "tools": ANTHROPIC_TOOLS,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    messages: list[Any] = [{"role": "user", "content": long_task(conv)}]
    first = client.messages.create(messages=messages, **kw)
    messages += anthropic_tool_reply(first.content, "1. " + PROBE)
    final = client.messages.create(messages=messages, **kw)
    one, two = tap.find(conv)
    block = json.loads(one["answer"])["content"][0]
    assert block["type"] == "thinking" and len(block["thinking"]) > FLOOR
    sent = json.loads(two["request"])["messages"][1]["content"][0]
    assert sent == block  # text and signature as the upstream gave them
    text = [b for b in final.content if b.type == "text"][-1]
    assert text.type == "text" and text.text == block["thinking"].split(CANARY, 1)[1].rstrip(".")
    assert json.loads(two["request"])["thinking"]["budget_tokens"] == ANTHROPIC_BUDGET["high"]


def test_responses_encrypted_content_is_never_folded(tapped: tuple[World, World, Tap]) -> None:
    world, _, tap = tapped
    conv = new_conv()
    client = world.openai_client(conv, "responses/fold", "high")
    kw: Any = {
        "model": "sim-gpt",
        "tools": RESPONSES_TOOLS,
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    first = client.responses.create(input=long_task(conv), **kw)
    rs, call = first.output[0], first.output[1]
    assert rs.type == "reasoning" and call.type == "function_call"
    items: list[Any] = [{"role": "user", "content": long_task(conv)}]
    items += [o.model_dump(exclude_none=True) for o in first.output]
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "1. " + PROBE})
    final = client.responses.create(input=items, **kw)
    one, two = tap.find(conv)
    item = json.loads(one["answer"])["output"][0]
    assert item["type"] == "reasoning" and len(item["encrypted_content"]) > FLOOR
    assert json.loads(two["request"])["input"][1] == item  # the original item, whole
    assert final.output_text and final.output_text != "NONE"  # the seal still opened


# -- settings --------------------------------------------------------------------------------


def test_the_fold_is_not_part_of_what_a_level_means() -> None:
    route = make_registry("http://127.0.0.1:9/v1").routes["chat/sim-deepseek"]
    assert mapping_id(replace(route, fold=FOLD)) == mapping_id(route)


@pytest.mark.parametrize(
    ("entry", "folds"),
    [
        ("chat/sim-deepseek", True),
        ("127.0.0.1:9", True),  # the upstream host, as the fold transport names hosts
        ("chat/sim-deepseek/sim-deepseek", True),
        ("127.0.0.1:9/sim-deepseek", True),
        ("127.0.0.1:9/sim-gpt", False),
        ("127.0.0.1", False),  # the host name without the port is not the host
    ],
)
def test_settings_name_a_route_by_id_host_and_model(entry: str, folds: bool) -> None:
    route = make_registry("http://127.0.0.1:9/v1").routes["chat/sim-deepseek"]
    text = "r" * 300 + CANARY + "indigo." + "s" * 200
    body: dict[str, Any] = {
        "model": "sim-deepseek",
        "messages": [{"role": "assistant", "content": "", "reasoning_content": text}],
    }
    settings = replace(FOLD, providers=frozenset({entry}))
    out = fold_upstream(get_dialect("chat"), body, route, settings)
    want = folded_by_rule(text, HEAD, TAIL) if folds else text
    assert out["messages"][0]["reasoning_content"] == want
    assert (out is body) is not folds and body["messages"][0]["reasoning_content"] == text


def test_operator_entries_naming_no_route_are_refused() -> None:
    from reasonwire.errors import ConfigError

    reg = make_registry("http://127.0.0.1:9/v1")
    ring = KeyRing.generate("k1")
    for entry in (
        "chat/sim-deepseek",
        "127.0.0.1:9",
        "chat/sim-deepseek/sim-deepseek",
        "127.0.0.1:9/sim-gpt",
    ):
        Gateway(reg, POLICY, ring, fold=replace(FOLD, providers=frozenset({entry})))
    for field in ("providers", "drop"):
        with pytest.raises(ConfigError, match="no registered route is named by 'chat/nope'"):
            Gateway(reg, POLICY, ring, fold=replace(FOLD, **{field: frozenset({"chat/nope"})}))


# -- gateway serve --fold ----------------------------------------------------------------------


@pytest.fixture
def serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[Any]]:
    """``gateway serve`` arguments over the shared routes, and the gateways it would serve
    (its serving step is replaced: nothing listens)."""
    name = "rw_fold_policy_" + tmp_path.name.replace("-", "_")
    (tmp_path / f"{name}.py").write_text(
        GOOD_POLICY.replace(
            "REGISTRY = Registry()",
            "from tests.govern.conftest import make_registry\n"
            "REGISTRY = make_registry('http://127.0.0.1:9/v1')",
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    served: list[Any] = []
    monkeypatch.setattr(gateway_cli, "_serve_gateway", lambda gw, *a: served.append(gw))
    keys = tmp_path / "keys"
    KeyRing.generate("k1").save_dir(keys)
    args = ["serve", "--policy", name, "--keys", str(keys), "--evidence", str(tmp_path / "e.db")]
    return args, served


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (None, "cannot read fold settings"),
        ("[fold\n", "is not valid TOML"),
        (
            "[fold]\nenabled = true\nfloor_chars = 10\nhead_chars = 5\ntail_chars = 5\n",
            "floor_chars (10)",
        ),
        ("[fold]\nenabled = true\nproviders = ['chat/nope']\n", "no registered route is named by"),
    ],
)
def test_serve_refuses_bad_fold_settings_in_one_line(
    serve: tuple[list[str], list[Any]], tmp_path: Path, text: str | None, says: str
) -> None:
    args, served = serve
    f = tmp_path / "fold.toml"
    if text is not None:
        f.write_text(text)
    res = CliRunner().invoke(gateway_cli.app, [*args, "--fold", str(f)])
    assert says in _one_line_error(res) and served == []


@pytest.mark.parametrize("given", [True, False])
def test_serve_passes_the_fold_settings_to_the_gateway(
    serve: tuple[list[str], list[Any]], tmp_path: Path, given: bool
) -> None:
    args, served = serve
    f = tmp_path / "fold.toml"
    f.write_text(
        "[fold]\nenabled = true\nfloor_chars = 401\nhead_chars = 100\ntail_chars = 300\n"
        "providers = ['responses/sim-gpt']\n"
    )
    res = CliRunner().invoke(gateway_cli.app, [*args, *(["--fold", str(f)] if given else [])])
    assert res.exit_code == 0, res.output
    (gw,) = served
    want = FoldSettings(True, 401, 100, 300, frozenset({"responses/sim-gpt"}))
    assert gw.fold == (want if given else None)  # off unless asked for
