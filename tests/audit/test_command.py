"""``reasonwire audit -- <command>`` on programs that know nothing of reasonwire: two using the
official openai SDK (Responses, store=false with whole items; store=true with
``item_reference`` entries) and one speaking Anthropic with httpx by hand; the CLI writes
audit.json, audit.md and audit.html."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from reasonwire.audit.cli import app
from reasonwire.audit.report import SCHEMA, build_document
from reasonwire.audit.run import DUMMY_KEY, audit_command

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def test_openai_sdk_responses_stateless_program() -> None:
    run = audit_command([sys.executable, str(SCRIPTS / "openai_responses_stateless.py")])
    assert run.exit_code == 0
    reqs = [r for r in run.trace.requests if r.dialect]
    assert [r.status for r in reqs] == [200, 200]
    assert reqs[0].variant == "responses store=false"
    kinds = {o.atom.kind: o.status for o in reqs[1].observations}
    assert kinds["reasoning_item.encrypted_content"] == "kept"
    doc = build_document([run])
    (cell,) = doc["matrix"]["cells"]
    assert cell["verdict"] == "kept" and cell["column"] == "responses store=false"
    assert doc["schema"] == SCHEMA
    # no header the program sent with its (dummy) key is kept
    assert all("authorization" not in ex.request_headers for ex in run.exchanges)


def test_item_reference_program_keeps_its_carriers() -> None:
    """store=true, every earlier output item sent back as ``{"type": "item_reference", "id"}``
    (what the Vercel AI SDK sends; issue 24): the server uses the stored items, so the
    carriers the references stand for are kept, not dropped; every request is accepted."""
    run = audit_command([sys.executable, str(SCRIPTS / "openai_responses_item_reference.py")])
    assert run.exit_code == 0
    reqs = [r for r in run.trace.requests if r.dialect]
    assert [r.status for r in reqs] == [200] * 4  # two turns of one tool round each
    assert {r.variant for r in reqs} == {"responses store=true"}
    sent = [json.loads(ex.request_body)["input"] for ex in run.exchanges]
    assert all(
        set(item) == {"type", "id"} for inp in sent for item in inp if "id" in item
    )  # the program never sent an item whole: only references
    enc = [
        o for r in reqs for o in r.observations if o.atom.kind == "reasoning_item.encrypted_content"
    ]
    # one reasoning item per answer: request k sees the k answers before it (1 + 2 + 3)
    assert len(enc) == 6 and {o.status for o in enc} == {"server"}
    assert {o.scope for o in enc} == {"in_loop", "cross_turn"}
    assert all("reference by id" in o.note for o in enc)
    doc = build_document([run])
    (cell,) = doc["matrix"]["cells"]
    assert cell["column"] == "responses store=true"
    assert cell["verdict"] == "kept"
    kind = cell["kinds"]["reasoning_item.encrypted_content"]
    assert (kind["loop"], kind["cross"]) == ("kept", "kept")
    # across turns only the reasoning items' ids are re-sent (in the references), never their
    # encrypted content: the answers of turn 1 (exchanges 0, 1), referenced by both requests
    # of turn 2
    rs_ids = [
        o["id"]
        for ex in run.exchanges[:2]
        for o in json.loads(ex.response_body)["output"]
        if o["type"] == "reasoning"
    ]
    assert cell["resent_bytes"] == 2 * sum(len(i) for i in rs_ids)


def test_item_reference_program_without_reasoning_references_is_rejected() -> None:
    """The twin that references the calls and messages but not the reasoning items: refused
    (WIRE.md > Responses API, "Pairing"), and the reasoning is dropped, not kept."""
    run = audit_command(
        [sys.executable, str(SCRIPTS / "openai_responses_item_reference.py"), "--break"],
        label="broken",
    )
    assert run.exit_code == 1
    reqs = [r for r in run.trace.requests if r.dialect]
    assert [r.status for r in reqs] == [200, 400]
    assert "without its required 'reasoning' item" in (reqs[1].error or "")
    (cell,) = build_document([run])["matrix"]["cells"]
    assert cell["verdict"] == "rejected"
    assert cell["kinds"]["reasoning_item.encrypted_content"]["loop"] == "dropped"


def test_httpx_program_and_its_broken_twin(tmp_path: Path) -> None:
    good = audit_command([sys.executable, str(SCRIPTS / "httpx_anthropic.py")], label="httpx")
    bad = audit_command(
        [sys.executable, str(SCRIPTS / "httpx_anthropic.py"), "--break"], label="httpx-broken"
    )
    assert good.exit_code == 0 and bad.exit_code == 1
    doc = build_document([good, bad])
    cells = {c["row"]: c for c in doc["matrix"]["cells"]}
    assert cells["httpx"]["verdict"] == "kept"
    broken = cells["httpx-broken"]
    assert broken["verdict"] == "rejected"
    assert broken["kinds"]["thinking.signature"]["loop"] == "dropped"
    assert broken["first_rejection"]["status"] == 400
    assert "thinking" in broken["first_rejection"]["error"]
    ev = [
        e
        for e in broken["evidence"]
        if e["status"] == "dropped" and e["kind"].endswith("signature")
    ]
    assert ev and ev[0]["expected_path"] == "messages[1].content[0].signature"


def test_cli_writes_the_three_reports(tmp_path: Path) -> None:
    out = tmp_path / "out"
    script = str(SCRIPTS / "httpx_anthropic.py")
    res = CliRunner().invoke(app, ["--out", str(out), "--", sys.executable, script])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "audit.json").read_text())
    assert doc["schema"] == "reasonwire.audit/1"
    (cell,) = doc["matrix"]["cells"]
    assert cell["verdict"] == "kept"
    assert cell["reproduce"].startswith("reasonwire audit --out ")
    html = (out / "audit.html").read_text()
    assert "<script" not in html and "http://" not in html.replace(cell["reproduce"], "")
    assert 'data-verdict="kept"' in html
    assert "| framework |" in (out / "audit.md").read_text()
    exchanges = list((out / "exchanges").glob("*.jsonl"))
    assert exchanges and DUMMY_KEY not in exchanges[0].read_text()


def test_google_genai_interactions_program_keeps_its_signatures() -> None:
    """The Interactions API through google-genai, store=false, every step resent: the thought
    signature is kept and the loop is accepted; the twin that drops the thought steps is
    refused by the documented signature rule (400) and the signature reported dropped."""
    script = str(SCRIPTS / "google_interactions_stateless.py")
    run = audit_command([sys.executable, script])
    assert run.exit_code == 0
    reqs = [r for r in run.trace.requests if r.dialect]
    assert [(r.status, r.dialect) for r in reqs] == [(200, "interactions")] * 2
    assert [(o.atom.kind, o.status) for o in reqs[1].observations] == [
        ("thought_signature", "kept")
    ]
    (cell,) = build_document([run])["matrix"]["cells"]
    assert (cell["column"], cell["verdict"]) == ("interactions store=false", "kept")

    broken = audit_command([sys.executable, script, "--strip"], label="strip")
    assert broken.exit_code != 0
    reqs = [r for r in broken.trace.requests if r.dialect]
    assert [r.status for r in reqs] == [200, 400]
    assert [(o.atom.kind, o.status) for o in reqs[1].observations] == [
        ("thought_signature", "dropped")
    ]
    (cell,) = build_document([broken])["matrix"]["cells"]
    assert cell["verdict"] == "rejected"
