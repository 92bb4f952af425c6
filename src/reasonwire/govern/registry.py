"""Runtime adapters and route registrations: data in code, reviewed like code.

A runtime is eligible only at the exact version an adapter record pins, and only once that
record is ``qualified``; a ``discovery`` record exposes no effort options. A route (an exact
provider/model registration) separately qualifies each level and says what the level means on
its wire, as a body fragment the gateway merges in. Nothing here widens a match: a new client
version needs a new record.

An adapter's :class:`RuntimePin` says exactly what was reviewed: the version, the source tag
and commit, and the SHA-256 of each published artifact (sdist, wheel, binary);
:func:`verify_artifact` checks a local file against it.
"""

from __future__ import annotations

import hashlib
import re
import tarfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from email.parser import HeaderParser
from pathlib import Path
from typing import Literal

from reasonwire.errors import PolicyRefusal
from reasonwire.govern.levels import LEVELS, Level
from reasonwire.wire.fold import FoldSettings
from reasonwire.wire.model import JSON, DialectName, JsonObject

ReviewState = Literal["discovery", "qualified"]


_HEX40 = re.compile(r"[0-9a-f]{40}")
_HEX64 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class ArtifactPin:
    """One published artifact of a pinned runtime: its file name as published (an sdist, a
    wheel, a binary) and the SHA-256 of its bytes (64 lower-case hex digits)."""

    name: str
    sha256: str

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ValueError(f"artifact pin: {self.name!r} is not a file name")
        if not _HEX64.fullmatch(self.sha256):
            raise ValueError(f"artifact pin {self.name}: sha256 must be 64 lower-case hex digits")


@dataclass(frozen=True)
class RuntimePin:
    """What exactly was reviewed: the version, the source tag and commit it was built from,
    and the checksum of every artifact that may run as that version."""

    version: str
    source_tag: str
    source_commit: str
    artifacts: tuple[ArtifactPin, ...]

    def __post_init__(self) -> None:
        if not self.version or not self.source_tag:
            raise ValueError("runtime pin: version and source_tag are required")
        if not _HEX40.fullmatch(self.source_commit):
            raise ValueError(f"runtime pin {self.version}: source_commit must be 40 hex digits")
        if not self.artifacts:
            raise ValueError(f"runtime pin {self.version}: at least one artifact checksum")


@dataclass(frozen=True)
class RuntimeAdapter:
    runtime_id: str
    version: str
    review_state: ReviewState
    qualification_id: str
    levels: frozenset[Level]
    pin: RuntimePin | None = None
    """The exact build reviewed (``reasonwire qualify verify-pin`` checks a local artifact
    against it); its version must be the adapter's."""

    def __post_init__(self) -> None:
        if self.pin is not None and self.pin.version != self.version:
            raise ValueError(
                f"{self.runtime_id} {self.version}: pin is for version {self.pin.version}"
            )

    def offered_levels(self) -> frozenset[Level]:
        """Levels the runtime may offer: none at all while still in discovery."""
        return self.levels if self.review_state == "qualified" else frozenset()


