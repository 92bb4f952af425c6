"""The report writers: schema, matrix layout, not-run reasons, escaping, self-containment."""

from __future__ import annotations

import json
from pathlib import Path

from reasonwire.audit.report import render_html, render_md, write_report
from reasonwire.audit.run import RunResult
from reasonwire.audit.trace import analyse
from tests.audit.test_classification import CLIENTS, _run, m_alter


def test_matrix_document_and_pages(audit_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from reasonwire.audit.report import build_document

    trace, _, _ = _run(audit_server, CLIENTS["anthropic"], m_alter)
    hostile = "<img src=x onerror=alert(1)>"
    run = RunResult(hostile, ["prog"], 0, 0.1, audit_server.exchanges, trace, reproduce="repro")
    doc = build_document(
        [run],
        unavailable=[{"framework": "x-fw", "column": "gemini", "reason": "not here <b>"}],
        versions={"x-fw": {"pins": ["x==1"]}},
    )
    assert doc["schema"] == "reasonwire.audit/1"
    assert doc["matrix"]["rows"] == [hostile]
    (cell,) = doc["matrix"]["cells"]
    assert cell["verdict"] == "rejected"
    assert cell["kinds"]["thinking.signature"]["loop"] == "altered"
    diff = next(e for e in cell["evidence"] if e["status"] == "altered")["diff"]
    assert diff["offset"] > 0
    html = render_html(doc)
    assert hostile not in html and "&lt;img src=x" in html
    assert "not here &lt;b&gt;" in html
    assert "<script" not in html and "<link" not in html
    md = render_md(doc)
    assert "x-fw (gemini): not here" in md and "first differing byte" in md
    out = write_report(tmp_path, doc, [run])
    assert (
        json.loads((out / "audit.json").read_text())["matrix"]["cells"][0]["reproduce"] == "repro"
    )
    assert analyse(audit_server.exchanges).requests[1].status == 400
