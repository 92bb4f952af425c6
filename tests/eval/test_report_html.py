"""report.html from a real harness run against the simulator, checked as a browser renders it.

The run covers a subset of simulator behaviours chosen to hit every chip colour (consumed,
~0, partial, rejected) and every dialect. The expected rows, verdicts and colour classes come
from the matrix dict (whose verdicts ``test_sim_truth`` checks against the simulator's truth),
never from the HTML itself; headless Chromium renders the page, the DOM it dumps is parsed,
and the screenshot's pixels must contain the legend colours of the outcomes present.
"""

from __future__ import annotations

import copy
import os
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reasonwire.eval import EvalConfig, build_matrix, run_eval
from reasonwire.eval._embedded import sim_targets
from reasonwire.eval._report_html import REPORT_HTML, render_html, write_html
from reasonwire.eval.fixture import POSITIONS
from reasonwire.eval.matrix import write_reports
from reasonwire.sim import SimServer

MODELS = ("sim-chat-all", "sim-qwen3", "sim-r1", "sim-openrouter", "sim-gpt", "sim-claude",
          "sim-gemini")  # fmt: skip
CHROMIUM_APT = "apt-get update && apt-get install -y chromium"
# legend backgrounds (report_html._CSS) of the chip classes
BACKGROUND = {"o-consumed": (0xC6, 0xF6, 0xD5), "o-rejected": (0xFE, 0xD7, 0xD7),
              "o-zero": (0xED, 0xF2, 0xF7), "o-partial": (0xFE, 0xFC, 0xBF)}  # fmt: skip


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("report-run")
    with SimServer(seed=0) as sim:
        targets = [t for t in sim_targets(sim.base_url, sim.root_url) if t.model in MODELS]
        run_eval(EvalConfig(targets=targets, out=out, workers=8, lane_attempts=12))
    from reasonwire.templates.scan import corpus_sources, scan, write_outputs

    qwen = [s for s in corpus_sources() if s.name == "Qwen-Qwen3-0.6B"]
    write_outputs(scan(qwen), out)
    matrix = write_reports(out)
    write_html(out, matrix)
    return out, matrix


def _chips(matrix: dict[str, Any]) -> list[tuple[tuple[str, str, str], str, str, str]]:
    """(row id, verdict, position, class) of every chip, from the matrix alone."""
    th = matrix["thresholds"]
    out = []
    for r in matrix["rows"]:
        rid = (r["route"], r["model"], r["lane"])
        variants = [v for v in matrix["variants"].get(r["dialect"], []) if v != "none"]
        entries = [(r["text"].get(v), th["consume_ratio"] * r["T"]) for v in variants]
        entries += [(r["opaque"][x], th["opaque_min"]) for x in sorted(r["opaque"])]
        for entry, thr in entries:
            if not entry:
                continue
            for p in POSITIONS:
                pos = entry[p]
                out.append((rid, entry["verdict"], p, _expected_class(pos, thr)))
    return out


def _expected_class(pos: dict[str, Any], threshold: float) -> str:
    """The legend's rule, restated from the report's documentation (LEGEND)."""
    outcome, delta = pos["outcome"], pos.get("delta")
    if outcome in ("consumed", "required"):
        return "o-consumed"
    if outcome == "rejected":
        return "o-rejected"
    if outcome == "baseline-failed":
        return "o-error"
    if delta is None:
        return "o-error" if pos.get("error") or pos.get("errors") else "o-missing"
    return "o-partial" if abs(delta) >= 0.1 * threshold else "o-zero"