@dataclass(frozen=True)
class RouteRegistration:
    """An exact provider/model route. ``levels`` maps each qualified level to the body
    fragment that expresses it on ``dialect`` (e.g. chat ``{"reasoning_effort": "high"}``);
    :func:`dialect_levels` gives the dialect's own fragments for the route's model.

    The gateway authenticates upstream with the key in environment variable
    ``credential_env`` (read at call time), sent as ``auth_header: auth_scheme key``."""

    route_id: str
    provider: str
    model: str
    dialect: DialectName
    upstream_base_url: str
    qualification_id: str
    levels: Mapping[Level, Mapping[str, JSON]]
    credential_env: str | None = None
    revoked: bool = False
    auth_header: str = "authorization"
    auth_scheme: str = "Bearer"
    headers: Mapping[str, str] = field(default_factory=dict)
    price_per_mtok: Mapping[str, float] | None = None
    """USD per million tokens by usage figure (``input_uncached``, ``cache_read``,
    ``cache_write``, ``output``) for an *estimated* cost when the provider reports none."""
    profile: str | None = None
    """The vendor profile layer of the dialect (``vllm``, ``openrouter``...): which vendor
    controls are stripped and whether ``<think>`` blocks are cut from visible text."""
    profile_fields: Mapping[str, JSON] = field(default_factory=dict)
    """The route layer: profile fields overridden for this route only."""
    client_dialect: DialectName | None = None
    """Clients speak this dialect and the gateway translates to ``dialect`` upstream (Chat
    Completions clients on a Responses upstream: models that refuse function tools plus
    effort on Chat Completions). None: clients speak ``dialect``."""
    no_think_tags: bool = False
    """The route's model never writes its reasoning inline as ``<think>...</think>`` in
    visible text. On a route whose clients speak an OpenAI-compatible dialect (Chat
    Completions) the gateway cuts such blocks by default, whatever the vendor profile says:
    an OpenAI-compatible server without a reasoning parser passes a model's inline thinking
    through in ``content`` (the default profile does not say it may), and a block that
    reaches a governed client is hidden reasoning seen. A route that states this (a
    reviewed fact about its model) keeps a literal ``<think>`` in its text. A route that
    also sets ``profile_fields={"think_tags": True}`` contradicts itself and is refused."""
    hosted_tools: frozenset[str] = frozenset()
    """On a translated route (``client_dialect`` set): the upstream's hosted tool types
    (``web_search_preview``, ``mcp``...) a client may ask for. None by default: a Chat
    Completions client has function tools only, and a hosted tool (the provider fetching
    the web, or calling a remote MCP server, on the gateway's credential) is something the
    route's review must allow by name; any other is refused (``tool-not-allowed``)."""
    fold: FoldSettings | None = None
    """The fold of long replayed reasoning text on this route's upstream requests (see
    :mod:`reasonwire.govern.upstream_fold`). None, the default: the route says nothing and
    the operator's ``gateway serve --fold`` settings decide (off without them). A value
    here is reviewed with the registry and wins over the operator's file, so a route whose
    provider must get its reasoning whole is pinned off with ``FoldSettings()``. Not part of
    :func:`~reasonwire.govern.validator.mapping_id`: the fold changes what history is
    replayed, not what a level means on the wire, so setting it needs no re-qualification."""

    def __post_init__(self) -> None:
        if self.no_think_tags and self.profile_fields.get("think_tags") is True:
            raise ValueError(
                f"route {self.route_id}: no_think_tags contradicts profile_fields think_tags"
            )


def dialect_levels(
    dialect: DialectName, model: str, levels: tuple[Level, ...] = LEVELS
) -> dict[Level, JsonObject]:
    """Each level's route fragment as the dialect itself writes that effort for ``model``:
    the reasoning-control fields (the dialect's controls inventory) of a request it builds at
    that level, nothing else.

    Why: what a level means on the wire can depend on the model, not only on the dialect (on
    Anthropic, Claude 4.6 and later take ``thinking: {"type": "adaptive"}`` with
    ``output_config: {"effort": level}``, earlier models a ``budget_tokens``; the newest
    refuse the budget form with a 400). Deriving fragments from the dialect's own mapping
    keeps a registered route in step with it instead of a table written per route."""
    from reasonwire.wire.model import RequestOptions, User
    from reasonwire.wire.registry import get_dialect

    d = get_dialect(dialect)
    out: dict[Level, JsonObject] = {}
    for level in levels:
        body = d.build_request([User("")], RequestOptions(model=model, effort=level))
        fragment: JsonObject = {}
        for control in d.controls:
            if control.header:
                continue
            node: JSON = body
            for key in control.path:
                node = node.get(key) if isinstance(node, dict) else None
            if node is None:
                continue
            into = fragment
            for key in control.path[:-1]:
                into = into.setdefault(key, {})
            into[control.path[-1]] = node
        out[level] = fragment
    return out


