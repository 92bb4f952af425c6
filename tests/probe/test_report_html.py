"""``probe report --html``: one self-contained page, a chart per session (billed input and
re-sent reasoning per call), over a ledger the probe built from the recorded OpenAI sessions.

The page is read twice: by the standard library's HTML parser (always), and in headless
Chromium (Debian's ``chromium``; the test skips when it is not installed): the DOM the browser
built (``--dump-dom``) holds the same charts, and its screenshot shows the measured colour.
Expected bar values come from the recordings (tests/probe/test_resent_tokens.py's oracle).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from reasonwire.probe.cli import app
from tests.conformance.corpus import load_cassette
from tests.probe.test_resent_tokens import REFUSED, SESSIONS, _oracle, _run

CHROMIUM = shutil.which("chromium")
MEASURED_RGB = (0x1F, 0x6F, 0xB2)  # .resent-measured fill in the page's own style


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _parse(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, dict[str, list[dict[str, Any]]]]:
    ledger = tmp_path / "ledger"
    want: dict[str, list[dict[str, Any]]] = {}
    for name, session in [*SESSIONS, (REFUSED, "mod")]:
        its = load_cassette(name)
        want[session] = _oracle(its)
        _run(its, session, ledger)
    out = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["report", "--dir", str(ledger), "--html", str(out)])
    assert res.exit_code == 0, res.output
    return out, want


def _check(page: _Page, want: dict[str, list[dict[str, Any]]]) -> None:
    charts = [a for t, a in page.tags if t == "svg" and "chart" in (a.get("class") or "")]
    assert sorted(str(a["data-session"]) for a in charts) == sorted(want)
    rects = [a for t, a in page.tags if t == "rect" and a.get("data-call")]
    # the charts' bars, in page order: per session, per call with usage, three layers
    order = [str(a["data-session"]) for a in charts]
    got_billed = [float(a["data-value"] or 0) for a in rects if a.get("class") == "billed"]
    got_resent = [float(a["data-value"] or 0) for a in rects if a.get("class") == "resent-measured"]
    assert got_billed == [float(w["billed"]) for s in order for w in want[s] if w["billed"]]
    assert got_resent == [float(w["resent"]) for s in order for w in want[s] if w["billed"]]
    for est in (a for a in rects if a.get("class") == "resent-estimated"):
        assert float(est["data-value"] or 0) == 0


def test_html_structure_and_no_external_asset(
    built: tuple[Path, dict[str, list[dict[str, Any]]]],
) -> None:
    out, want = built
    text = out.read_text("utf-8")
    page = _parse(text)
    _check(page, want)
    assert not [t for t, _ in page.tags if t in ("script", "link", "img", "iframe", "object")]
    for _, attrs in page.tags:  # nothing is fetched: no URL but the SVG namespace
        for key, value in attrs.items():
            if key in ("src", "href") or (value and "://" in value and key != "xmlns"):
                raise AssertionError(f"external reference {key}={value!r}")


def _png_pixels(data: bytes) -> tuple[int, int, int, bytes]:
    """(width, height, bytes per pixel, raw rows) of an 8-bit RGB/RGBA PNG (stdlib only)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    width = height = bpp = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    out = bytearray()
    prev = bytearray(stride)
    for y in range(height):
        f, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        out += line
        prev = line
    return width, height, bpp, bytes(out)


_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


@pytest.mark.skipif(
    CHROMIUM is None, reason="Debian chromium not installed (apt-get install chromium)"
)
def test_html_in_headless_chromium(
    built: tuple[Path, dict[str, list[dict[str, Any]]]], tmp_path: Path
) -> None:
    out, want = built
    assert CHROMIUM is not None
    flags = [CHROMIUM, *_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(
        [*flags, "--dump-dom", out.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    _check(_parse(dom.stdout), want)  # the browser's own DOM: the same charts and bars
    shot = tmp_path / "shot.png"
    run = subprocess.run(
        [*flags, "--window-size=800,3200", f"--screenshot={shot}", out.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0 and shot.is_file(), run.stderr[-2000:]
    width, height, bpp, pixels = _png_pixels(shot.read_bytes())
    assert (width, height) == (800, 3200)
    measured = sum(
        1 for i in range(0, len(pixels), bpp) if tuple(pixels[i : i + 3]) == MEASURED_RGB
    )
    # The legend's swatch is 12 x 12 px; the three sessions' re-sent bars paint far more.
    assert measured > 4 * 144, measured
