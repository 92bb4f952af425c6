"""The public API.

Two layers, like httpx's ``tests/test_exported_members.py``:

- derived: for every public package, ``__all__`` is exactly the public names the package
  defines or imports (not ``_private``, not a module); for a plain module (``http``,
  ``credentials``, ``errors``), the public names it defines. So a new public name is exported
  or renamed ``_private``, and nothing is exported that is not there.
- pinned: the lists below (top level, ``wire``, ``http``, ``credentials``) are written out on
  purpose: a change to them is a deliberate, reviewed change of the API.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import types
from pathlib import Path

import pytest

import reasonwire
import reasonwire.credentials
import reasonwire.errors
import reasonwire.http
import reasonwire.wire
from reasonwire.errors import MissingExtra

PUBLIC = [
    "reasonwire",
    "reasonwire.wire",
    "reasonwire.http",
    "reasonwire.credentials",
    "reasonwire.errors",
    "reasonwire.agent",
    "reasonwire.probe",
    "reasonwire.eval",
    "reasonwire.govern",
    "reasonwire.templates",
    "reasonwire.sim",
    "reasonwire.localserver",
    "reasonwire.fold",
    "reasonwire.audit",
    "reasonwire.secrets_scan",
    "reasonwire.redaction",
]
EXPORTED_DUNDERS = frozenset({"__version__"})
# what ``from __future__ import annotations`` binds (not an API name)
FUTURE_FEATURE: type = importlib.import_module("__future__")._Feature

# Today's gaps, each to close in its module (not here): public-looking names a module defines
# but does not export (export them or rename them ``_private``), and modules with public names
# but no ``__all__``. An entry that no longer holds fails test_known_gaps_are_current, so
# these only shrink.
NOT_EXPORTED: dict[str, frozenset[str]] = {}
NO_ALL = frozenset({"reasonwire.errors"})

TOP = [
    "DIALECTS",
    "Assistant",
    "AuthError",
    "BadRequest",
    "BudgetExceeded",
    "Carrier",
    "CarrierComplete",
    "CollectError",
    "ConfigError",
    "CredentialError",
    "Done",
    "EvidenceError",
    "FastLoadRefused",
    "HookRefused",
    "MalformedBody",
    "Message",
    "MissingExtra",
    "Native",
    "NotFound",
    "PolicyRefusal",
    "ProviderError",
    "RateLimited",
    "ReasoningDelta",
    "ReasonwireError",
    "RequestOptions",
    "SSEDecoder",
    "SSEEvent",
    "ServerError",
    "ShapeError",
    "SimError",
    "StaleConnection",
    "StoreUnavailable",
    "StreamError",
    "StreamEvent",
    "StreamFailed",
    "System",
    "TemplateRenderError",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolLoopLimit",
    "ToolResult",
    "ToolSpec",
    "TransportError",
    "TruncatedStream",
    "Turn",
    "UnknownDialect",
    "Unreadable",
    "Usage",
    "UsageEvent",
    "User",
    "WireError",
    "__version__",
    "get_dialect",
]

WIRE = [
    "ABSENT",
    "DIALECTS",
    "JSON",
    "Assistant",
    "Carrier",
    "CarrierComplete",
    "CarrierKind",
    "Control",
    "Dialect",
    "DialectName",
    "Done",
    "ErrorInfo",
    "Message",
    "Native",
    "Profile",
    "ReasoningDelta",
    "RequestOptions",
    "SSEDecoder",
    "SSEEvent",
    "SentCarrier",
    "ServerState",
    "StreamDecoder",
    "StreamError",
    "StreamEvent",
    "StreamProjector",
    "System",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolResult",
    "ToolSpec",
    "Turn",
    "Usage",
    "UsageEvent",
    "User",
    "Variants",
    "detect",
    "dialect_for_path",
    "dialects",
    "get_dialect",
]

HTTP = [
    "DEFAULT_RETRY",
    "NO_RETRY",
    "REQUEST_ID_HEADERS",
    "Attempt",
    "RetryPolicy",
    "apost_json",
    "astream_post",
    "default_timeout",
    "encode_body",
    "error_from_response",
    "make_async_client",
    "make_client",
    "post_json",
    "provider_message",
    "request_id",
    "retry_after_seconds",
    "safe_url",
    "stream_post",
]

CREDENTIALS = [
    "DEFAULT_AUTH_FILE",
    "DEFAULT_DOTENV",
    "REDACTED",
    "SECRET_FIELDS",
    "AuthFileKey",
    "DotenvKey",
    "EnvKey",
    "KeySource",
    "can_change",
    "check_env_name",
    "check_key",
    "check_name",
    "check_source",
    "describe",
    "looks_like_key",
    "parse_dotenv",
    "parse_source",
    "read_first",
    "read_key",
    "redact",
    "redact_obj",
    "refusal",
    "register_secret",
]


def test_top_level_all_is_pinned() -> None:
    assert reasonwire.__all__ == TOP
    for name in TOP:
        assert hasattr(reasonwire, name), name


def test_wire_all_is_pinned() -> None:
    assert reasonwire.wire.__all__ == WIRE
    for name in WIRE:
        assert hasattr(reasonwire.wire, name), name


def test_http_and_credentials_all_are_pinned() -> None:
    assert reasonwire.http.__all__ == HTTP
    assert reasonwire.credentials.__all__ == CREDENTIALS
    for mod, names in ((reasonwire.http, HTTP), (reasonwire.credentials, CREDENTIALS)):
        for name in names:
            assert hasattr(mod, name), name


def test_top_level_names_are_the_same_objects() -> None:
    for name in TOP:
        if name in WIRE:
            assert getattr(reasonwire, name) is getattr(reasonwire.wire, name)
        elif name != "__version__":
            assert getattr(reasonwire, name) is getattr(reasonwire.errors, name)


def test_exception_tree() -> None:
    e = reasonwire
    assert issubclass(e.ProviderError, e.ReasonwireError)
    for cls in (e.BadRequest, e.AuthError, e.NotFound, e.RateLimited, e.ServerError):
        assert issubclass(cls, e.ProviderError)
    for cls in (e.MalformedBody, e.TruncatedStream, e.UnknownDialect):
        assert issubclass(cls, e.WireError)
    for cls in (e.ConfigError, e.CredentialError, e.TransportError, e.BudgetExceeded):
        assert issubclass(cls, e.ReasonwireError) and not issubclass(cls, e.ProviderError)


def test_every_dialect_is_registered() -> None:
    for name in reasonwire.DIALECTS:
        d = reasonwire.get_dialect(name)
        assert d.name == name
        assert isinstance(d.stream_decoder(), reasonwire.wire.StreamDecoder)


def test_key_signatures() -> None:
    sig = inspect.signature(reasonwire.http.post_json)
    assert list(sig.parameters)[:4] == ["client", "url", "body", "headers"]
    assert sig.parameters["retries"].kind is inspect.Parameter.KEYWORD_ONLY
    assert list(inspect.signature(reasonwire.credentials.redact).parameters) == ["text"]


# ------------------------------------------------------------------------------------------
# derived from the package
# ------------------------------------------------------------------------------------------


def _module(name: str) -> types.ModuleType:
    try:
        return importlib.import_module(name)
    except MissingExtra as exc:  # the dev install has every extra; a lean one has not
        pytest.skip(str(exc))


def _public_name(name: str) -> bool:
    return not name.startswith("_") or name in EXPORTED_DUNDERS


def _defined(path: Path) -> set[str]:
    """Names a plain module binds at its top level by def, class or assignment, and the
    explicit re-exports (``from m import x as x``, the typing convention)."""
    out: set[str] = set()
    stmts = list(ast.parse(path.read_text("utf-8")).body)
    while stmts:
        node = stmts.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.ImportFrom):  # ``from m import x as x``: a re-export
            out |= {a.name for a in node.names if a.asname == a.name}
        elif isinstance(node, ast.If | ast.Try):
            stmts += [*node.body, *node.orelse, *getattr(node, "finalbody", [])]
            for handler in getattr(node, "handlers", []):
                stmts += handler.body
    return {n for n in out if _public_name(n) and n != "__all__"}


def public_names(mod: types.ModuleType) -> set[str]:
    """A package's public names: every name it binds (defined or imported) that is not
    ``_private``, a module or a ``__future__`` feature. A plain module's: the ones it defines
    (what it imports for its own use is not its API)."""
    if hasattr(mod, "__path__"):
        return {
            name
            for name, value in vars(mod).items()
            if _public_name(name) and not isinstance(value, types.ModuleType | FUTURE_FEATURE)
        }
    assert mod.__file__ is not None
    return _defined(Path(mod.__file__))


@pytest.mark.parametrize("name", PUBLIC)
def test_all_is_derived_from_the_package(name: str) -> None:
    mod = _module(name)
    public = public_names(mod)
    if not hasattr(mod, "__all__"):
        assert name in NO_ALL or not public, f"{name} has public names but no __all__: {public}"
        return
    exported = list(mod.__all__)
    assert len(exported) == len(set(exported)), f"{name}.__all__ lists a name twice"
    missing = [n for n in exported if not hasattr(mod, n)]
    assert not missing, f"{name}.__all__ names what is not there: {missing}"
    modules = [n for n in exported if isinstance(getattr(mod, n), types.ModuleType)]
    assert not modules, f"{name}.__all__ exports modules: {modules}"
    hidden = public - set(exported) - NOT_EXPORTED.get(name, frozenset())
    assert not hidden, f"{name} binds public names it does not export: {sorted(hidden)}"
    stray = set(exported) - public
    assert not stray, f"{name}.__all__ exports names it neither defines nor imports: {stray}"


def test_known_gaps_are_current() -> None:
    for name, names in NOT_EXPORTED.items():
        mod = _module(name)
        assert names <= public_names(mod) - set(getattr(mod, "__all__", ())), (
            f"{name}: NOT_EXPORTED entry fixed; delete it: {names}"
        )
    for name in NO_ALL:
        assert not hasattr(_module(name), "__all__"), (
            f"{name} has __all__ now; delete it from NO_ALL"
        )
    assert set(NOT_EXPORTED) | NO_ALL <= set(PUBLIC)


def test_every_error_class_is_exported_at_the_top() -> None:
    """The exception tree is part of the top-level API: each public class of
    ``reasonwire.errors`` (a ``_private`` one is an internal signal, raised and caught inside
    one module)."""
    classes = {
        name
        for name, value in vars(reasonwire.errors).items()
        if not name.startswith("_")
        and isinstance(value, type)
        and issubclass(value, reasonwire.errors.ReasonwireError)
        and value.__module__ == "reasonwire.errors"
    }
    assert classes and classes <= set(reasonwire.__all__)
