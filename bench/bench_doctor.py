"""The doctor over 100 MB of saved sessions: ``reasonwire.doctor.check_bytes`` against a bare
``json.loads`` of every line of the same bytes (the floor any JSON-lines reader pays).

The input is a real saved session (``../shared/sessions/pi-coding-agent__large-session.jsonl``,
pi's JSON lines with signed Claude thinking blocks), repeated into files of about 10 MB each
until ``--mb`` is reached (the bench needs the shared folder). The bar (issue 27): 100 MB
checked in under 10 s.

    .venv/bin/python bench/bench_doctor.py [--mb 100]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from reasonwire.doctor import check_bytes

SESSION = (
    Path(__file__).resolve().parents[2]
    / "shared"
    / "sessions"
    / ("pi-coding-agent__large-session.jsonl")
)
BAR_S = 10.0


def _unit() -> bytes:
    if SESSION.is_file():
        return SESSION.read_bytes()
    raise SystemExit(f"bench_doctor: {SESSION} not found (the shared sessions folder)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=100.0)
    args = ap.parse_args()
    unit = _unit()
    per_file = max(1, int(10_000_000 // len(unit)))
    blob = unit * per_file
    files = max(1, round(args.mb * 1_000_000 / len(blob)))
    total = files * len(blob)
    t0 = time.perf_counter()
    found = 0
    for i in range(files):
        found += len(check_bytes(blob, f"session-{i}.jsonl"))
    doctor_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(files):
        for line in blob.splitlines():
            if line.strip():
                json.loads(line)
    floor_s = time.perf_counter() - t0
    mb = total / 1e6
    print(f"{files} files, {mb:.0f} MB ({len(unit) / 1e6:.2f} MB session x {per_file} per file)")
    print(f"doctor      {doctor_s:7.2f} s  {mb / doctor_s:7.1f} MB/s  findings {found}")
    print(f"json.loads  {floor_s:7.2f} s  {mb / floor_s:7.1f} MB/s  (the floor)")
    verdict = "PASS" if doctor_s < BAR_S else "MISS"
    print(f"ratio doctor/floor = {doctor_s / floor_s:.2f}; bar < {BAR_S:.0f} s: {verdict}")


if __name__ == "__main__":
    main()
