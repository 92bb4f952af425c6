# ruff: noqa: B008  (typer reads its options from argument defaults)
"""``reasonwire eval``: run the consumption harness, list a route's models, write the report."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import typer
from rich.console import Console

from reasonwire.errors import ConfigError, MissingExtra, ReasonwireError
from reasonwire.eval._catalog import classify, fetch_catalog, select
from reasonwire.eval._report_files import write_report
from reasonwire.eval._report_html import write_all
from reasonwire.eval.matrix import render_md
from reasonwire.eval.runner import EvalConfig, RunResult, Target, run_eval
from reasonwire.routes import Route, get_route, load_routes, route_from_table
from reasonwire.wire.fold import FoldSettings

app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False)
DEFAULT_OUT = Path("reasonwire-eval")
DEFAULT_DOTENV = Path("~/.hermes/.env")
DOTENV_HELP = "Dotenv file read for a key missing from the environment."


def _fail(exc: Exception) -> typer.Exit:
    Console(stderr=True).print(f"[red]error:[/red] {exc}")
    return typer.Exit(2)


def _routes(
    names: list[str], routes_file: Path | None, kind: str | None, base_url: str | None,
    key_env: str | None,
) -> list[Route]:  # fmt: skip
    table = load_routes(routes_file)
    out = []
    for name in names:
        if name == "custom":
            spec = {"kind": kind, "base_url": base_url}
            if key_env:
                spec["key_env"] = key_env
            out.append(route_from_table("custom", spec))
        else:
            given = [f for f, v in (("--kind", kind), ("--key-env", key_env)) if v]
            if given:
                raise ConfigError(
                    f"{' and '.join(given)} only apply to --route custom (route {name} is "
                    "defined: edit it in --routes-file)"
                )
            r = get_route(name, table)
            if base_url:  # an explicit --base-url overrides the named route's
                if not base_url.startswith(("http://", "https://")):
                    raise ConfigError(f"--base-url {base_url!r}: expected an http(s) URL")
                r = r.with_base_url(base_url)
            out.append(r)
    return out


def _fold_settings(path: Path | None) -> FoldSettings:
    """``--fold``'s settings: the file's (``--fold-settings``, implies ``--fold``), else the
    fold's defaults switched on for every route."""
    if path is None:
        return FoldSettings(enabled=True)
    from reasonwire.fold import load_fold_settings

    return load_fold_settings(path)


def _key(route: Route, dotenv: Path) -> str | None:
    return route.read_key(dotenv=str(dotenv))


def _catalog(route: Route, dotenv: Path, models: str | None) -> list[dict[str, object]]:
    """The route's catalog entries for ``--models``: fetched whenever the route has one (explicit
    ids still take their catalog prices; a failed fetch leaves them unpriced, said on
    stderr); a price filter without a catalog is an error."""
    explicit = models is not None and not models.startswith(("max:", "portal-max:"))
    if not route.catalog_path or (route.loopback and explicit):
        if not explicit:
            raise ConfigError(
                f"--models {models or '(all)'}: route {route.name} has no catalog; "
                "name the model ids"
            )
        return []
    if not explicit:
        return fetch_catalog(route, _key(route, dotenv))
    try:
        return fetch_catalog(route, _key(route, dotenv))
    except ReasonwireError as exc:
        Console(stderr=True).print(f"catalog of {route.name} not read ({exc}): ids unpriced")
        return []


def _no_models(route: Route, entries: list[dict[str, object]], models: str | None) -> str:
    """The one line for a route that leaves nothing to measure (the run would send nothing)."""
    where = f"{route.base_url}{route.catalog_path or ''}"
    if not entries:
        return (
            f"route {route.name}: the catalog at {where} lists no model; name the ids with --models"
        )
    return (
        f"route {route.name}: none of the {len(entries)} catalog entries at {where} is kept for "
        f"--models {models or '(all)'} (`reasonwire eval models --route {route.name}` says why)"
    )


