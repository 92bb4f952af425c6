"""The full frameworks run (``make test-audit``): every framework in its own pinned venv
(installed from the registry on first use), every variant it speaks. Frameworks or variants
that cannot run are listed with a reason; reasonwire's own agent is kept in every cell. The
report is written to ``$REASONWIRE_AUDIT_OUT`` (default: a temporary directory)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reasonwire.audit.frameworks import FRAMEWORKS, VARIANTS, run_frameworks
from reasonwire.audit.report import build_document, write_report


@pytest.mark.audit_frameworks
@pytest.mark.timeout(7200)
def test_all_frameworks(tmp_path: Path) -> None:
    res = run_frameworks(log=print)
    out = Path(os.environ.get("REASONWIRE_AUDIT_OUT") or tmp_path)
    doc = build_document(res.runs, res.unavailable, res.versions)
    write_report(out, doc, res.runs)
    cells = {(c["row"], c["column"]): c for c in doc["matrix"]["cells"]}
    for fw in FRAMEWORKS:
        for v in VARIANTS:
            listed = [u for u in res.unavailable if u["framework"] == fw.name]
            assert (fw.name, VARIANTS[v]) in cells or any(
                u.get("column") in (VARIANTS[v], None) and u["reason"] for u in listed
            ), (fw.name, v)
    for v in VARIANTS.values():
        assert cells[("reasonwire-agent", v)]["verdict"] == "kept"
