"""The documentation site builds with ``mkdocs --strict`` (a broken reference fails) and its
quickstart renders in headless Chromium with its heading and a code block; every command
``reasonwire --help`` lists has captured output on a command page, and those blocks are what
the commands print (``tools/docs_capture.py`` runs them again)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from tools import docs_capture as capture

from reasonwire.cli import command
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
                 "reference/agent/index.html", "reference/wire/index.html",
                 *(f"commands/{p.stem}/index.html".replace("index/", "")
                   for p in capture.pages())):  # fmt: skip
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


# ------------------------------------------------------------------------------------------
# the command pages: every command shown, every block from a run
# ------------------------------------------------------------------------------------------

SLOW = frozenset(
    {"eval-run", "eval-report", "fold-plan", "templates-scan", "audit", "localserver-serve"}
)
"""Scenes the default suite does not run again (a simulator eval run, a template scan, the
audit, a llama-server start: a minute or more together); ``REASONWIRE_DOCS_FULL=1`` runs them
too (the eval run's call count and spend vary with the simulated portal's lane draws under
concurrent workers, so that block matches only in shape). Their blocks are still checked for
shape below."""

BLOCKS = [b for page in capture.pages() for b in capture.blocks(page)]
SCENES = {s.name: s for s in capture.SCENES}


def test_every_command_has_captured_output() -> None:
    """Each command of ``reasonwire --help`` is run on some page (``$ reasonwire NAME ...``)."""
    commands = set(command().commands)
    assert {"inspect", "doctor", "eval", "audit", "fold", "templates"} <= commands
    shown = {
        b.text.splitlines()[0].split()[2]
        for b in BLOCKS
        if b.text.startswith("$ reasonwire ") and len(b.text.split()) > 2
    }
    assert commands - shown == set(), sorted(commands - shown)


def test_every_page_is_in_the_nav_and_every_scene_on_a_page() -> None:
    nav = (ROOT / "mkdocs.yml").read_text("utf-8")
    for page in capture.pages():
        assert f"commands/{page.name}" in nav, page.name
    assert {b.name for b in BLOCKS} == set(SCENES)


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: f"{b.page.stem}:{b.name}")
def test_block_is_the_scene_it_names(block: capture.Block) -> None:
    """The block opens with the scene's own command line and holds what it printed (a server
    scene at least its ``^C``)."""
    assert block.name in SCENES, f"{block.page.name}: unknown scene {block.name}"
    lines = block.text.splitlines()
    assert lines and lines[0] == f"$ {SCENES[block.name].line()}", lines[:1]
    assert len(lines) > 1, f"{block.page.name}: [{block.name}] holds no output: run make docs"


def test_blocks_came_from_the_run(tmp_path: Path) -> None:
    """Run the scenes again (offline: the simulator in-process, files made first) and compare
    each page's block with what the command prints now, durations and digests masked."""
    pytest.importorskip("typer")
    full = os.environ.get("REASONWIRE_DOCS_FULL") == "1"
    only = set(SCENES) if full else set(SCENES) - SLOW
    captured = capture.run_all(tmp_path, only)
    assert set(captured) == only
    assert capture.check(captured) == []


def test_check_sees_a_changed_block(tmp_path: Path) -> None:
    """A block edited by hand (one figure changed) is not what the command prints."""
    block = next(b for b in BLOCKS if b.name == "inspect")
    edited = re.sub(
        r"input_uncached=(\d+)", lambda m: f"input_uncached={int(m[1]) + 1}", block.text
    )
    assert edited != block.text
    assert capture.masked(edited) != capture.masked(block.text)