def summary_line(result: RunResult, out: Path) -> str:
    """The run's last line: calls, and spend (every run sharing ``--out``) split into what
    the providers billed and what is estimated, with the calls in flight at an interruption
    named (they may have been billed unseen, and were sent again once)."""
    spend = (
        f"${result.spent_usd:.4f} spent (${result.billed_usd:.4f} billed by the provider, "
        f"${result.estimated_usd + result.in_flight_usd:.4f} estimated"
    )
    if result.unknown_price:
        spend += f"; estimate: price unknown for {', '.join(result.unknown_price)}"
    if result.in_flight_usd:
        spend += (
            f"; ${result.in_flight_usd:.4f} reserved for calls in flight at an interruption, "
            f"likely ${result.in_flight_likely_usd:.4f} at their models' mean bill"
        )
    spend += ")"
    line = (
        f"{result.sent} calls sent, {result.reused} reused from records, {result.errors} "
        f"errors, {spend}"
    )
    if result.in_flight:
        line += (
            f"; {result.in_flight} call(s) were in flight at the interruption (counted at "
            "their reserved worst case, sent again once)"
        )
    if result.not_resent:
        line += f"; {result.not_resent} call(s) in flight at two interruptions not sent again"
    if result.budget_stopped:
        line += f" (budget stop: {result.stop_reason})" if result.stop_reason else " (budget stop)"
    return line + f"; {out}/matrix.md, {out}/matrix.json, {out}/report.html"


@app.command("run")
def run_command(
    route: list[str] = typer.Option([], "--route", help="Route name (repeat); none = embedded."),
    models: str | None = typer.Option(None, help="Ids (comma list) or portal-max:N."),
    out: Path = typer.Option(DEFAULT_OUT, help="Output directory (records, matrix)."),
    budget: float = typer.Option(10.0, help="USD, counted over every run sharing --out."),
    workers: int = typer.Option(8, help="Calls in flight per route."),
    no_local_server: bool = typer.Option(
        False, "--no-local-server", help="Embedded run: skip llama.cpp."
    ),
    want_direct: str = typer.Option("", help="Model ids that must reach the direct lane."),
    lane_attempts: int = typer.Option(8, help="Resamples per cell to reach a lane."),
    opaque_min: int = typer.Option(
        25,
        help="Opaque: a verbatim-minus-stripped delta above N tokens is consumed. Default 25, "
        "as the method says; the method's own harness uses 8, because some models emit only "
        "~20 reasoning tokens.",
        metavar="N",
    ),
    consume_ratio: float = typer.Option(0.5, help="Text: delta >= ratio*T is consumed."),
    seed: int | None = typer.Option(None, help="Fixture seed (trace and canary)."),
    routes_file: Path | None = typer.Option(None, help="TOML file with [routes.NAME]."),
    kind: str | None = typer.Option(None, help="--route custom: chat|responses|anthropic|gemini"),
    base_url: str | None = typer.Option(
        None, help="--route custom: base URL; on a named route: overrides its base URL."
    ),
    key_env: str | None = typer.Option(None, help="--route custom: key variable name."),
    progress: bool = typer.Option(
        True, "--progress/--no-progress", help="Show the progress bar (on a terminal)."
    ),
    dotenv: Path = typer.Option(DEFAULT_DOTENV, help=DOTENV_HELP),
    fold: bool = typer.Option(
        False, "--fold", help="Also measure the fold: folded carrier consumed, canaries kept."
    ),
    fold_settings: Path | None = typer.Option(
        None, "--fold-settings", help="Fold settings TOML for --fold (default: built-in)."
    ),
    wait: bool = typer.Option(
        False, "--wait", help="Another run holds --out: wait for it, then resume from its records."
    ),
    local: bool = typer.Option(
        False,
        "--local",
        help="--route custom: the server is yours and free (a cost it reports still counts).",
    ),
) -> None:
    """Measure which models read replayed reasoning; write records and the matrix.

    Exit codes: 0 done; 1 the report could not be written (records kept) or every model's
    baseline failed; 2 a usage or configuration error (nothing sent)."""
    try:
        if models is not None and not models.startswith(("max:", "portal-max:")):
            select([], models)  # an empty id list is refused before anything starts
        if not route:
            given = [
                f
                for f, v in (("--models", models), ("--base-url", base_url), ("--kind", kind),
                             ("--key-env", key_env))
                if v is not None
            ]  # fmt: skip
            if given:
                raise ConfigError(f"{', '.join(given)} need --route (the embedded run has none)")
        with ExitStack() as stack:
            extra: dict[str, object] = {}
            if seed is not None:
                extra["seed"] = seed
            if fold or fold_settings is not None:
                extra["fold"] = _fold_settings(fold_settings)
            if route:
                targets = []
                if local and route != ["custom"]:
                    raise ConfigError("--local only applies to --route custom")
                for r in _routes(route, routes_file, kind, base_url, key_env):
                    if local:
                        r = replace(r, local=True)
                    entries = _catalog(r, dotenv, models)
                    chosen = select(entries, models)
                    if not chosen:
                        raise ConfigError(_no_models(r, entries, models))
                    targets += [Target(r, c.id, c.price) for c in chosen]
            else:
                from reasonwire.eval._embedded import start_embedded

                targets = start_embedded(stack, seed or 0, local=not no_local_server)
            cfg = EvalConfig(
                targets=targets,
                out=out,
                budget=budget,
                workers=workers,
                want_direct=frozenset(m for m in want_direct.split(",") if m),
                lane_attempts=lane_attempts,
                opaque_min=opaque_min,
                consume_ratio=consume_ratio,
                progress=progress and sys.stderr.isatty(),
                dotenv=str(dotenv),
                wait=wait,
                on_wait=lambda who: Console(stderr=True).print(
                    f"--out {out} is in use by another run ({who}): waiting for it"
                ),
                **extra,  # type: ignore[arg-type]
            )
            result = run_eval(cfg)
        try:
            matrix = write_all(out)
        except OSError as exc:
            Console(stderr=True).print(
                f"[red]error:[/red] cannot write the report under {out}: "
                f"{exc.strerror or exc} (records kept: `reasonwire eval report --out DIR`)"
            )
            raise typer.Exit(1) from None
    except MissingExtra:  # a ReasonwireError too: the command's one line (cli.main) says it
        raise
    except ReasonwireError as exc:
        raise _fail(exc) from None
    typer.echo(render_md(matrix))
    typer.echo(summary_line(result, out))
    verdicts = [r.get("verdict") for r in matrix["rows"]]
    if verdicts and all(v == "baseline-failed" for v in verdicts):
        Console(stderr=True).print(
            "[red]error:[/red] every model's baseline failed: nothing was measured"
        )
        raise typer.Exit(1)


