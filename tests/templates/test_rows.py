"""Scan rows: a ``templates.json`` written before rows were typed reads back and writes again
byte for byte (as ``write_outputs`` writes it), and the HTML report reads it through the
same codec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reasonwire.errors import ConfigError
from reasonwire.eval._report_html import templates_section
from reasonwire.method.verdicts import Verdict
from reasonwire.templates.rows import Row, read_rows

V1 = Path(__file__).parent / "data" / "templates-v1.json"


def test_rows_of_the_untyped_scan_round_trip() -> None:
    text = V1.read_text(encoding="utf-8")
    rows = read_rows(json.loads(text))
    assert {r.verdict for r in rows} >= {Verdict.ERROR, Verdict.IN_LOOP_ONLY}
    again = json.dumps([r.to_json() for r in rows], indent=2, ensure_ascii=False) + "\n"
    assert again == text


def test_the_report_section_reads_rows_and_says_when_it_cannot(tmp_path: Path) -> None:
    (tmp_path / "templates.json").write_text(V1.read_text(encoding="utf-8"), encoding="utf-8")
    section = templates_section(tmp_path)
    assert section is not None and 'data-verdict="error"' in section
    bad = json.loads(V1.read_text())
    bad[0]["trace_tokens"] = "many"
    (tmp_path / "templates.json").write_text(json.dumps(bad))
    section = templates_section(tmp_path)
    assert section is not None and "could not be read" in section and "trace_tokens" in section


def test_a_row_that_does_not_fit_is_refused() -> None:
    with pytest.raises(ConfigError, match="expected a list"):
        read_rows({"rows": []})
    row = json.loads(V1.read_text())[0]
    del row["source"]
    with pytest.raises(ConfigError, match=r"templates\.json row 0: missing key 'source'"):
        read_rows([row])
    assert Row.from_json(json.loads(V1.read_text())[0]).template
