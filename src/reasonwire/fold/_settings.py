"""Fold settings from a TOML file: a ``[fold]`` table (or the top level) with the spec's keys
``enabled``, ``floor-chars`` (the minimum reasoning block length for the fold to apply),
``head-chars``, ``tail-chars``, ``providers`` and ``drop``; the older ``floor_chars``,
``head_chars``, ``tail_chars`` (the fields of :class:`reasonwire.wire.fold.FoldSettings`) are
aliases. ``reasonwire fold plan`` writes such a file (with the spec's names)."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

from reasonwire.errors import ConfigError
from reasonwire.wire.fold import FoldSettings

SPEC_KEYS: Mapping[str, str] = {
    "floor-chars": "floor_chars",
    "head-chars": "head_chars",
    "tail-chars": "tail_chars",
}
"""The spec's key name -> the settings field (whose own name stays accepted as an alias)."""


def load_fold_settings(path: str | os.PathLike[str]) -> FoldSettings:
    """The settings in ``path``; ConfigError (one line, naming the file) when it is missing,
    not TOML, or holds a bad value."""
    p = Path(path).expanduser()
    try:
        data: dict[str, object] = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read fold settings {p}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"fold settings {p} is not valid TOML: {exc}") from None
    table = data.get("fold", data)
    if not isinstance(table, dict):
        raise ConfigError(f"fold settings {p}: [fold] is not a table")
    where = f"fold settings {p}"
    return FoldSettings.from_mapping(spec_names(table, where), where=where)


def spec_names(table: Mapping[str, object], where: str) -> dict[str, object]:
    """``table`` with the spec's key names put as the settings' field names; a key given
    under both names is a ConfigError (which one would win is not for us to guess)."""
    out = dict(table)
    for spec, field in SPEC_KEYS.items():
        if spec in out:
            if field in out:
                raise ConfigError(f"{where}: {spec} and {field} are the same setting: give one")
            out[field] = out.pop(spec)
    return out


__all__ = ["SPEC_KEYS", "load_fold_settings"]
