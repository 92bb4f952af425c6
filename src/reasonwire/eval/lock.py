"""One run per ``--out`` at a time: ``run.lock``, held with ``flock`` for the whole run.

Two runs sharing ``--out`` would each send every call the other has not recorded yet: the
provider bills both. The lock makes the second run stop before it sends anything, saying
who holds the directory (pid, host, start time, written into the lock file by the holder),
or, with ``wait``, block until the holder is done and then resume from its records. ``flock``
is released by the kernel when its holder dies (``kill -9`` included), so a lock is never
stale: the text left in the file by a dead holder is only read when a live one holds it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path

from reasonwire.errors import ConfigError

LOCK = "run.lock"


class RunLock:
    """``with RunLock(out, wait):`` the run's exclusive hold on ``out`` (see module doc).
    ``on_wait`` is told the holder's description before a ``wait`` blocks."""

    def __init__(
        self, out: Path, wait: bool = False, on_wait: Callable[[str], None] = lambda s: None
    ) -> None:
        self.path = Path(out) / LOCK
        self.wait = wait
        self.on_wait = on_wait
        self._fd: int | None = None

    def holder(self) -> str:
        """Who holds the lock, from what the holder wrote (best effort)."""
        try:
            info = json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError):
            info = {}
        if not isinstance(info, dict) or "pid" not in info:
            return "another run (pid unknown)"
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(info.get("t", 0))))
        return f"pid {info['pid']} on {info.get('host', '?')}, started {started}"

    def __enter__(self) -> RunLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                who = self.holder()
                if not self.wait:
                    raise ConfigError(
                        f"--out {self.path.parent} is in use by another run ({who}); "
                        "wait for it to end, or pass --wait"
                    ) from None
                self.on_wait(who)
                fcntl.flock(fd, fcntl.LOCK_EX)
            info = {"pid": os.getpid(), "host": socket.gethostname(), "t": time.time()}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