@dataclass
class Registry:
    """Adapters and routes. Lookups are exact; anything unknown is a refusal."""

    adapters: list[RuntimeAdapter] = field(default_factory=list)
    routes: dict[str, RouteRegistration] = field(default_factory=dict)

    def adapter(self, runtime_id: str, version: str) -> RuntimeAdapter:
        for a in self.adapters:
            if a.runtime_id == runtime_id and a.version == version:
                if a.review_state != "qualified":
                    raise PolicyRefusal(
                        "runtime-not-qualified",
                        f"{runtime_id} {version} is in discovery: no effort options",
                    )
                return a
        raise self._no_adapter(runtime_id, version)

    def _no_adapter(self, runtime_id: str, version: str) -> PolicyRefusal:
        """The refusal for a runtime version with no adapter record: the versions the
        runtime does have, or that the runtime is unknown."""
        known = sorted({a.version for a in self.adapters if a.runtime_id == runtime_id})
        if known:
            return PolicyRefusal(
                "runtime-version-unknown",
                f"{runtime_id} {version} has no adapter record (known: {', '.join(known)})",
            )
        return PolicyRefusal("runtime-unknown", f"no adapter for runtime {runtime_id!r}")

    def route(self, route_id: str) -> RouteRegistration:
        r = self.routes.get(route_id)
        if r is None:
            raise PolicyRefusal("route-unknown", f"route {route_id!r} is not registered")
        if r.revoked:
            raise PolicyRefusal("route-revoked", f"route {route_id!r} was revoked")
        return r

    def add_route(self, route: RouteRegistration) -> None:
        unknown = set(route.levels) - set(LEVELS)
        if unknown:
            raise ValueError(f"route {route.route_id}: unknown levels {sorted(unknown)}")
        self.routes[route.route_id] = route

    def revoke(self, route_id: str) -> None:
        r = self.route(route_id)
        self.routes[route_id] = replace(r, revoked=True)

    def pinned(self, runtime_id: str, version: str) -> tuple[RuntimeAdapter, RuntimePin]:
        """The adapter record at exactly ``version`` (qualified or in discovery) and its pin;
        :class:`PolicyRefusal` when there is none (fail closed)."""
        for a in self.adapters:
            if a.runtime_id == runtime_id and a.version == version:
                if a.pin is None:
                    raise PolicyRefusal(
                        "runtime-not-pinned", f"{runtime_id} {version} has no pin in the registry"
                    )
                return a, a.pin
        raise self._no_adapter(runtime_id, version)


# -- checking a local artifact against a pin -------------------------------------------------

_MAX_METADATA = 1024 * 1024


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _metadata_version(data: bytes) -> str | None:
    version = HeaderParser().parsestr(data.decode("utf-8", "replace")).get("Version")
    return version.strip() if version else None


def package_version(path: Path) -> str | None:
    """The version a Python package file states (a wheel's ``*.dist-info/METADATA``, an
    sdist's ``PKG-INFO``); ``None`` for anything else (a binary). ValueError when it looks
    like a package but its metadata cannot be read."""
    name = path.name
    try:
        if name.endswith(".whl"):
            with zipfile.ZipFile(path) as z:
                metas = [
                    i
                    for i in z.infolist()
                    if i.filename.count("/") == 1
                    and i.filename.split("/")[0].endswith(".dist-info")
                    and i.filename.endswith("/METADATA")
                ]
                if len(metas) != 1 or metas[0].file_size > _MAX_METADATA:
                    raise ValueError(f"{name}: no single .dist-info/METADATA")
                return _metadata_version(z.read(metas[0]))
        if name.endswith((".tar.gz", ".tgz")):
            with tarfile.open(path, "r:gz") as t:
                for m in t:
                    if m.isfile() and m.name.count("/") == 1 and m.name.endswith("/PKG-INFO"):
                        if m.size > _MAX_METADATA:
                            break
                        f = t.extractfile(m)
                        if f is not None:
                            return _metadata_version(f.read())
                raise ValueError(f"{name}: no <name>-<version>/PKG-INFO")
    except (OSError, zipfile.BadZipFile, tarfile.TarError, EOFError) as exc:
        raise ValueError(f"{name}: not a readable package ({type(exc).__name__})") from None
    return None


def verify_artifact(path: Path, runtime_id: str, pin: RuntimePin) -> ArtifactPin:
    """The pinned artifact whose SHA-256 equals ``path``'s; :class:`PolicyRefusal`
    (``pin-mismatch``) when none does, or when the package's own metadata states another
    version than the pin. OSError when the file cannot be read."""
    digest = sha256_file(path)
    matches = [a for a in pin.artifacts if a.sha256 == digest]
    if not matches:
        named = [a for a in pin.artifacts if a.name == path.name]
        if named:
            raise PolicyRefusal(
                "pin-mismatch",
                f"{path.name} has sha256 {digest}; the pin of {runtime_id} {pin.version} says "
                f"{named[0].sha256}",
            )
        raise PolicyRefusal(
            "pin-mismatch",
            f"sha256 {digest} of {path.name} matches no pinned artifact of {runtime_id} "
            f"{pin.version} ({', '.join(a.name for a in pin.artifacts)})",
        )
    try:
        stated = package_version(path)
    except ValueError as exc:
        raise PolicyRefusal("pin-mismatch", str(exc)) from None
    if stated is not None and stated != pin.version:
        raise PolicyRefusal(
            "pin-mismatch",
            f"{path.name} states version {stated}, the pin is for {pin.version}",
        )
    return matches[0]
