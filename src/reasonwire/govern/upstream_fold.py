"""The fold on the gateway's upstream requests: which settings speak for a route, and the
fold of the body that really goes upstream.

Two places may enable it, and the route's own wins:

- ``RouteRegistration.fold`` in the registry (code, reviewed with it);
- the operator's settings file, ``gateway serve --fold fold.toml`` (the ``[fold]`` table of
  :func:`reasonwire.fold.load_fold_settings`, as ``reasonwire fold plan`` writes it), for
  every route whose registration says nothing. Its ``providers`` / ``drop`` entries name
  routes the way :meth:`~reasonwire.wire.fold.FoldSettings.action` matches them: the route
  id, the upstream host (``host:port`` of ``upstream_base_url``), ``route_id/model`` or
  ``host/model``.

Why an operator file at all: the fold is a cost setting, not a policy one. It changes how
much replayed history goes upstream, never the effort, the credential or what the client
sees, so it sits outside :func:`~reasonwire.govern.validator.mapping_id` and outside the
qualified registry. An operator turns it on for one route by naming it, without editing,
re-reviewing or re-qualifying the registry; a route whose registration sets a value
(``FoldSettings()`` pins it off) keeps that value whatever the file says.

Fail closed on the file: an entry that names no registered route is refused at start
(:func:`check_operator_fold`), since a misspelt route would leave the fold silently off.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from reasonwire.errors import ConfigError
from reasonwire.govern.registry import Registry, RouteRegistration
from reasonwire.wire.dialect import Dialect
from reasonwire.wire.fold import FoldSettings, fold_request
from reasonwire.wire.model import JsonObject


def upstream_host(route: RouteRegistration) -> str:
    """``host:port`` of the route's upstream, the host name the fold settings match (as the
    fold transport and ``fold plan`` name hosts)."""
    return urlsplit(route.upstream_base_url).netloc


def settings_for(route: RouteRegistration, operator: FoldSettings | None) -> FoldSettings | None:
    """The settings that decide the fold on ``route``: its own, else the operator's."""
    return route.fold if route.fold is not None else operator


def _names_route(entry: str, route: RouteRegistration) -> bool:
    """True when a ``providers`` entry matches ``route`` (the fold's own matching rule)."""
    probe = FoldSettings(enabled=True, providers=frozenset({entry}))
    return probe.action(route.route_id, upstream_host(route), route.model) is not None


def check_operator_fold(registry: Registry, settings: FoldSettings) -> None:
    """:class:`ConfigError` naming every ``providers`` / ``drop`` entry of the operator's
    settings that matches no registered route."""
    entries = set(settings.providers or ()) | set(settings.drop)
    routes = list(registry.routes.values())
    unknown = sorted(e for e in entries if not any(_names_route(e, r) for r in routes))
    if unknown:
        raise ConfigError(
            f"fold settings: no registered route is named by {', '.join(map(repr, unknown))} "
            "(use a route id, an upstream host, route_id/model or host/model)"
        )


def fold_upstream(
    dialect: Dialect,
    body: JsonObject,
    route: RouteRegistration,
    operator: FoldSettings | None,
) -> JsonObject:
    """``body`` (already stripped, injected and re-attached, in the upstream's ``dialect``)
    with its long replayed reasoning text folded when the route's settings say so; the very
    same object otherwise, so the gateway sends the bytes it would send without a fold.
    Opaque carriers and signed thinking are never touched (:mod:`reasonwire.wire.fold`)."""
    settings = settings_for(route, operator)
    if settings is None or not settings.enabled:
        return body
    folded, _ = fold_request(
        dialect, body, settings, route=route.route_id, host=upstream_host(route), model=route.model
    )
    return folded


__all__ = ["check_operator_fold", "fold_upstream", "settings_for", "upstream_host"]
