"""The Gemini Interactions dialect (``POST {base}/interactions``, ``/v1beta`` on Google)."""

from reasonwire.wire.interactions._dialect import DIALECT, InteractionsDialect
from reasonwire.wire.interactions._stream import InteractionsStreamDecoder

__all__ = ["DIALECT", "InteractionsDialect", "InteractionsStreamDecoder"]
