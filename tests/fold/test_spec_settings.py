"""The fold against its spec (issue 26): ``floor-chars`` is "the minimum reasoning block length
for the fold to apply", so a block of exactly ``floor-chars`` folds; the spec's key names
(``head-chars``, ``tail-chars``, ``floor-chars``) are read from the TOML settings, today's
(``head_chars``, ...) stay accepted as aliases, and ``fold plan`` writes the spec's names."""

from __future__ import annotations

from pathlib import Path

import pytest

from reasonwire.errors import ConfigError
from reasonwire.fold import FoldSettings, fold_text, load_fold_settings, settings_toml

FLOOR, HEAD, TAIL = 30, 10, 5
SPEC = f"[fold]\nenabled = true\nfloor-chars = {FLOOR}\nhead-chars = {HEAD}\ntail-chars = {TAIL}\n"
MARK = "\n\n[... {} characters folded ...]\n\n"  # the marker as documented (wire/fold.py)


def _load(tmp_path: Path, text: str) -> FoldSettings:
    p = tmp_path / "fold.toml"
    p.write_text(text)
    return load_fold_settings(p)


def test_the_spec_key_names_are_read(tmp_path: Path) -> None:
    s = _load(tmp_path, SPEC)
    assert (s.enabled, s.floor_chars, s.head_chars, s.tail_chars) == (True, FLOOR, HEAD, TAIL)


def test_todays_names_are_aliases(tmp_path: Path) -> None:
    s = _load(tmp_path, SPEC.replace("-chars", "_chars"))
    assert (s.floor_chars, s.head_chars, s.tail_chars) == (FLOOR, HEAD, TAIL)
    mixed = _load(tmp_path, "[fold]\nfloor-chars = 40\nhead_chars = 12\ntail-chars = 6\n")
    assert (mixed.floor_chars, mixed.head_chars, mixed.tail_chars) == (40, 12, 6)


def test_one_setting_under_both_names_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="floor-chars and floor_chars"):
        _load(tmp_path, SPEC + "floor_chars = 31\n")


def test_the_spec_names_keep_the_settings_checks(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="greater than"):
        _load(tmp_path, "[fold]\nfloor-chars = 15\nhead-chars = 10\ntail-chars = 5\n")
    with pytest.raises(ConfigError, match="unknown key"):
        _load(tmp_path, "[fold]\nfloor-char = 15\n")


def test_plan_writes_the_spec_names_and_reads_them_back(tmp_path: Path) -> None:
    written = settings_toml(FoldSettings(enabled=True, floor_chars=FLOOR, head_chars=HEAD,
                                         tail_chars=TAIL))  # fmt: skip
    assert f"floor-chars = {FLOOR}\n" in written and f"head-chars = {HEAD}\n" in written
    assert f"tail-chars = {TAIL}\n" in written and "_chars" not in written
    s = _load(tmp_path, written)
    assert (s.floor_chars, s.head_chars, s.tail_chars) == (FLOOR, HEAD, TAIL)


def _folded(n: int) -> str:
    """What the spec's fold makes of ``n`` ASCII characters: head, marker, tail."""
    return "a" * HEAD + MARK.format(n - HEAD - TAIL) + "c" * TAIL


def _block(n: int) -> str:
    return "a" * HEAD + "b" * (n - HEAD - TAIL) + "c" * TAIL


def test_a_block_one_below_the_floor_is_kept(tmp_path: Path) -> None:
    s = _load(tmp_path, SPEC)
    assert fold_text(_block(FLOOR - 1), s) == _block(FLOOR - 1)


def test_a_block_of_exactly_the_floor_folds(tmp_path: Path) -> None:
    s = _load(tmp_path, SPEC)
    assert fold_text(_block(FLOOR), s) == _folded(FLOOR)


def test_a_block_one_above_the_floor_folds(tmp_path: Path) -> None:
    s = _load(tmp_path, SPEC)
    assert fold_text(_block(FLOOR + 1), s) == _folded(FLOOR + 1)
