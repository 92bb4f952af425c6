"""Benchmark: ``reasonwire eval report`` over 1,000,000 call records.

Bar (issue 28; issue 5 had 20 s): the report (``matrix.md``, ``matrix.json``, ``report.html``)
over 1,000,000 call records in under 10 s on this machine, with a ``report.html`` a browser
opens (bounded: a few MB, see ``HTML_ROW_CAP``; the uncapped page was 202 MB).

The records are real in shape: a harness run against the simulator (every behaviour) writes a
seed ``calls.jsonl`` in a temp dir; the bench replicates its call records under renamed models
(``<model>~<n>``, new keys) until there are ``--records`` of them, in the same JSON layout the
record writer produces, adds the matching ``run_start`` targets, and ends the file with a torn
line (a killed writer), which the reader must skip.

Timed: the ``reasonwire eval report --out DIR`` command in a fresh process (imports included,
stdout to /dev/null). Peer in the same run: a plain pass over the same ``calls.jsonl`` that
only counts the lines ``json.loads`` parses (stdlib), i.e. the cost of reading the records
once with nothing built. Printed: both times and their ratio, wall and CPU (user + sys; the
report's CPU is both of its processes'). Then the page a user opens: headless Chromium
loading ``report.html`` against loading an empty page, alternating, the median of each (the
issue's bar: the page opens in under 2 s); skipped without Chromium. On a loaded machine
the wall ratio swings with the load (a forked child shares its parent's scheduling group),
the CPU ratio much less.

Run: .venv/bin/python bench/bench_report.py [--records 1000000] [--keep DIR | --reuse DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BAR_SECONDS = 10.0
BAR_HTML_MB = 6.0
BAR_OPEN_SECONDS = 2.0
OPEN_ROUNDS = 3


def seed_run(out: Path) -> None:
    """A real harness run against the simulator: the template of every record."""
    from reasonwire.eval import EvalConfig, run_eval
    from reasonwire.eval._embedded import sim_targets
    from reasonwire.sim import SimServer

    with SimServer(seed=0) as sim:
        cfg = EvalConfig(
            targets=sim_targets(sim.base_url, sim.root_url), out=out, workers=8, lane_attempts=12
        )
        run_eval(cfg)


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def replicate(seed: Path, out: Path, n_records: int) -> tuple[int, int]:
    """Write ``n_records`` call records under ``out``; returns (records, bytes of calls.jsonl)."""
    calls = [r for r in _read(seed / "calls.jsonl") if r.get("type") == "call"]
    runs = _read(seed / "runs.jsonl")
    out.mkdir(parents=True, exist_ok=True)
    copies = -(-n_records // len(calls))
    written = 0
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    with (out / "calls.jsonl").open("w", encoding="utf-8") as fh:
        for i in range(copies):
            chunk = []
            for rec in calls:
                if written == n_records:
                    break
                r = dict(rec)
                r["model"] = f"{rec['model']}~{i:06d}"
                r["key"] = f"{i:08x}{str(rec['key'])[8:]}"
                chunk.append(dumps(r))
                written += 1
            fh.write("\n".join(chunk) + "\n")
        fh.write('{"type":"call","key":"torn","route":"sim","mod')  # a killed writer
    with (out / "runs.jsonl").open("w", encoding="utf-8") as fh:
        for rec in runs:
            if rec.get("type") == "run_start":
                rec = dict(rec)
                rec["targets"] = [
                    {**t, "model": f"{t['model']}~{i:06d}"}
                    for i in range(copies)
                    for t in rec["targets"]
                ]
            elif "model" in rec:
                continue  # notes of the seed models would name no replicated model
            fh.write(dumps(rec) + "\n")
    return written, (out / "calls.jsonl").stat().st_size


def _count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for raw in fh if raw.endswith(b"\n"))


def peer_json_pass(path: Path) -> tuple[float, float, int]:
    """Wall and CPU seconds for stdlib ``json.loads`` over every line, counting the records."""
    t0, c0 = time.perf_counter(), time.process_time()
    n = 0
    with path.open("rb") as fh:
        for raw in fh:
            try:
                json.loads(raw)
            except ValueError:
                continue
            n += 1
    return time.perf_counter() - t0, time.process_time() - c0, n


def time_report(out: Path) -> tuple[float, float, float, int]:
    """Wall, CPU (user + sys) and system seconds of the report command in a fresh process,
    and its minor page faults (on this VM a fresh page can cost 20-46 us: see the README)."""
    cmd = [str(Path(sys.executable).with_name("reasonwire")), "eval", "report", "--out", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as null:
        subprocess.run(cmd, check=True, stdout=null)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    sys_s = after.ru_stime - before.ru_stime
    cpu = (after.ru_utime - before.ru_utime) + sys_s
    return wall, cpu, sys_s, after.ru_minflt - before.ru_minflt


def chromium_open(page: Path, tmp: Path) -> tuple[float, float] | None:
    """Median wall seconds of headless Chromium loading ``page`` and printing its DOM (the
    page parsed, laid out and its scripts run), and of the same for an empty page (the
    browser's own start and exit, in the same run): their difference is what a user waits
    for the page. None without Chromium."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return None
    empty = tmp / "empty.html"
    empty.write_text("<!doctype html><title>empty</title>", encoding="utf-8")
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp / 'chromium-profile'}", "--window-size=1280,1000"]  # fmt: skip
    times: dict[Path, list[float]] = {page: [], empty: []}
    for _ in range(OPEN_ROUNDS):
        for target in times:  # alternating: both see the same machine
            t0 = time.perf_counter()
            subprocess.run([*flags, "--dump-dom", target.resolve().as_uri()], check=True,
                           capture_output=True, timeout=120)  # fmt: skip
            times[target].append(time.perf_counter() - t0)
    return statistics.median(times[page]), statistics.median(times[empty])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--keep", type=Path, default=None, help="Write the records here, keep them.")
    ap.add_argument(
        "--reuse", type=Path, default=None, help="Time the records a --keep run left in DIR."
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        seed = Path(tmp) / "seed"
        out = args.reuse or args.keep or Path(tmp) / "out"
        t0 = time.perf_counter()
        if args.reuse is None:
            seed_run(seed)
            n, size = replicate(seed, out, args.records)
        else:  # every complete line of a --keep run's calls.jsonl is a call record
            n, size = _count_lines(out / "calls.jsonl"), (out / "calls.jsonl").stat().st_size
        print(f"records: {n} call records, {size / 1e6:.0f} MB calls.jsonl "
              f"(ready in {time.perf_counter() - t0:.1f} s)")  # fmt: skip
        peer_s, peer_cpu, parsed = peer_json_pass(out / "calls.jsonl")
        assert parsed == n, (parsed, n)
        report_s, report_cpu, report_sys, faults = time_report(out)
        matrix = json.loads((out / "matrix.json").read_text())
        html_mb = (out / "report.html").stat().st_size / 1e6
        assert matrix["calls"] == n, (matrix["calls"], n)
        print(f"report:  {report_s:.2f} s  ({len(matrix['rows'])} rows, report.html "
              f"{html_mb:.1f} MB)  bar < {BAR_SECONDS:.0f} s: "
              f"{'PASS' if report_s < BAR_SECONDS else 'FAIL'}, report.html < "
              f"{BAR_HTML_MB:.0f} MB: {'PASS' if html_mb < BAR_HTML_MB else 'FAIL'}")  # fmt: skip
        print(f"         {report_cpu:.2f} s CPU (user+sys), of it {report_sys:.2f} s system; "
              f"{faults:,} minor page faults; load average {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} CPUs")  # fmt: skip
        opened = chromium_open(out / "report.html", Path(tmp))
        if opened is None:
            print("open:    skipped (no chromium: apt-get install -y chromium)")
        else:
            page_s, empty_s = opened
            print(f"open:    report.html in headless Chromium {page_s:.2f} s, an empty page "
                  f"{empty_s:.2f} s (median of {OPEN_ROUNDS}): the page's own "
                  f"{page_s - empty_s:.2f} s, bar < {BAR_OPEN_SECONDS:.0f} s: "
                  f"{'PASS' if page_s - empty_s < BAR_OPEN_SECONDS else 'FAIL'}")  # fmt: skip
        print(f"peer:    {peer_s:.2f} s, {peer_cpu:.2f} s CPU  (stdlib json.loads line pass, "
              "nothing built)")  # fmt: skip
        print(f"ratio:   report / peer = {report_s / peer_s:.2f} (wall), "
              f"{report_cpu / peer_cpu:.2f} (CPU: steadier on a loaded machine, where the "
              "report's two processes share one scheduling group's time)")  # fmt: skip


if __name__ == "__main__":
    main()
