"""Fold settings from a TOML file: a ``[fold]`` table (or the top level) with the keys of
:class:`reasonwire.wire.fold.FoldSettings` (``enabled``, ``floor_chars``, ``head_chars``,
``tail_chars``, ``providers``, ``drop``). ``reasonwire fold plan`` writes such a file."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from reasonwire.errors import ConfigError
from reasonwire.wire.fold import FoldSettings


def load_fold_settings(path: str | os.PathLike[str]) -> FoldSettings:
    """The settings in ``path``; ConfigError (one line, naming the file) when it is missing,
    not TOML, or holds a bad value."""
    p = Path(path).expanduser()
    try:
        data: dict[str, Any] = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read fold settings {p}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"fold settings {p} is not valid TOML: {exc}") from None
    table = data.get("fold", data)
    if not isinstance(table, dict):
        raise ConfigError(f"fold settings {p}: [fold] is not a table")
    return FoldSettings.from_mapping(table, where=f"fold settings {p}")


__all__ = ["load_fold_settings"]
