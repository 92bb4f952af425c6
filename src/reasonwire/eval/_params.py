"""Request parameters of a route and the baseline parameter fixes, as data.

Carriers are expressed with the permissive field profile (every carrier field given is sent),
because the harness measures what the provider reads, not what one client would send; a route
profile that filters fields would make every filtered variant look "ignored". The route's own
request conventions (effort field, output-length field) are kept: they are computed by the
route's dialect and profile on a trivial transcript and carried as ``extra_body``
(:func:`route_params`), so no provider shape is written here.

A baseline answered 400 naming a parameter is fixed once per model (:func:`fix_for_error`):
the named parameter is dropped, or ``max_tokens`` renamed to ``max_completion_tokens`` when
the provider asks for it. The fixed parameters are reused for every cell of that model.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from reasonwire.routes import Route
from reasonwire.wire.model import JSON, JsonObject, RequestOptions, User
from reasonwire.wire.registry import get_dialect

DEFAULT_MAX_TOKENS = 512


def _diff(full: Mapping[str, JSON], base: Mapping[str, JSON]) -> dict[str, JSON]:
    return {k: v for k, v in full.items() if k not in base or base[k] != v}


def route_params(
    route: Route, model: str, effort: str | None, max_tokens: int = DEFAULT_MAX_TOKENS
) -> dict[str, JSON]:
    """The top-level body fields the route's dialect and profile add for ``effort`` and
    ``max_tokens`` (what differs from a bare request built with the permissive profile)."""
    dialect = get_dialect(route.dialect)
    probe = [User("x")]
    full = dialect.build_request(
        probe, RequestOptions(model=model, max_tokens=max_tokens, effort=effort), route.profile
    )
    bare = dialect.build_request(probe, RequestOptions(model=model), None)
    return _diff(full, bare)


@dataclass(frozen=True)
class ParamFix:
    """Fixes applied to a model's baseline parameters: dotted paths dropped, keys renamed."""

    drop: tuple[str, ...] = ()
    rename: tuple[tuple[str, str], ...] = ()
    fill: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=(), compare=False)

    def signature(self) -> str:
        return json.dumps([sorted(self.drop), sorted(self.rename), sorted(self.fill)])

    def apply(self, params: Mapping[str, JSON]) -> dict[str, JSON]:
        out: JsonObject = copy.deepcopy(dict(params))
        for old, new in self.rename:
            if old in out:
                out[new] = out.pop(old)
        for path in self.drop:
            _drop_path(out, path.split("."))
        return out

    def plus(self, other: ParamFix) -> ParamFix:
        return ParamFix(
            self.drop + other.drop,
            self.rename + other.rename,
            self.fill + other.fill,
            self.notes + other.notes,
        )


def _drop_path(node: JsonObject, parts: list[str]) -> bool:
    head, rest = parts[0], parts[1:]
    if head not in node:
        return False
    if not rest:
        del node[head]
        return True
    child = node[head]
    if isinstance(child, dict) and _drop_path(child, rest):
        if not child:
            del node[head]
        return True
    return False


def _leaf_paths(node: Mapping[str, JSON], prefix: str = "") -> list[str]:
    out: list[str] = []
    for k, v in node.items():
        path = f"{prefix}{k}"
        out.append(path)
        if isinstance(v, Mapping):
            out.extend(_leaf_paths(v, path + "."))
    return out


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


_RENAMES: tuple[tuple[str, str], ...] = (("max_tokens", "max_completion_tokens"),)
"""(sent, wanted) output-length renames: applied when an error names both."""


def fix_for_error(
    params: Mapping[str, JSON],
    message: str,
    body: str = "",
    carrier_kinds: tuple[str, ...] = (),
) -> ParamFix | None:
    """The fix a 400 asks for, or None when it names no parameter we send.

    ``message`` is the provider's error message, ``body`` the raw error body (a ``param``
    field there counts as naming the parameter). An error saying a carrier field of
    ``carrier_kinds`` is missing makes the baseline carry it empty. The deepest sent path
    whose last key the message names is dropped; a rename wins when the message names the
    wanted key too.
    """
    text = f"{message} {body}"
    low = text.lower()
    for kind in carrier_kinds:
        if "missing" in low and kind in low:
            # the provider demands the carrier field itself: send it empty on the baseline
            return ParamFix(fill=(kind,), notes=(f"{kind} sent empty: {message[:160]}",))
    for old, new in _RENAMES:
        if old in params and old in low and new in low:
            return ParamFix(rename=((old, new),), notes=(f"{old} -> {new}: {message[:160]}",))
    named = _norm(text)
    candidates = [p for p in _leaf_paths(params) if _norm(p.rsplit(".", 1)[-1]) in named]
    if not candidates:
        return None
    path = max(candidates, key=lambda p: (p.count("."), len(p)))
    return ParamFix(drop=(path,), notes=(f"dropped {path}: {message[:160]}",))
