"""httpx and its ``httpx2`` fork, one set of base classes.

Some SDK releases (the anthropic SDK today) ship their own fork of httpx with the same API and
refuse ``httpx`` objects. A transport or stream that subclasses both packages' base classes
(when the fork is installed) serves either kind of client; the inner transport it wraps is
created from the package of the first request it sees.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import httpx

SYNC_TRANSPORTS: tuple[type, ...] = (httpx.BaseTransport,)
ASYNC_TRANSPORTS: tuple[type, ...] = (httpx.AsyncBaseTransport,)
SYNC_STREAMS: tuple[type, ...] = (httpx.SyncByteStream,)
ASYNC_STREAMS: tuple[type, ...] = (httpx.AsyncByteStream,)
try:
    _fork = importlib.import_module("httpx2")
    SYNC_TRANSPORTS += (_fork.BaseTransport,)
    ASYNC_TRANSPORTS += (_fork.AsyncBaseTransport,)
    SYNC_STREAMS += (_fork.SyncByteStream,)
    ASYNC_STREAMS += (_fork.AsyncByteStream,)
    FORK: ModuleType | None = _fork
except ImportError:  # pragma: no cover - the fork is optional
    FORK = None


def package_of(request: httpx.Request) -> ModuleType:
    """The httpx package (``httpx`` or its fork) a request object comes from."""
    return importlib.import_module(type(request).__module__.partition(".")[0])


__all__ = [
    "ASYNC_STREAMS",
    "ASYNC_TRANSPORTS",
    "FORK",
    "SYNC_STREAMS",
    "SYNC_TRANSPORTS",
    "package_of",
]
