"""Governed effort inside a LiteLLM proxy: a pre-call hook that does the gateway's
authorisation and control rewrite, and evidence rows for every call.

For each chat completion the proxy receives, :class:`Governor` (the hook's logic, without
LiteLLM) verifies the binding header (:func:`~reasonwire.govern.binding.verify`), matches its
conversation to the conversation header, re-checks the runtime pin, the route (registered, not
revoked, chat, same model as the request) and the policy (:func:`~reasonwire.govern.policy.
resolve`), fixes the conversation's effort and intent in the evidence store, strips every
reasoning control the client sent (the chat dialect's inventory and the route's profile),
injects the route's fragment for the resolved level, and writes the same
:class:`~reasonwire.govern.evidence.EvidenceRow` rows as the gateway: a refusal at once (and
LiteLLM answers with the refusal's status; nothing reaches the upstream), a forwarded call
when LiteLLM logs its outcome, with the usage the provider reported.

The LiteLLM class (a ``CustomLogger``) is made at run time from the installed LiteLLM
(:func:`hook_class`), so this module imports without it. In the proxy's config::

    litellm_settings:
      callbacks: reasonwire.govern.litellm_hook.proxy_handler

with ``REASONWIRE_POLICY`` (module defining ``REGISTRY`` and ``POLICY``), ``REASONWIRE_KEYS``
(keys directory; public keys suffice) and ``REASONWIRE_EVIDENCE`` (SQLite path or
``postgresql://`` URL) in the proxy's environment. The LiteLLM model name must be the route's
model. Limitations: LiteLLM, not reasonwire, talks to the upstream, so the gateway's visible
projection and carrier vault do not apply (the client receives what LiteLLM returns, reasoning
text included); chat completions only.
"""

from __future__ import annotations

import importlib
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from reasonwire.errors import ConfigError, PolicyRefusal, ReasonwireError
from reasonwire.govern.authority import settle_effort
from reasonwire.govern.binding import HEADER, KeyRing, verify
from reasonwire.govern.carry import ATTEMPT_HEADER, CONVERSATION_HEADER
from reasonwire.govern.evidence import EvidenceRow, EvidenceStore, fill_usage
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import Registry, RouteRegistration
from reasonwire.wire.merge import deep_merge
from reasonwire.wire.registry import get_dialect

__all__ = ["CALL_ID_KEY", "Governor", "Refused", "from_env", "hook_class"]

CALL_ID_KEY = "reasonwire_call_id"
"""The key under the request's LiteLLM metadata that ties LiteLLM's log events to our row."""
_CHAT_CALLS = frozenset({"completion", "acompletion"})
_MAX_PENDING = 10_000
_MAX_ATTEMPT = 1000
_STATUS = {"malformed-body": 400, "bad-attempt": 400}
_MASK = "[verified by reasonwire]"


class Refused(Exception):
    """A refused call: the HTTP status and the reason (the row is already recorded)."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message


def _headers(data: Mapping[str, Any]) -> dict[str, str]:
    """The client's request headers as LiteLLM passed them to the hook (lower-cased)."""
    for where in (data.get("proxy_server_request"), data.get("metadata")):
        if isinstance(where, Mapping) and isinstance(where.get("headers"), Mapping):
            return {str(k).lower(): str(v) for k, v in where["headers"].items()}
    return {}


def _mask_binding(data: Mapping[str, Any]) -> None:
    """Replace the binding in LiteLLM's logged copies of the headers (its spend logs and
    callbacks see them): a verified binding has no use downstream."""
    for where in (data.get("proxy_server_request"), data.get("metadata"), data):
        holder = where.get("headers") if isinstance(where, Mapping) else None
        if isinstance(holder, dict):
            for k in list(holder):
                if str(k).lower() == HEADER:
                    holder[k] = _MASK


def _metadata(data: dict[str, Any]) -> dict[str, Any]:
    meta = data.get("metadata")
    if not isinstance(meta, dict):
        meta = data["metadata"] = {}
    return meta


def _millis(start: Any, end: Any) -> float | None:
    if isinstance(start, datetime) and isinstance(end, datetime):
        return (end - start).total_seconds() * 1000
    if isinstance(start, int | float) and isinstance(end, int | float):
        return (end - start) * 1000
    return None