@app.command("models")
def models_command(
    route: str = typer.Option(..., "--route"),
    models: str | None = typer.Option(None, help="portal-max:N to filter by price."),
    routes_file: Path | None = typer.Option(None),
    dotenv: Path = typer.Option(DEFAULT_DOTENV, help=DOTENV_HELP),
) -> None:
    """The route's catalog: kept ids, and each skipped id with its reason."""
    try:
        r = get_route(route, load_routes(routes_file))
        entries = fetch_catalog(r, _key(r, dotenv))
        if not entries:
            raise ConfigError(_no_models(r, entries, models))
    except ReasonwireError as exc:
        raise _fail(exc) from None
    kept = {c.id for c in select(entries, models)}
    for e in entries:
        c = classify(e)
        if c.id in kept:
            price = f"  ${c.price.completion * 1e6:.2f}/1M out" if c.price else ""
            typer.echo(f"keep  {c.id}{price}")
        else:
            typer.echo(f"skip  {c.id}  ({c.reason or 'over the price limit'})")


@app.command("report")
def report_command(out: Path = typer.Option(DEFAULT_OUT)) -> None:
    """Write matrix.md, matrix.json and report.html from the records under --out."""
    try:
        write_report(out)
    except ReasonwireError as exc:
        raise _fail(exc) from None
    typer.echo((out.expanduser() / "matrix.md").read_text())  # as written: not rendered twice
