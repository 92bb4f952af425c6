"""Without the recorded corpus, every conformance test skips with one clear reason.

The tests read ``../shared/conformance`` (or ``$REASONWIRE_CORPUS``). A fresh clone has no
``../shared`` beside it; then a test that reads recordings must skip, never fail and never
pass on an empty list (a parametrize over no recordings, a loop over none). Rather than trust
every test to call :func:`corpus.corpus_dir` first, the whole directory skips with
:data:`corpus.ABSENT`, except tests marked ``no_corpus`` (synthetic data only).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance import corpus

HERE = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "no_corpus: a conformance test on synthetic data only (runs without corpus)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if corpus.PRESENT:
        return
    skip = pytest.mark.skip(reason=corpus.ABSENT)
    for item in items:
        if HERE in item.path.resolve().parents and item.get_closest_marker("no_corpus") is None:
            item.add_marker(skip, append=False)
