"""Probe rows as OpenTelemetry spans with the GenAI semantic conventions' attributes.

Why: teams read LLM cost in OpenTelemetry backends. Each ledger row becomes one ``CLIENT``
span named ``{gen_ai.operation.name} {gen_ai.request.model}``, from the call's start (``ts``)
for its ``durationMs``, exported over OTLP/HTTP (protobuf) by the OpenTelemetry SDK.

The attribute names are the conventions' (open-telemetry/semantic-conventions-genai,
``model/gen-ai/registry.yaml``): ``gen_ai.operation.name``, ``gen_ai.provider.name``,
``gen_ai.request.model``, ``gen_ai.response.model``, ``gen_ai.request.stream``,
``gen_ai.conversation.id`` (the probe session), ``gen_ai.usage.input_tokens`` (billed input:
the registry says it SHOULD include cached tokens, and that ``cache_read`` and
``cache_creation`` are included in it), ``gen_ai.usage.output_tokens``,
``gen_ai.usage.reasoning.output_tokens``, ``gen_ai.usage.cache_read.input_tokens``,
``gen_ai.usage.cache_creation.input_tokens``; ``error.type`` on a call that did not end
``ok``. A figure the provider did not report is left out, never sent as 0. Ours are under
``reasonwire.*``: reasoning, text and tool bytes, sent reasoning bytes, and the call's re-sent
reasoning in tokens (measured and estimated apart, as :mod:`reasonwire.probe.report` works
them out over the whole session), and the earlier-turn carriers counted as 0 tokens by the
dialect's documented drop (``documented_carriers`` and ``documented_bytes``).

The SDK is the ``otel`` extra (``pip install 'reasonwire[otel]'``): it is imported inside the
functions that need it, so the lean core never imports it; :func:`span_attributes` needs
nothing beyond the core.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from reasonwire.probe.ledger import row_usage
from reasonwire.probe.report import CallFigures, SessionAttribution, analyse

OPERATION_BY_DIALECT: Mapping[str, str] = {
    "chat": "chat",
    "responses": "chat",
    "anthropic": "chat",
    "interactions": "chat",
    "gemini": "generate_content",
}
"""``gen_ai.operation.name`` per wire dialect (the registry's ``chat`` and
``generate_content`` members; Gemini's native API is ``generateContent``)."""

PROVIDER_BY_ROUTE: Mapping[str, str] = {
    "openai-chat": "openai",
    "openai-responses": "openai",
    "xai-chat": "x_ai",
    "xai-responses": "x_ai",
    "gemini-native": "gcp.gemini",
    "gemini-interactions": "gcp.gemini",
    "gemini-openai": "gcp.gemini",
    "anthropic": "anthropic",
    "deepseek": "deepseek",
    "groq": "groq",
    "mistral": "mistral_ai",
    "moonshot": "moonshot_ai",
    "openai": "openai",
}
"""Built-in route name -> the registry's ``gen_ai.provider.name`` member (``gcp.gemini`` is
"used when accessing the generativelanguage.googleapis.com endpoint"). Any other route is
named as the row names it (the registry allows a custom value)."""

SCOPE = "reasonwire.probe"


def _n(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _epoch_ns(ts: Any) -> int | None:
    if not isinstance(ts, str) or not ts:
        return None
    try:
        return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        return None


def span_name(row: Mapping[str, Any]) -> str:
    op = OPERATION_BY_DIALECT.get(str(row.get("dialect")), "chat")
    model = row.get("requestModel") or row.get("model")
    return f"{op} {model}" if model else op


def span_attributes(
    row: Mapping[str, Any], figures: CallFigures | None = None
) -> dict[str, str | int | float | bool]:
    """The span attributes of one ledger row (``figures``: its re-sent reasoning)."""
    out: dict[str, str | int | float | bool] = {
        "gen_ai.operation.name": OPERATION_BY_DIALECT.get(str(row.get("dialect")), "chat"),
    }
    provider = row.get("provider")
    if isinstance(provider, str) and provider:
        out["gen_ai.provider.name"] = PROVIDER_BY_ROUTE.get(provider, provider)
        out["reasonwire.route"] = provider
    request_model = row.get("requestModel", row.get("model"))
    if isinstance(request_model, str) and request_model:
        out["gen_ai.request.model"] = request_model
    response_model = row.get("responseModel")
    if isinstance(response_model, str) and response_model:
        out["gen_ai.response.model"] = response_model
    if isinstance(row.get("stream"), bool):
        out["gen_ai.request.stream"] = bool(row["stream"])
    session = row.get("sessionId")
    if isinstance(session, str) and session:
        out["gen_ai.conversation.id"] = session
    usage = row_usage(dict(row))
    if usage is not None:
        out["gen_ai.usage.input_tokens"] = usage.billed_input
        out["gen_ai.usage.output_tokens"] = usage.output
        out["gen_ai.usage.cache_read.input_tokens"] = usage.cache_read
        out["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write
        if usage.reasoning is not None:
            out["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning
    status = row.get("status")
    if isinstance(status, str):
        out["reasonwire.status"] = status
        if status != "ok":
            out["error.type"] = status
    for key, attr in (
        ("reasoningBytes", "reasonwire.reasoning_bytes"),
        ("textBytes", "reasonwire.text_bytes"),
        ("toolBytes", "reasonwire.tool_bytes"),
        ("sentReasoningBytes", "reasonwire.sent_reasoning_bytes"),
        ("httpStatus", "http.response.status_code"),
    ):
        value = _n(row.get(key))
        if value is not None:
            out[attr] = value
    for key, attr in (("dialect", "reasonwire.dialect"), ("purpose", "reasonwire.purpose")):
        if isinstance(row.get(key), str):
            out[attr] = str(row[key])
    if figures is not None:
        out["reasonwire.resent_reasoning.measured_tokens"] = round(figures.resent_measured, 1)
        out["reasonwire.resent_reasoning.estimated_tokens"] = round(figures.resent_estimated, 1)
        out["reasonwire.resent_reasoning.unattributed_opaque_bytes"] = (
            figures.unattributed_opaque_bytes
        )
        out["reasonwire.resent_reasoning.documented_carriers"] = figures.documented_carriers
        out["reasonwire.resent_reasoning.documented_bytes"] = figures.documented_bytes
        out["reasonwire.resent_reasoning.capped"] = figures.capped
    return out


def _sdk() -> Any:
    """The SDK modules (one line naming the extra when it is not installed)."""
    from reasonwire._extras import as_missing_extra

    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.trace import SpanKind, Status, StatusCode
    except ModuleNotFoundError as exc:
        raise as_missing_extra("otel", exc, "reasonwire probe otel") from None
    return (OTLPSpanExporter, Resource, TracerProvider, SimpleSpanProcessor, SpanKind, Status,
            StatusCode)  # fmt: skip


class _Counting:
    """An exporter that hands spans on and counts the ones accepted (the SDK's span
    processor drops the result)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.exported = 0

    def export(self, spans: Any) -> Any:
        result = self.inner.export(spans)
        if getattr(result, "name", "") == "SUCCESS":
            self.exported += len(spans)
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        flush = getattr(self.inner, "force_flush", None)
        return bool(flush(timeout_millis)) if flush is not None else True


def export_rows(
    rows: Iterable[dict[str, Any]],
    endpoint: str | None = None,
    *,
    exporter: Any = None,
    service_name: str = "reasonwire-probe",
    timeout: float = 10.0,
) -> int:
    """Export ``rows`` as spans, one per row. ``endpoint`` is the OTLP/HTTP base URL
    (``http://127.0.0.1:4318``: spans go to ``<endpoint>/v1/traces``); ``exporter`` is any
    SDK ``SpanExporter`` instead. Raises :class:`reasonwire.errors.MissingExtra` without the
    ``otel`` extra. Returns how many spans the exporter accepted (a span the backend refused
    or could not be reached for is not counted)."""
    (OTLPSpanExporter, Resource, TracerProvider, SimpleSpanProcessor, SpanKind, Status,
     StatusCode) = _sdk()  # fmt: skip
    rows = list(rows)
    by_row = {c.row_index: c for c in analyse(rows).calls}
    if exporter is None:
        if endpoint is None:
            raise ValueError("export_rows needs an endpoint or an exporter")
        exporter = OTLPSpanExporter(endpoint=endpoint.rstrip("/") + "/v1/traces", timeout=timeout)
    counted = _Counting(exporter)
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(SimpleSpanProcessor(counted))
    tracer = provider.get_tracer(SCOPE)
    try:
        for i, row in enumerate(rows):
            _emit(tracer, row, by_row.get(i), SpanKind, Status, StatusCode)
    finally:
        provider.force_flush()
        provider.shutdown()
    return counted.exported


class LiveExporter:
    """Export each row as it is written: ``ProbeTransport(..., on_row=LiveExporter(url))``.

    Runs on the probe's housekeeping thread (never on the caller's path); spans are batched
    by the SDK's ``BatchSpanProcessor``. The re-sent figures are worked out per session as
    the rows come (:class:`reasonwire.probe.report.SessionAttribution`), in the order the
    calls end. :meth:`shutdown` sends what is pending (call it after
    :func:`reasonwire.probe.flush`, which waits for the rows handed over so far).
    """

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        exporter: Any = None,
        service_name: str = "reasonwire-probe",
        timeout: float = 10.0,
    ) -> None:
        (OTLPSpanExporter, Resource, TracerProvider, _simple, self._kind, self._status,
         self._code) = _sdk()  # fmt: skip
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        if exporter is None:
            if endpoint is None:
                raise ValueError("LiveExporter needs an endpoint or an exporter")
            exporter = OTLPSpanExporter(
                endpoint=endpoint.rstrip("/") + "/v1/traces", timeout=timeout
            )
        self.counted = _Counting(exporter)
        self._provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
        batch: Any = BatchSpanProcessor  # takes any object with the SpanExporter methods
        self._provider.add_span_processor(batch(self.counted))
        self._tracer = self._provider.get_tracer(SCOPE)
        self._sessions: dict[str, SessionAttribution] = {}
        self._lock = threading.Lock()

    def __call__(self, row: dict[str, Any]) -> None:
        session = str(row.get("sessionId") or "-")
        with self._lock:
            attribution = self._sessions.get(session)
            if attribution is None:
                attribution = self._sessions[session] = SessionAttribution(session)
            figures = attribution.add(row)
        _emit(self._tracer, row, figures, self._kind, self._status, self._code)

    def flush(self) -> bool:
        return bool(self._provider.force_flush())

    def shutdown(self) -> None:
        self._provider.shutdown()


def _emit(
    tracer: Any, row: Mapping[str, Any], figures: CallFigures | None, kind: Any, status: Any,
    code: Any,
) -> None:  # fmt: skip
    start = _epoch_ns(row.get("ts"))
    span = tracer.start_span(
        span_name(row), kind=kind.CLIENT, start_time=start,
        attributes=span_attributes(row, figures),
    )  # fmt: skip
    if row.get("status") not in ("ok", None):
        span.set_status(status(code.ERROR, str(row.get("error") or "")[:200]))
    duration = row.get("durationMs")
    end = None
    if start is not None and isinstance(duration, int | float):
        end = start + int(float(duration) * 1e6)
    span.end(end_time=end)


__all__ = [
    "OPERATION_BY_DIALECT",
    "PROVIDER_BY_ROUTE",
    "LiveExporter",
    "export_rows",
    "span_attributes",
    "span_name",
]