class Governor:
    """The hook's logic: authorise and rewrite one request (``pre_call``), then complete its
    evidence row from LiteLLM's success or failure event. Thread- and task-safe."""

    def __init__(
        self, registry: Registry, policy: OrgPolicy, keys: KeyRing, store: EvidenceStore
    ) -> None:
        self.registry = registry
        self.policy = policy
        self.keys = keys
        self.store = store
        self.dialect = get_dialect("chat")
        self._pending: OrderedDict[str, tuple[EvidenceRow, RouteRegistration, float]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    # -- before the call ---------------------------------------------------------------

    def pre_call(self, data: dict[str, Any], call_type: str) -> dict[str, Any]:
        """The request LiteLLM should send, or :class:`Refused` (after recording the row)."""
        t0 = time.perf_counter()
        row = EvidenceRow(outcome="refused", conversation_id=None, dialect=self.dialect.name)
        try:
            out, route = self._authorise_and_rewrite(data, call_type, row)
        except PolicyRefusal as exc:
            row.reason = exc.reason
            row.latency_ms = (time.perf_counter() - t0) * 1000
            self.store.record(row)
            status = _STATUS.get(exc.reason, 403)
            raise Refused(
                status, exc.reason, f"reasonwire refused: {exc.reason}: {exc.detail}"
            ) from None
        row.outcome = "forwarded"  # until LiteLLM reports otherwise
        _metadata(out)[CALL_ID_KEY] = row.call_id
        with self._lock:
            self._pending[row.call_id] = (row, route, t0)
            while len(self._pending) > _MAX_PENDING:
                _, (lost, _, lost_t0) = self._pending.popitem(last=False)
                self._finish(lost, lost_t0, "upstream-error", "no outcome reported by litellm")
        return out

    def _authorise_and_rewrite(
        self, data: dict[str, Any], call_type: str, row: EvidenceRow
    ) -> tuple[dict[str, Any], RouteRegistration]:
        headers = _headers(data)
        row.conversation_id = headers.get(CONVERSATION_HEADER)
        attempt = headers.get(ATTEMPT_HEADER, "1")
        if not (attempt.isdigit() and len(attempt) <= 4 and 1 <= int(attempt) <= _MAX_ATTEMPT):
            raise PolicyRefusal(
                "bad-attempt", f"{ATTEMPT_HEADER} must be an integer from 1 to {_MAX_ATTEMPT}"
            )
        row.attempt = int(attempt)
        token = headers.get(HEADER)
        if not token:
            raise PolicyRefusal("binding-missing", f"header {HEADER} is required")
        if not row.conversation_id:
            raise PolicyRefusal("conversation-missing", f"header {CONVERSATION_HEADER} is required")
        b = verify(self.keys, token)
        row.key_id, row.task_id = b.key_id, b.task_id
        row.runtime_id, row.runtime_version = b.runtime_id, b.runtime_version
        row.route_id, row.requested = b.route_id, b.requested
        if b.conversation_id != row.conversation_id:
            raise PolicyRefusal(
                "conversation-mismatch", "the binding was issued for another conversation"
            )
        route = self.registry.route(b.route_id)
        row.route_qualification = route.qualification_id
        if call_type not in _CHAT_CALLS or route.dialect != self.dialect.name:
            raise PolicyRefusal(
                "provider-mismatch",
                f"route {route.route_id} speaks {route.dialect}; this is a {call_type} call",
            )
        if data.get("model") != route.model:
            raise PolicyRefusal(
                "provider-mismatch", f"route {route.route_id} is bound to model {route.model!r}"
            )
        resolved = settle_effort(self.registry, self.policy, self.store, b, row)
        _mask_binding(data)
        profile = self.dialect.profile(route.profile, **dict(route.profile_fields))
        out, removed = self.dialect.strip_controls(data, profile)
        fragment = route.levels[resolved]
        if self.dialect.is_non_escalating(removed) and not self.dialect.strip_controls(fragment)[1]:
            out.update(removed)  # only an exact lowering value, on a route that sets none
        else:
            deep_merge(out, dict(fragment))
        row.controls_removed = ",".join(removed)
        if self.dialect.wants_stream(out):
            row.stream = True
            deep_merge(out, dict(self.dialect.stream_usage))
        return out, route

    # -- after the call ----------------------------------------------------------------

    def _take(self, kwargs: Mapping[str, Any]) -> tuple[EvidenceRow, RouteRegistration, float]:
        params = kwargs.get("litellm_params")
        meta = params.get("metadata") if isinstance(params, Mapping) else None
        if not isinstance(meta, Mapping):
            meta = kwargs.get("metadata") if isinstance(kwargs.get("metadata"), Mapping) else {}
        call_id = meta.get(CALL_ID_KEY) if isinstance(meta, Mapping) else None
        with self._lock:
            found = self._pending.pop(call_id, None) if isinstance(call_id, str) else None
        if found is None:
            raise KeyError("not a call this hook authorised")
        return found

    def on_success(self, kwargs: Mapping[str, Any], response: Any, start: Any, end: Any) -> None:
        try:
            row, route, t0 = self._take(kwargs)
        except KeyError:
            return
        row.status_code = 200
        usage = None
        dump = getattr(response, "model_dump", None)
        if callable(dump):
            try:
                usage = self.dialect.parse_response(dump()).usage
            except (ReasonwireError, ValueError, TypeError, KeyError, AttributeError):
                usage = None  # unreadable: usage stays unavailable, never made up
        fill_usage(row, usage, route.price_per_mtok)
        row.ttfb_ms = _millis(start, kwargs.get("completion_start_time"))
        self._finish(row, t0, "forwarded", None, _millis(start, end))

    def on_failure(self, kwargs: Mapping[str, Any], response: Any, start: Any, end: Any) -> None:
        try:
            row, _, t0 = self._take(kwargs)
        except KeyError:
            return
        exc = kwargs.get("exception")
        status = getattr(exc, "status_code", None)
        row.status_code = status if isinstance(status, int) else None
        reason = f"upstream: {type(exc).__name__}" if exc is not None else "upstream: failed"
        self._finish(row, t0, "upstream-error", reason, _millis(start, end))

    def _finish(
        self,
        row: EvidenceRow,
        t0: float,
        outcome: Any,
        reason: str | None,
        latency_ms: float | None = None,
    ) -> None:
        row.outcome, row.reason = outcome, reason
        row.latency_ms = latency_ms if latency_ms is not None else (time.perf_counter() - t0) * 1000
        self.store.record(row)


def hook_class() -> type:
    """The LiteLLM ``CustomLogger`` subclass around a :class:`Governor` (needs LiteLLM and
    FastAPI, which the proxy has)."""
    base: type = importlib.import_module("litellm.integrations.custom_logger").CustomLogger
    http_exception: Any = importlib.import_module("fastapi").HTTPException

    def __init__(self: Any, governor: Governor) -> None:
        base.__init__(self)  # type: ignore[misc]
        self.governor = governor

    async def async_pre_call_hook(
        self: Any, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> dict[str, Any]:
        try:
            return self.governor.pre_call(data, str(call_type))  # type: ignore[no-any-return]
        except Refused as exc:
            raise http_exception(
                status_code=exc.status,
                detail={"error": {"code": exc.reason, "message": exc.message}},
            ) from None

    async def async_log_success_event(
        self: Any, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self.governor.on_success(kwargs, response_obj, start_time, end_time)

    async def async_log_failure_event(
        self: Any, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        self.governor.on_failure(kwargs, response_obj, start_time, end_time)

    return type(
        "ReasonwireLiteLLMHook",
        (base,),
        {
            "__init__": __init__,
            "__doc__": "reasonwire's governed effort as a LiteLLM proxy callback.",
            "async_pre_call_hook": async_pre_call_hook,
            "async_log_success_event": async_log_success_event,
            "async_log_failure_event": async_log_failure_event,
        },
    )


def _load_policy(module: str) -> tuple[Registry, OrgPolicy]:
    """``REGISTRY`` and ``POLICY`` of ``module`` (as ``gateway serve --policy``; the proxy's
    venv has no typer, so not through the CLI module)."""
    try:
        mod = importlib.import_module(module)
    except Exception as exc:  # the module is code: any failure at import
        raise ConfigError(f"cannot import policy module {module!r}: {type(exc).__name__}") from None
    registry, policy = getattr(mod, "REGISTRY", None), getattr(mod, "POLICY", None)
    if not isinstance(registry, Registry) or not isinstance(policy, OrgPolicy):
        raise ConfigError(f"{module} must define REGISTRY (Registry) and POLICY (OrgPolicy)")
    return registry, policy


def from_env() -> Any:
    """The hook configured by ``REASONWIRE_POLICY``, ``REASONWIRE_KEYS`` and
    ``REASONWIRE_EVIDENCE``; :class:`ConfigError` naming what is missing."""
    from pathlib import Path

    from reasonwire.govern.stores import open_evidence_store

    missing = [
        v
        for v in ("REASONWIRE_POLICY", "REASONWIRE_KEYS", "REASONWIRE_EVIDENCE")
        if not os.environ.get(v)
    ]
    if missing:
        raise ConfigError(f"the reasonwire LiteLLM hook needs {', '.join(missing)} set")
    registry, policy = _load_policy(os.environ["REASONWIRE_POLICY"])
    keys = KeyRing.load_dir(Path(os.environ["REASONWIRE_KEYS"]))
    store = open_evidence_store(os.environ["REASONWIRE_EVIDENCE"])
    return hook_class()(Governor(registry, policy, keys, store))


_handler: Any = None
_handler_lock = threading.Lock()


def __getattr__(name: str) -> Any:
    """``proxy_handler``: the hook from the environment, made on first use (LiteLLM's config
    names it as ``reasonwire.govern.litellm_hook.proxy_handler``)."""
    global _handler
    if name != "proxy_handler":
        raise AttributeError(name)
    with _handler_lock:
        if _handler is None:
            _handler = from_env()
        return _handler