class _Dom(HTMLParser):
    """Rows, verdict cells and chips of the rendered matrix tables."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, str, str]] = []
        self.chips: list[tuple[tuple[str, str, str], str, str, str]] = []
        self.titles: list[str] = []
        self._verdict = ""
        self._in_matrix = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if "title" in a:
            self.titles.append(a["title"])
        if tag == "table":
            self._in_matrix = "matrix" in a.get("class", "").split()
        elif tag == "tr" and self._in_matrix and "data-model" in a:
            self.rows.append((a["data-route"], a["data-model"], a["data-lane"]))
        elif tag == "td" and "data-verdict" in a and self._in_matrix:
            self._verdict = a["data-verdict"]
        elif tag == "span" and "chip" in a.get("class", "").split() and self._in_matrix:
            cls = next(c for c in a["class"].split() if c.startswith("o-"))
            self.chips.append((self.rows[-1], self._verdict, a["data-pos"], cls))


def _png_pixels(path: Path) -> np.ndarray:
    """RGB pixels of an 8-bit non-interlaced PNG (what Chromium writes), stdlib + numpy."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        (length,), kind = struct.unpack(">I", data[pos : pos + 4]), data[pos + 4 : pos + 8]
        chunk = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            assert depth == 8 and interlace == 0, (depth, interlace)
            channels = {2: 3, 6: 4}[ctype]
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8)
    stride = width * channels
    rows = raw.reshape(height, stride + 1)
    img = np.zeros((height, stride), dtype=np.int32)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(height):
        ftype, line = rows[y, 0], rows[y, 1:].astype(np.int32)
        if ftype == 0:
            cur = line
        elif ftype == 2:
            cur = (line + prev) & 0xFF
        else:  # sub, average, paeth depend on the left pixel: per byte
            cur = np.zeros(stride, dtype=np.int32)
            for x in range(stride):
                left = cur[x - channels] if x >= channels else 0
                up, ul = prev[x], (prev[x - channels] if x >= channels else 0)
                if ftype == 1:
                    pred = left
                elif ftype == 3:
                    pred = (left + up) // 2
                else:
                    p = left + up - ul
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
                    pred = left if pa <= pb and pa <= pc else up if pb <= pc else ul
                cur[x] = (line[x] + pred) & 0xFF
        img[y] = cur
        prev = cur
    return img.reshape(height, width, channels)[:, :, :3]


def test_rows_and_chips_match_the_matrix(run_dir: tuple[Path, dict[str, Any]]) -> None:
    out, matrix = run_dir
    dom = _Dom()
    dom.feed((out / REPORT_HTML).read_text())
    assert dom.rows == [(r["route"], r["model"], r["lane"]) for r in matrix["rows"]]
    assert {m for _, m, _ in dom.rows} == set(MODELS)
    assert dom.chips == _chips(matrix)
    classes = {c for *_, c in dom.chips}
    assert {"o-consumed", "o-zero", "o-rejected"} <= classes, classes


def test_templates_section_and_metadata(run_dir: tuple[Path, dict[str, Any]]) -> None:
    out, matrix = run_dir
    page = (out / REPORT_HTML).read_text()
    assert '<section id="templates">' in page and "Qwen-Qwen3-0.6B" in page
    assert f"<dd>{matrix['run']['canary']}</dd>" in page
    assert f"<dd>{matrix['run']['seed']}</dd>" in page
    assert f"delta &gt;= {matrix['thresholds']['consume_ratio']} x T" in page
    assert "unsigned thinking cannot be sent" in page  # the Anthropic note
    # self-contained: no script, no linked stylesheet, no fetched image or font
    assert "<script" not in page and "<link" not in page and " src=" not in page
    assert "url(" not in page.split("</style>")[0]


def test_provider_text_is_escaped_and_redacted(run_dir: tuple[Path, dict[str, Any]]) -> None:
    _, matrix = run_dir
    hostile = copy.deepcopy(matrix)
    row = next(r for r in hostile["rows"] if r["errors"])
    row["model"] = '<img src=x onerror="alert(1)">'
    key = "sk-" + "A1b2C3d4E5f6G7h8J9k0L1m2N3p4Q5r6"
    row["errors"][0]["error"] = f'bad "key" {key} </td><script>alert(2)</script>'
    entry = next(iter(row["text"].values()))
    entry["in_loop"]["error"] = "<b>boom</b>"
    page = render_html(hostile)
    assert "<img" not in page and "<script>" not in page and "<b>boom" not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page
    assert key not in page
    assert "[redacted]" in page


def test_report_reads_records_of_a_torn_run(run_dir: tuple[Path, dict[str, Any]],
                                            tmp_path: Path) -> None:  # fmt: skip
    src, matrix = run_dir
    for name in ("calls.jsonl", "runs.jsonl"):
        shutil.copy(src / name, tmp_path / name)
    with (tmp_path / "calls.jsonl").open("a") as fh:
        fh.write('{"type":"call","route":"sim","model":"torn')  # a writer killed mid-line
    torn = build_matrix(tmp_path)
    assert torn["calls"] == matrix["calls"]
    assert [r["text"] for r in torn["rows"]] == [r["text"] for r in matrix["rows"]]


