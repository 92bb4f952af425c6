"""Read-only stream probe: counts reasoning vs text on the wire and writes a ledger.

Public API (pinned by tests/probe/test_api.py):

- :class:`ProbeTransport` / :class:`AsyncProbeTransport`: httpx transports for any httpx-based
  client (``openai``, ``anthropic``, ``google-genai`` via ``http_client``).
- :func:`observe_bytes`: the same observation for an iterable / async iterable of bytes.
- :func:`read_rows`, :func:`load_settings`, :class:`ProbeSettings`, :func:`ledger_dir`.
- :func:`flush`: rows are counted and written by a background worker after each call ends
  (off the caller's path); ``flush(timeout=None) -> bool`` waits until every call that has
  ended so far has its row. The interpreter flushes at exit too.
"""

from reasonwire.probe.ledger import read_rows
from reasonwire.probe.observe import observe_bytes
from reasonwire.probe.settings import ProbeSettings, ledger_dir, load_settings
from reasonwire.probe.transport import AsyncProbeTransport, ProbeTransport
from reasonwire.probe.worker import flush

__all__ = [
    "AsyncProbeTransport",
    "ProbeSettings",
    "ProbeTransport",
    "flush",
    "ledger_dir",
    "load_settings",
    "observe_bytes",
    "read_rows",
]
