"""Spend is honest: a route declared ``local`` that reports no cost is free (a loopback
address alone is not: see test_payer.py for providers that bill), unknown prices are
estimates everywhere shown, explicit ids take their catalog prices, TOML routes declare a
price or ``free = true``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from reasonwire.errors import ConfigError
from reasonwire.eval import EvalConfig, build_matrix, run_eval
from reasonwire.eval._catalog import CatalogEntry
from reasonwire.eval._records import read_jsonl
from reasonwire.eval._report_html import render_html
from reasonwire.eval.budget import price_for
from reasonwire.eval.matrix import render_md
from reasonwire.eval.runner import Target
from reasonwire.routes import Route, route_from_table
from reasonwire.sim import SimServer


def _answer() -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            json={
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "NONE"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020},
            },
        )

    return httpx.MockTransport(handler)


def test_a_declared_local_route_that_reports_no_cost_is_free(
    sim: SimServer, tmp_path: Path
) -> None:
    route = Route("mine", "chat", sim.base_url, local=True)  # sim-qwen3 reports no cost
    res = run_eval(EvalConfig(targets=[Target(route, "sim-qwen3")], out=tmp_path))
    assert res.spent_usd == 0 and res.unknown_price == ()
    prices = {r.get("price") for r in read_jsonl(tmp_path / "calls.jsonl") if r["type"] == "call"}
    assert prices == {"free"}
    matrix = build_matrix(tmp_path)
    md = render_md(matrix)
    assert "$0.0000 spent ($0.0000 billed by the provider, $0.0000 estimated)." in md
    assert "price unknown" not in md


def test_a_loopback_address_alone_is_not_free(sim: SimServer, tmp_path: Path) -> None:
    """Not declared local, no price, no bill: the spend is an estimate at the unknown price,
    said so (a loopback gateway may well bill)."""
    route = Route("mine", "chat", sim.base_url)  # 127.0.0.1, local=False
    assert route.loopback and not route.local
    res = run_eval(EvalConfig(targets=[Target(route, "sim-qwen3")], out=tmp_path))
    assert res.spent_usd > 0 and res.unknown_price == ("mine/sim-qwen3",)
    assert res.billed_usd == 0 and res.estimated_usd == res.spent_usd
    prices = {r.get("price") for r in read_jsonl(tmp_path / "calls.jsonl") if r["type"] == "call"}
    assert prices == {"unknown"}


def test_an_unknown_price_is_an_estimate_everywhere(tmp_path: Path) -> None:
    route = Route("paid", "chat", "https://api.example.invalid/v1")
    res = run_eval(
        EvalConfig(targets=[Target(route, "m")], out=tmp_path, transport=_answer(), workers=1)
    )
    assert res.spent_usd > 0 and res.unknown_price == ("paid/m",)
    matrix = build_matrix(tmp_path)
    assert matrix["spent_estimate"] is True
    (row,) = matrix["rows"]
    assert row["price"] == "unknown"
    md = render_md(matrix)
    assert "estimated; estimate: price unknown for paid/m)" in md
    assert "is an estimate (price unknown)" in md
    assert "estimate: price unknown for paid/m" in render_html(matrix)


def test_toml_routes_declare_a_price_or_free() -> None:
    base = {"kind": "chat", "base_url": "https://api.example.invalid/v1"}
    priced = route_from_table("p", {**base, "price": {"prompt": 3.0, "completion": 15.0}})
    assert priced.price == (3e-6, 15e-6)
    assert price_for(None, priced)[1] == "listed"
    free = route_from_table("f", {**base, "free": True})
    assert price_for(None, free)[1] == "free"
    assert price_for(None, route_from_table("u", base))[1] == "unknown"
    bads: list[dict[str, Any]] = [
        {"free": "yes"},
        {"price": {"prompt": 1}},
        {"price": {"prompt": "x", "completion": 1}},
        {"free": True, "price": {"prompt": 1, "completion": 1}},
    ]
    for bad in bads:
        with pytest.raises(ConfigError):
            route_from_table("b", {**base, **bad})


def test_explicit_model_ids_take_the_catalog_price(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from reasonwire.eval import cli

    route = Route("paid", "chat", "https://api.example.invalid/v1")
    catalog: list[dict[str, Any]] = [
        {"id": "a/m1", "pricing": {"prompt": "0.000001", "completion": "0.000002"}},
    ]
    monkeypatch.setattr(cli, "fetch_catalog", lambda r, k: catalog)
    chosen = cli.select(cli._catalog(route, tmp_path / "x.env", "a/m1"), "a/m1")
    assert chosen == [CatalogEntry("a/m1", True, "", cli.classify(catalog[0]).price)]
    assert chosen[0].price is not None and chosen[0].price.completion == 2e-6
