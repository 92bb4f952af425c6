"""httpx transports that fold the replayed reasoning text of request bodies before sending.

``httpx.Client(transport=FoldTransport(settings))`` (or an SDK's ``http_client``). Per request
the transport finds the dialect from the URL path (``wire.dialect_for_path``); for a dialect
endpoint with the fold enabled for the call's route, it decodes the JSON body, runs
:func:`reasonwire.wire.fold.fold_request` and, only if a text was folded, sends a new body
(the same values re-serialized, ``Content-Length`` updated). When nothing was folded the
original request object goes to the inner transport: the same bytes, never re-serialized.

Any other endpoint, a body that is not JSON, a compressed or streamed upload, and every
request while the fold is off (the default) pass through untouched. Responses are never
touched. Compose with the probe as ``FoldTransport(settings, inner=ProbeTransport(...))`` to
record what was actually sent. The sync and async transports share the one policy,
:class:`_Fold` (the wrapping itself: :mod:`reasonwire._wrapping`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

from reasonwire import _wrapping as wrapping
from reasonwire._httpcompat import package_of
from reasonwire.fold._settings import load_fold_settings
from reasonwire.wire.fold import FoldReport, FoldSettings, fold_request
from reasonwire.wire.model import JSON
from reasonwire.wire.registry import dialect_for_path

OnFold = Callable[[FoldReport], None]
Settings = FoldSettings | str | os.PathLike[str] | None


def _dumps(body: JSON) -> bytes:
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: keep it as the \\u escape it came as
        return json.dumps(body, separators=(",", ":")).encode("ascii")


class _Fold:
    """The fold's policy: the settings and the per-request decision."""

    def __init__(self, settings: Settings, route: str | None, on_fold: OnFold | None) -> None:
        if settings is None:
            settings = FoldSettings()
        elif not isinstance(settings, FoldSettings):
            settings = load_fold_settings(settings)
        self.settings = settings
        self.route = route
        self.on_fold = on_fold
        self.last_report: FoldReport | None = None

    def flow(self, request: httpx.Request) -> wrapping.Flow:
        return (yield self.request(request))

    def request(self, request: httpx.Request) -> httpx.Request:
        """``request`` itself, or a new request whose body has folded reasoning text."""
        if not self.settings.enabled:
            return request
        dialect = dialect_for_path(request.url.path)
        if dialect is None or request.headers.get("content-encoding"):
            return request
        try:
            content: bytes = request.content
        except Exception:  # a streamed upload that was not read: leave it alone
            return request
        try:
            body: JSON = json.loads(content)
        except (ValueError, UnicodeDecodeError):
            return request
        if not isinstance(body, dict):
            return request
        route = self.route or wrapping.route_name(request.url)
        host = urlsplit(str(request.url)).netloc
        model = dialect.model_in_request(request.url.path, body)
        new_body, report = fold_request(
            dialect, body, self.settings, route=route, host=host, model=model
        )
        self.last_report = report
        if self.on_fold is not None:
            self.on_fold(report)
        if not report.changed:
            return request
        data = _dumps(new_body)
        headers = request.headers.copy()
        headers["content-length"] = str(len(data))
        made: httpx.Request = package_of(request).Request(
            request.method, request.url, headers=headers, content=data,
            extensions=request.extensions,
        )  # fmt: skip
        return made


class _FoldFront(wrapping.Wrapping[_Fold, wrapping.I]):
    """The constructor and attributes both fold transports show."""

    def __init__(
        self,
        settings: Settings = None,
        inner: wrapping.I | None = None,
        route: str | None = None,
        on_fold: OnFold | None = None,
    ) -> None:
        self._wrap(_Fold(settings, route, on_fold), inner)

    @property
    def settings(self) -> FoldSettings:
        return self._policy.settings

    @property
    def last_report(self) -> FoldReport | None:
        return self._policy.last_report


class FoldTransport(_FoldFront[wrapping.SyncInner], wrapping.WrappingTransport[_Fold]):
    """A sync httpx transport that folds request bodies (see the module docstring).

    ``settings``: a :class:`FoldSettings`, a path to a TOML settings file, or None (off).
    ``route``: the route name matched against ``providers`` / ``drop`` (default: the
    built-in route whose base URL the request goes to, else the host). ``on_fold`` is
    called with the :class:`FoldReport` of each dialect request the fold looked at.
    ``inner`` defaults to the package's own ``HTTPTransport()``.
    """


class AsyncFoldTransport(_FoldFront[wrapping.AsyncInner], wrapping.AsyncWrappingTransport[_Fold]):
    """The async twin of :class:`FoldTransport` (default inner: ``AsyncHTTPTransport()``)."""


__all__ = ["AsyncFoldTransport", "FoldTransport"]
