"""Read-only stream probe: counts reasoning vs text on the wire and writes a ledger.

Public API (pinned by tests/probe/test_api.py):

- :class:`ProbeTransport` / :class:`AsyncProbeTransport`: httpx transports for any httpx-based
  client (``openai``, ``anthropic``, ``google-genai`` via ``http_client``).
- :func:`observe_bytes`: the same observation for an iterable / async iterable of bytes.
- :class:`Tokenizer`: a route's own token counter, given to either to count re-sent
  reasoning text in tokens; :class:`PromptCounter`: a server's count of a whole request's
  prompt, given instead to count each re-sent text carrier as the server bills it.
- :func:`read_rows`, :func:`load_settings`, :class:`ProbeSettings`, :func:`ledger_dir`.
- :func:`flush`: a call's row is on disk by the time its response is closed (counted as the
  chunks pass, written in a ``finally``); ``flush(timeout=None) -> bool`` waits for the
  background housekeeping (archive rotation) submitted so far.
"""

from reasonwire.probe.byte_stream import observe_bytes
from reasonwire.probe.carriers import PromptCounter, Tokenizer
from reasonwire.probe.ledger import read_rows
from reasonwire.probe.settings import ProbeSettings, ledger_dir, load_settings
from reasonwire.probe.transport import AsyncProbeTransport, ProbeTransport
from reasonwire.probe.worker import flush

__all__ = [
    "AsyncProbeTransport",
    "ProbeSettings",
    "ProbeTransport",
    "PromptCounter",
    "Tokenizer",
    "flush",
    "ledger_dir",
    "load_settings",
    "observe_bytes",
    "read_rows",
]
