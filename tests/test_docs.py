"""The documentation site builds with ``mkdocs --strict`` (a broken reference fails) and its
quickstart renders in headless Chromium with its heading and a code block."""

from __future__ import annotations

import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from reasonwire.wire.inventory import document
from tests.eval.test_report_html import CHROMIUM_APT, _png_pixels

ROOT = Path(__file__).resolve().parents[1]
HEADING = "Keep reasoning intact in a tool loop"


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.h1: list[str] = []
        self.code_blocks = 0
        self._in_h1 = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "h1":
            self._in_h1 = True
            self.h1.append("")
        if tag == "pre":
            self.code_blocks += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "h1":
            self._in_h1 = False

    def handle_data(self, data: str) -> None:
        if self._in_h1:
            self.h1[-1] += data


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs")
    work = tmp_path_factory.mktemp("docs")
    shutil.copytree(ROOT / "docs", work / "docs")
    (work / "docs" / "controls.md").write_text(document() + "\n", "utf-8")
    (work / "docs" / "matrix.md").write_text("# Consumption matrix\n\n(built by make docs)\n")
    config = (
        (ROOT / "mkdocs.yml").read_text("utf-8").replace("paths: [src]", f"paths: [{ROOT / 'src'}]")
    )
    (work / "mkdocs.yml").write_text(config, "utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(work / "mkdocs.yml")],
        capture_output=True, text=True, timeout=300, env={"NO_MKDOCS_2_WARNING": "1",
                                                          "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    return work / "build" / "site"


def test_strict_build_has_every_page(site: Path) -> None:
    for page in ("index.html", "quickstart/continuity/index.html", "controls/index.html",
                 "reference/agent/index.html", "reference/wire/index.html"):  # fmt: skip
        assert (site / page).is_file(), page
    api = (site / "reference" / "agent" / "index.html").read_text("utf-8")
    assert "reasonwire.agent.Agent" in api or "Agent" in api


def test_quickstart_renders_in_chromium(site: Path, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip(f"chromium not installed (CI: `{CHROMIUM_APT}`)")
    url = (site / "quickstart" / "continuity" / "index.html").as_uri()
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}"]  # fmt: skip
    shot = tmp_path / "quickstart.png"
    subprocess.run([*flags, f"--screenshot={shot}", "--window-size=1200,900", url],
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    dom = subprocess.run([*flags, "--dump-dom", url], check=True, capture_output=True,
                         timeout=120, text=True)  # fmt: skip
    page = _Page()
    page.feed(dom.stdout)
    assert any(HEADING in h for h in page.h1), page.h1
    assert page.code_blocks >= 2
    pixels = _png_pixels(shot)
    assert pixels.shape[:2] == (900, 1200)
    assert len({tuple(p) for p in pixels.reshape(-1, pixels.shape[-1])[::97]}) > 20  # not blank