def test_chromium_renders_the_table(run_dir: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip(f"chromium not installed (CI: `{CHROMIUM_APT}`)")
    out, matrix = run_dir
    url = (out / REPORT_HTML).resolve().as_uri()
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}"]  # fmt: skip
    shot = tmp_path / "report.png"
    subprocess.run(
        [*flags, f"--screenshot={shot}", "--window-size=1400,1000", url],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    dom_run = subprocess.run(
        [*flags, "--dump-dom", url], check=True, capture_output=True, timeout=120, text=True
    )
    dom = _Dom()
    dom.feed(dom_run.stdout)
    assert dom.rows == [(r["route"], r["model"], r["lane"]) for r in matrix["rows"]]
    assert dom.chips == _chips(matrix)
    assert any("delta" in t and "threshold" in t for t in dom.titles)
    pixels = _png_pixels(shot)
    assert pixels.shape[:2] == (1000, 1400)
    seen = {cls for *_, cls in dom.chips}
    for cls, rgb in BACKGROUND.items():
        n = int(np.all(pixels == np.array(rgb), axis=-1).sum())
        assert n > 50, (cls, n)  # the legend shows every colour; the table adds its own
    assert {"o-consumed", "o-rejected"} <= seen


def test_two_process_report_equals_the_single_process_one(
    run_dir: tuple[Path, dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Large record sets are scanned by two processes (keys sharded) and the HTML written by
    a forked child; forced on for this small run, every output file is the same."""
    import reasonwire.eval._report_html as html_mod
    import reasonwire.eval.matrix as matrix_mod

    src, _ = run_dir
    single, forked = tmp_path / "single", tmp_path / "forked"
    for d in (single, forked):
        shutil.copytree(src, d)
    monkeypatch.setattr(matrix_mod, "_SHARD_MIN_BYTES", 1 << 62)
    monkeypatch.setattr(html_mod, "_FORK_ROWS", 1 << 62)
    stamps = [html_mod.write_all(single)["generated_at"]]
    monkeypatch.setattr(matrix_mod, "_SHARD_MIN_BYTES", 0)
    monkeypatch.setattr(html_mod, "_FORK_ROWS", 0)
    assert matrix_mod._shards(forked / "calls.jsonl") == min(2, os.cpu_count() or 1)
    stamps.append(html_mod.write_all(forked)["generated_at"])

    def text(d: Path, name: str, stamp: str) -> str:
        raw = (d / name).read_text(encoding="utf-8")
        return raw.replace(stamp, "<generated_at>").replace(str(d), "<out>")

    for name in ("matrix.md", REPORT_HTML, "matrix.json"):
        assert text(single, name, stamps[0]) == text(forked, name, stamps[1]), name


# A page of this many bytes opens in Chromium in about a second; the uncapped page of a
# million-record run was 202 MB (issue 28).
HTML_BOUND = 6_000_000
COPIES = 400


def _replicate(src: Path, dst: Path, copies: int) -> None:
    """``copies`` renamed copies of a run's call records (``<model>~<n>``), as the report bench
    makes its million records, with the matching targets in ``runs.jsonl``."""
    import json

    dst.mkdir()
    lines = (src / "calls.jsonl").read_text().splitlines()
    calls = [json.loads(x) for x in lines if x.strip()]
    calls = [r for r in calls if r.get("type") == "call"]
    with (dst / "calls.jsonl").open("w") as fh:
        for i in range(copies):
            for rec in calls:
                r = dict(rec, model=f"{rec['model']}~{i:04d}", key=f"{i:08x}{rec['key'][8:]}")
                fh.write(json.dumps(r) + "\n")
    with (dst / "runs.jsonl").open("w") as fh:
        for line in (src / "runs.jsonl").read_text().splitlines():
            rec = json.loads(line)
            if rec.get("type") == "run_start":
                rec["targets"] = [
                    {**t, "model": f"{t['model']}~{i:04d}"}
                    for i in range(copies)
                    for t in rec["targets"]
                ]
            elif "model" in rec:
                continue
            fh.write(json.dumps(rec) + "\n")


def test_report_of_a_large_record_set_has_a_bounded_size(
    run_dir: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """Many times the rows the page details: the page stays under a fixed size, shows a capped
    table per dialect (its first rows, in matrix order) with a link to the full matrix files,
    and its summary counts every row."""
    import re

    import reasonwire.eval._report_html as html_mod

    src, small = run_dir
    big = tmp_path / "big"
    _replicate(src, big, COPIES)
    matrix = html_mod.write_all(big)
    assert len(matrix["rows"]) == COPIES * len(small["rows"]) > 2 * 1000
    page = (big / REPORT_HTML).read_text()
    assert len(page.encode()) < HTML_BOUND, len(page.encode())
    dom = _Dom()
    dom.feed(page)
    assert len(dom.rows) <= 1000
    by_dialect: dict[str, list[tuple[str, str, str]]] = {}
    for r in matrix["rows"]:
        by_dialect.setdefault(r["dialect"], []).append((r["route"], r["model"], r["lane"]))
    shown = [rid for rows in by_dialect.values() for rid in rows[: 1000 // len(by_dialect)]]
    assert dom.rows == shown
    assert page.count('<a href="matrix.md">matrix.md</a>') == len(by_dialect)
    for dialect, rows in by_dialect.items():
        m = re.search(rf'<tr data-dialect="{dialect}"><td><a [^>]*>[^<]*</a></td><td>(\d+)<', page)
        assert m and int(m.group(1)) == len(rows), dialect


_LAYOUT_JS = """<script>
const out = [];
for (const t of document.querySelectorAll("table.matrix")) {
  for (const th of t.tHead.rows[0].cells)
    out.push(["th", th.textContent, th.getBoundingClientRect().width]);
  for (const tr of t.tBodies[0].rows) {
    if (!tr.dataset.model) continue;
    for (const td of tr.cells)
      out.push(["td", td.textContent.slice(0, 40), td.getBoundingClientRect().height]);
  }
}
const pre = document.createElement("pre");
pre.id = "layout";
pre.textContent = JSON.stringify({width: document.documentElement.clientWidth, cells: out});
document.body.appendChild(pre);
</script>"""
MIN_COLUMN_PX = 48  # "verdict" / a chip pair fit in it; a squeezed column is ~20-30 px
MAX_CELL_PX = 80  # four lines of 13px/1.4 text: a badge and its chips, a wrapped carrier list


def test_no_matrix_column_collapses_at_1280_px(
    run_dir: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """At 1280 px, measured in headless Chromium (JS in a copy of the page): no column of a
    matrix table is narrower than MIN_COLUMN_PX and no cell of a row is taller than
    MAX_CELL_PX, with a long note and a long error on a row (text of that length in a column
    wraps a few characters per line: the cell grows to hundreds of pixels)."""
    import json

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip(f"chromium not installed (CI: `{CHROMIUM_APT}`)")
    _, matrix = run_dir
    m = copy.deepcopy(matrix)
    row = next(r for r in m["rows"] if r["errors"])
    row["notes"] = [*row.get("notes", []), "a note of many words " * 12]
    row["errors"][0]["error"] = "an error body of many words " * 10
    page = tmp_path / "page.html"
    page.write_text(render_html(m).replace("</body>", _LAYOUT_JS + "</body>"))
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}"]  # fmt: skip
    run = subprocess.run(
        [*flags, "--window-size=1280,1000", "--dump-dom", page.resolve().as_uri()],
        check=True, capture_output=True, timeout=120, text=True,
    )  # fmt: skip
    raw = run.stdout.split('<pre id="layout">', 1)[1].split("</pre>", 1)[0]
    from html import unescape

    layout = json.loads(unescape(raw))
    assert 1200 <= layout["width"] <= 1280, layout["width"]
    heads = [(text, w) for kind, text, w in layout["cells"] if kind == "th"]
    cells = [(text, h) for kind, text, h in layout["cells"] if kind == "td"]
    assert heads and cells
    narrow = [(t, w) for t, w in heads if w < MIN_COLUMN_PX]
    assert not narrow, narrow
    tall = [(t, h) for t, h in cells if h > MAX_CELL_PX]
    assert not tall, tall
