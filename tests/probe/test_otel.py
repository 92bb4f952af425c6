"""Probe rows as OpenTelemetry GenAI spans (issue 26 point 5), over OTLP/HTTP.

Two receivers on loopback: a test-side OTLP/HTTP endpoint that decodes each export with
opentelemetry-proto's own ``ExportTraceServiceRequest`` (always, with the [otel] extra), and a
real backend, Arize Phoenix (``phoenix serve`` from PyPI's arize-phoenix; the test skips
without it: ``make lane-phoenix`` installs it, ``.ci/run`` calls that), queried back
through its REST API.

The attribute names are the GenAI semantic conventions' registry
(open-telemetry/semantic-conventions-genai, model/gen-ai/registry.yaml), written out here;
expected values come from the recorded OpenAI sessions (usage read directly from the YAML:
``input_tokens`` includes ``cached_tokens``, as the registry wants for
``gen_ai.usage.input_tokens``), never from the exporter's own functions.
"""

from __future__ import annotations

import gzip
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from reasonwire.probe.cli import app
from reasonwire.probe.ledger import read_rows
from tests.conformance.corpus import load_cassette
from tests.probe.test_resent_tokens import SESSIONS, _answer, _oracle, _run

GENAI = {
    "operation": "gen_ai.operation.name",
    "provider": "gen_ai.provider.name",
    "request_model": "gen_ai.request.model",
    "response_model": "gen_ai.response.model",
    "input": "gen_ai.usage.input_tokens",
    "output": "gen_ai.usage.output_tokens",
    "reasoning": "gen_ai.usage.reasoning.output_tokens",
    "cache_read": "gen_ai.usage.cache_read.input_tokens",
    "cache_creation": "gen_ai.usage.cache_creation.input_tokens",
    "conversation": "gen_ai.conversation.id",
}
ROOT = Path(__file__).resolve().parents[2]


