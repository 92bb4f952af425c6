"""Which path a batch-taking stream decoder (``wire/runs.py``) took for each batch it was
fed: a check that the fast path is taken, never how fast it is."""

from __future__ import annotations

from typing import Any


def batches_taken(dec: Any, data: bytes, chunk: int = 65536) -> list[bool]:
    """Feed ``data`` to ``dec`` in ``chunk``-byte pieces and close it; one entry per batch
    its ``_run`` saw, True where the batch path took the batch whole."""
    taken: list[bool] = []
    real = dec._run

    def spy(events: Any, out: Any) -> bool:
        ok = bool(real(events, out))
        taken.append(ok)
        return ok

    dec._run = spy
    for i in range(0, len(data), chunk):
        dec.feed(data[i : i + chunk])
    dec.close()
    return taken
