"""Probe settings: environment first, then a TOML file, then defaults.

Read at the start of every call (the flag is read once per call, never mid-call), so a user
can switch the probe off for new calls without restarting the application. The TOML file is
cached by its modification time: reading it is not on the per-byte path, but it should not
cost a file read per call either.

Environment: ``REASONWIRE_PROBE`` (``0``/``false``/``off`` disables), ``REASONWIRE_PROBE_PROVIDERS``
(comma-separated provider names or hosts; empty = all), ``REASONWIRE_PROBE_CAP_MB``,
``REASONWIRE_PROBE_CONFIG`` (path of the TOML file, default ``<home>/probe.toml``).
TOML keys: ``probe = true``, ``providers = ["openai", "api.example.com"]``, ``cap_mb = 10``.

``<home>`` is ``$REASONWIRE_HOME``, else the per-user data directory (:func:`user_data_dir`,
our own few lines so that the probe runs on the lean core, without platformdirs).
"""

from __future__ import annotations

import os
import sys
import threading
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_CAP_BYTES = 10 * 1024 * 1024
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True, slots=True)
class ProbeSettings:
    enabled: bool = True
    providers: frozenset[str] = frozenset()
    cap_bytes: int = DEFAULT_CAP_BYTES

    def observes(self, provider: str, host: str) -> bool:
        """Whether a call to ``provider`` (route name) at ``host`` is recorded."""
        if not self.enabled:
            return False
        return not self.providers or provider in self.providers or host in self.providers


def user_data_dir(app: str = "reasonwire") -> Path:
    """The per-user data directory for ``app``, where platformdirs' ``user_data_dir(app,
    appauthor=False)`` puts it:

    - Windows: ``%LOCALAPPDATA%\\<app>`` (else ``~\\AppData\\Local\\<app>``);
    - macOS: ``~/Library/Application Support/<app>``;
    - elsewhere (Linux, the BSDs): ``$XDG_DATA_HOME/<app>``, else ``~/.local/share/<app>``.
      A relative ``$XDG_DATA_HOME`` is ignored, as the XDG Base Directory spec says.
    """
    env = os.environ
    if sys.platform == "win32":
        local = env.get("LOCALAPPDATA", "").strip()
        base = Path(local) if local else Path.home() / "AppData" / "Local"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        xdg = env.get("XDG_DATA_HOME", "").strip()
        base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / app


def home_dir() -> Path:
    """``$REASONWIRE_HOME``, else the user data directory for reasonwire."""
    env = os.environ.get("REASONWIRE_HOME")
    if env:
        return Path(env).expanduser()
    return user_data_dir("reasonwire")


def ledger_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Where ledger files go: ``explicit``, else ``<home>/probe``."""
    if explicit is not None:
        return Path(explicit).expanduser()
    return home_dir() / "probe"


_cache_lock = threading.Lock()
_cache: dict[str, tuple[float, dict[str, Any]]] = {}


def _toml(path: Path) -> dict[str, Any]:
    """The TOML table at ``path`` (empty if absent or unreadable: settings never fail a call)."""
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return {}
    key = str(path)
    with _cache_lock:
        hit = _cache.get(key)
        if hit and hit[0] == mtime:
            return hit[1]
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        data = {}
    sub = data.get("probe")
    table: dict[str, Any] = sub if isinstance(sub, dict) else data
    with _cache_lock:
        _cache[key] = (mtime, table)
    return table


def _names(value: Any) -> frozenset[str]:
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list | tuple):
        return frozenset()
    return frozenset(str(v).strip() for v in value if str(v).strip())


def load_settings() -> ProbeSettings:
    """Current settings (environment overrides the TOML file)."""
    env = os.environ
    cfg_path = env.get("REASONWIRE_PROBE_CONFIG")
    table = _toml(Path(cfg_path).expanduser() if cfg_path else home_dir() / "probe.toml")
    enabled: Any = table.get("probe", table.get("enabled", True))
    if "REASONWIRE_PROBE" in env:
        enabled = env["REASONWIRE_PROBE"].strip().lower() not in _FALSE
    elif isinstance(enabled, str):
        enabled = enabled.strip().lower() not in _FALSE
    providers = _names(env.get("REASONWIRE_PROBE_PROVIDERS", table.get("providers", ())))
    cap: Any = env.get("REASONWIRE_PROBE_CAP_MB", table.get("cap_mb"))
    try:
        cap_bytes = int(float(cap) * 1024 * 1024) if cap is not None else DEFAULT_CAP_BYTES
    except (TypeError, ValueError):
        cap_bytes = DEFAULT_CAP_BYTES
    return ProbeSettings(enabled=bool(enabled), providers=providers, cap_bytes=cap_bytes)