def _expected(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """A ledger from the recorded sessions, and per call the span attributes the recording
    says it must have."""
    ledger = tmp_path / "ledger"
    want: list[dict[str, Any]] = []
    for name, session in SESSIONS:
        its = load_cassette(name)
        _run(its, session, ledger)
        for it, oracle in zip(its, _oracle(its), strict=True):
            answer = _answer(it)
            assert answer is not None
            usage = answer["usage"]
            want.append(
                {
                    GENAI["operation"]: "chat",
                    GENAI["provider"]: "openai",
                    GENAI["request_model"]: it.request["model"],
                    GENAI["response_model"]: answer["model"],
                    GENAI["input"]: usage["input_tokens"],
                    GENAI["output"]: usage["output_tokens"],
                    GENAI["reasoning"]: usage["output_tokens_details"]["reasoning_tokens"],
                    GENAI["cache_read"]: usage["input_tokens_details"]["cached_tokens"],
                    GENAI["cache_creation"]: 0,
                    GENAI["conversation"]: session,
                    "reasonwire.resent_reasoning.measured_tokens": float(oracle["resent"]),
                    "reasonwire.resent_reasoning.estimated_tokens": 0.0,
                }
            )
    return ledger, want


def _key(attrs: dict[str, Any]) -> tuple[Any, ...]:
    return (attrs[GENAI["conversation"]], attrs[GENAI["input"]])


def _check(spans: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert len(spans) == len(want)
    by = {_key(s): s for s in spans}
    for w in want:
        got = by[_key(w)]
        for k, v in w.items():
            assert got[k] == v, (k, got.get(k), v)
        assert got["reasonwire.reasoning_bytes"] >= 0 and "reasonwire.text_bytes" in got
        assert "reasonwire.sent_reasoning_bytes" in got


# -- the test-side OTLP/HTTP receiver (opentelemetry-proto's message classes) ----------------


class _Receiver:
    def __init__(self) -> None:
        pb = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")
        self.requests: list[Any] = []
        received = self.requests

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                msg = pb.ExportTraceServiceRequest()
                msg.ParseFromString(body)
                received.append((self.path, self.headers.get("content-type"), msg))
                out = pb.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    r = _Receiver()
    yield r
    r.close()


def _value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind)


def test_spans_reach_an_otlp_http_receiver(receiver: _Receiver, tmp_path: Path) -> None:
    ledger, want = _expected(tmp_path)
    res = CliRunner().invoke(
        app, ["otel", "--endpoint", receiver.url, "--dir", str(ledger), "--service-name", "t"]
    )
    assert res.exit_code == 0, res.output
    assert f"{len(want)} of {len(want)} span(s) exported" in res.output
    spans: list[dict[str, Any]] = []
    rows = read_rows(ledger).rows
    starts = sorted(r["ts"] for r in rows)
    seen_starts = []
    for path, ctype, msg in receiver.requests:
        assert path == "/v1/traces" and ctype == "application/x-protobuf"
        for rs in msg.resource_spans:
            res_attrs = {a.key: _value(a.value) for a in rs.resource.attributes}
            assert res_attrs["service.name"] == "t"
            for ss in rs.scope_spans:
                assert ss.scope.name == "reasonwire.probe"
                for span in ss.spans:
                    attrs = {a.key: _value(a.value) for a in span.attributes}
                    assert span.kind == span.SPAN_KIND_CLIENT
                    # the conventions' span name: "{operation} {request model}"
                    assert span.name == f"chat {attrs[GENAI['request_model']]}"
                    assert span.end_time_unix_nano >= span.start_time_unix_nano
                    seen_starts.append(span.start_time_unix_nano)
                    spans.append(attrs)
    _check(spans, want)
    # each span starts when its call did (the row's ts, to the millisecond)
    from datetime import datetime

    ns = sorted(int(datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() * 1e9)
                for t in starts)  # fmt: skip
    assert [s // 1_000_000 for s in sorted(seen_starts)] == [s // 1_000_000 for s in ns]


def test_a_figure_not_reported_is_not_sent(receiver: _Receiver, tmp_path: Path) -> None:
    """A failed call without usage: no gen_ai.usage.* attribute (never a made-up 0), an
    error.type, and an ERROR status."""
    from reasonwire.probe.otel import export_rows

    row = {"ts": "2026-01-01T00:00:00.000Z", "sessionId": "f", "provider": "anthropic",
           "model": "claude-x", "requestModel": "claude-x", "responseModel": None,
           "dialect": "anthropic", "stream": True, "status": "aborted", "reasoningBytes": 3,
           "textBytes": 0, "durationMs": 12.5}  # fmt: skip
    assert export_rows([row], receiver.url) == 1
    ((_, _, msg),) = receiver.requests
    (span,) = msg.resource_spans[0].scope_spans[0].spans
    attrs = {a.key: _value(a.value) for a in span.attributes}
    assert not [k for k in attrs if k.startswith("gen_ai.usage.")]
    assert GENAI["response_model"] not in attrs
    assert attrs["error.type"] == "aborted" and attrs[GENAI["provider"]] == "anthropic"
    assert span.status.code == span.status.STATUS_CODE_ERROR
    assert span.end_time_unix_nano - span.start_time_unix_nano == 12_500_000


def test_unreachable_endpoint_is_reported(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    ledger, want = _expected(tmp_path)
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = CliRunner().invoke(
        app, ["otel", "--endpoint", f"http://127.0.0.1:{port}", "--dir", str(ledger),
              "--timeout", "0.5"],
    )  # fmt: skip
    assert res.exit_code == 1 and f"0 of {len(want)} span(s)" in res.output


def test_without_the_extra_one_line_exit_2(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules["opentelemetry"] = None
        sys.argv = ["reasonwire", "probe", "otel", "--endpoint", "http://127.0.0.1:9",
                    "--dir", {str(tmp_path)!r}]
        from reasonwire.cli import main
        main()
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=env)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert lines == ["reasonwire: reasonwire probe otel needs the 'otel' extra: "
                     "pip install 'reasonwire[otel]'"]  # fmt: skip


def test_the_core_does_not_import_opentelemetry() -> None:
    code = "import sys, reasonwire.probe, reasonwire.probe.report\n" + (
        "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'imported'\n"
        "import reasonwire.probe.otel\n"  # the exporter module imports the SDK only when used
        "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'otel'\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr


# -- a real backend: Arize Phoenix --------------------------------------------------------------


def _phoenix() -> str | None:
    """``REASONWIRE_PHOENIX``, else the lane's venv (``make lane-phoenix``, under
    ``REASONWIRE_CACHE`` or the user cache), else ``phoenix`` on PATH."""
    env = os.environ.get("REASONWIRE_PHOENIX")
    if env:
        return env
    cache = os.environ.get("REASONWIRE_CACHE") or str(Path.home() / ".cache" / "reasonwire")
    lane = Path(cache) / "phoenix-venv" / "bin" / "phoenix"
    return str(lane) if lane.is_file() else shutil.which("phoenix")


PHOENIX = _phoenix()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
@pytest.mark.skipif(PHOENIX is None, reason="Arize Phoenix not installed (make lane-phoenix)")
def test_spans_in_arize_phoenix(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    assert PHOENIX is not None
    ledger, want = _expected(tmp_path)
    port, grpc = _free_port(), _free_port()
    env = {**os.environ, "PHOENIX_WORKING_DIR": str(tmp_path / "phoenix"),
           "PHOENIX_PORT": str(port), "PHOENIX_GRPC_PORT": str(grpc),
           "PHOENIX_HOST": "127.0.0.1", "PHOENIX_TELEMETRY_ENABLED": "false"}  # fmt: skip
    log = open(tmp_path / "phoenix.log", "wb")  # noqa: SIM115 (closed in finally)
    proc = subprocess.Popen([PHOENIX, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):  # until it answers (bounded: at most about 2 minutes)
            if proc.poll() is not None:
                raise AssertionError((tmp_path / "phoenix.log").read_text()[-3000:])
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        else:
            raise AssertionError("phoenix did not start")
        res = CliRunner().invoke(app, ["otel", "--endpoint", base, "--dir", str(ledger)])
        assert res.exit_code == 0, res.output
        spans: list[dict[str, Any]] = []
        for _ in range(120):  # the backend ingests asynchronously: poll until all are there
            got = httpx.get(f"{base}/v1/projects/default/spans", params={"limit": 100},
                            timeout=10).json()["data"]  # fmt: skip
            spans = [s["attributes"] for s in got]
            if len(spans) >= len(want):
                break
            time.sleep(0.5)
        _check(spans, want)
        names = sorted(s["name"] for s in got)
        assert names == sorted(f"chat {w[GENAI['request_model']]}" for w in want)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_live_export_from_the_transport(
    receiver: _Receiver, sim_server: Any, tmp_path: Path
) -> None:
    """``ProbeTransport(on_row=LiveExporter(url))`` over a two-turn stateless Responses
    session on the simulator: a span per call once its row is written. The second re-sends
    the first answer's reasoning item in an earlier turn, which the Responses API discards
    (OpenAI reasoning guide; the simulator bills it 0): its span says 0 tokens re-sent and
    names the dropped carriers and their bytes as documented (bytes read from the
    simulator's own answer)."""
    from reasonwire.probe import ProbeTransport, flush
    from reasonwire.probe.otel import LiveExporter

    live = LiveExporter(receiver.url, service_name="live")
    kw: dict[str, Any] = {"model": "sim-gpt", "store": False,
                          "include": ["reasoning.encrypted_content"],
                          "reasoning": {"effort": "medium", "summary": "auto"}}  # fmt: skip
    transport = ProbeTransport("live-s", ledger_dir=tmp_path, on_row=live)
    with httpx.Client(transport=transport, base_url=sim_server.base_url,
                      headers={"authorization": "Bearer sk-test"}) as http:  # fmt: skip
        first = http.post("/responses", json={"input": "What is 2+2?", **kw}).json()
        history = [{"role": "user", "content": "What is 2+2?"}, *first["output"],
                   {"role": "user", "content": "And 3+3?"}]  # fmt: skip
        second = http.post("/responses", json={"input": history, **kw}).json()
    assert any(o["type"] == "reasoning" for o in first["output"])
    assert flush(timeout=30)  # the rows handed to the exporter so far
    live.shutdown()
    spans = [
        {a.key: _value(a.value) for a in span.attributes}
        for _, _, msg in receiver.requests
        for rs in msg.resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    ]
    assert len(spans) == 2
    by_input = {s[GENAI["input"]]: s for s in spans}
    s1 = by_input[first["usage"]["input_tokens"]]
    s2 = by_input[second["usage"]["input_tokens"]]
    assert s1["reasonwire.resent_reasoning.measured_tokens"] == 0
    items = [o for o in first["output"] if o["type"] == "reasoning"]
    texts = [p["text"] for o in items for p in o.get("summary") or ()]
    sealed = [o["encrypted_content"] for o in items]
    assert s2["reasonwire.resent_reasoning.measured_tokens"] == 0
    assert s2["reasonwire.resent_reasoning.estimated_tokens"] == 0
    assert s2["reasonwire.resent_reasoning.documented_carriers"] == len(texts) + len(sealed)
    assert s2["reasonwire.resent_reasoning.documented_bytes"] == sum(
        len(t.encode()) for t in texts + sealed
    )
    assert s2[GENAI["response_model"]] == second["model"]
    assert s1[GENAI["reasoning"]] == first["usage"]["output_tokens_details"]["reasoning_tokens"]
    assert s2[GENAI["conversation"]] == "live-s"
