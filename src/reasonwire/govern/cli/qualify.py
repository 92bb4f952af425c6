"""``reasonwire qualify``: build, validate and pin adapter qualification evidence.

- ``validate``: check an evidence file (see :mod:`reasonwire.govern.validator`); with
  ``--policy`` also against the registry and policy.
- ``collect``: build the evidence file (schema 2) from a gateway run's evidence rows (SQLite
  path or ``postgresql://`` URL; see :mod:`reasonwire.govern.collect`), then validate it
  against the registry.
- ``verify-pin``: check local artifacts (sdist, wheel, binary) against a runtime's pin
  (SHA-256, and the version a package states).

Exit codes: 0 pass; 1 the evidence or artifact is not acceptable (each reason listed, or one
line); 2 the check could not run (a bad option, module, file or database: one line).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from reasonwire.errors import ConfigError, EvidenceError, PolicyRefusal
from reasonwire.govern.cli import fail, group
from reasonwire.govern.validator import DISCLAIMER, validate_file

app = group("Evidence validator for adapter qualification.")


def _report_failure(path: Path, exc: EvidenceError) -> typer.Exit:
    typer.echo(f"FAIL: {path} is not acceptable evidence:", err=True)
    for p in exc.problems:
        typer.echo(f"  - {p}", err=True)
    typer.echo(DISCLAIMER, err=True)
    return typer.Exit(1)


@app.command("validate")
def validate(
    evidence: Annotated[Path, typer.Option("--evidence", help="The evidence JSON file.")],
    repo: Annotated[Path, typer.Option("--repo", help="Source repo the evidence binds to.")] = Path(
        "."
    ),
    policy: Annotated[
        str | None,
        typer.Option("--policy", help="Module defining REGISTRY and POLICY to check against."),
    ] = None,
) -> None:
    """Validate an evidence file: strict schema, commit binding, completeness."""
    try:
        registry, org = (None, None)
        if policy is not None:
            from reasonwire.govern.cli.gateway import load_policy

            registry, org = load_policy(policy)
        ev = validate_file(evidence, repo, registry=registry, policy=org)
    except EvidenceError as exc:
        raise _report_failure(evidence, exc) from None
    except ConfigError as exc:
        raise fail(f"error: {exc}", 2) from None
    s = ev.subject
    typer.echo(
        f"PASS: {s.runtime_id} {s.runtime_version} on {s.route_id}, levels "
        f"{', '.join(ev.proposed_levels)}, commit {ev.source_commit}"
        + (", registry and policy checked" if policy is not None else "")
    )
    typer.echo(DISCLAIMER)


@app.command("collect")
def collect_command(
    evidence_db: Annotated[
        str, typer.Option("--evidence-db", help="The gateway's evidence: SQLite path or URL.")
    ],
    out: Annotated[Path, typer.Option("--out", help="Evidence file to write.")],
    policy: Annotated[str, typer.Option("--policy", help="Module defining REGISTRY and POLICY.")],
    deployment_id: Annotated[
        str, typer.Option("--deployment-id", help="Which gateway deployment the rows are from.")
    ],
    runtime: Annotated[str | None, typer.Option("--runtime", help="Subject runtime id.")] = None,
    runtime_version: Annotated[
        str | None, typer.Option("--runtime-version", help="Subject runtime version.")
    ] = None,
    route: Annotated[str | None, typer.Option("--route", help="Subject route id.")] = None,
    levels: Annotated[
        str | None, typer.Option("--levels", help="Proposed levels, comma-separated.")
    ] = None,
    latency_bound_ms: Annotated[
        float, typer.Option("--latency-bound-ms", help="Bound on an observation's latency.")
    ] = 30_000.0,
    vault_db: Annotated[
        str | None,
        typer.Option("--vault-db", help="Vault (SQLite path or URL): what must stay hidden."),
    ] = None,
    hidden_marker: Annotated[
        list[str] | None, typer.Option("--hidden-marker", help="A hidden reasoning string.")
    ] = None,
    transcript: Annotated[list[Path] | None, typer.Option(help="What the client saw.")] = None,
    activity: Annotated[list[Path] | None, typer.Option(help="The runtime's activity.")] = None,
    logs: Annotated[list[Path] | None, typer.Option(help="Gateway and runtime logs.")] = None,
    artifacts: Annotated[list[Path] | None, typer.Option(help="Other artifacts.")] = None,
    limitation: Annotated[
        list[str] | None, typer.Option("--limitation", help="A limitation to state.")
    ] = None,
    repo: Annotated[Path, typer.Option("--repo", help="Source repo the evidence binds to.")] = Path(
        "."
    ),
) -> None:
    """Build the evidence file from evidence rows, then validate it against the registry."""
    import orjson

    from reasonwire.errors import CollectError
    from reasonwire.govern.cli.gateway import load_policy
    from reasonwire.govern.collect import CollectOptions, collect, strings_in
    from reasonwire.govern.levels import LEVELS
    from reasonwire.govern.stores import is_postgres_url, open_evidence_store, open_vault
    from reasonwire.govern.validator import repo_head, validate_text

    chosen = None
    if levels is not None:
        chosen = [lv.strip().lower() for lv in levels.split(",") if lv.strip()]
        bad = [lv for lv in chosen if lv not in LEVELS]
        if bad or not chosen:
            raise fail(f"error: --levels takes {', '.join(LEVELS)}, not {levels!r}", 2)
    try:
        registry, org = load_policy(policy)
        head = repo_head(repo)
        for target in (evidence_db, vault_db):
            if target is not None and not is_postgres_url(target) and not Path(target).is_file():
                raise ConfigError(f"no database file at {target}")
        store = open_evidence_store(evidence_db)
        try:
            rows = store.rows()
        finally:
            store.close()
        markers = list(hidden_marker or [])
        if vault_db is not None:
            vault = open_vault(vault_db)
            try:
                for value in vault.values():
                    markers.extend(strings_in(value))
            finally:
                vault.close()
        options = CollectOptions(
            deployment_id=deployment_id,
            runtime_id=runtime,
            runtime_version=runtime_version,
            route_id=route,
            levels=chosen,
            latency_bound_ms=latency_bound_ms,
            hidden_markers=markers,
            places={
                "transcript": list(transcript or []),
                "activity": list(activity or []),
                "logs": list(logs or []),
                "artifacts": list(artifacts or []),
            },
            limitations=list(limitation or []),
        )
        doc = collect(rows, registry, org, head=head, options=options)
        text = orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
        tmp = out.with_name(out.name + f".tmp{os.getpid()}")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(out)
    except CollectError as exc:
        raise fail(f"error: {exc}", 2) from None
    except ConfigError as exc:
        raise fail(f"error: {exc}", 2) from None
    except OSError as exc:
        name = getattr(exc, "filename", None) or "a file"
        raise fail(f"error: cannot read or write {name}: {type(exc).__name__}", 2) from None
    try:
        ev = validate_text(text, head, registry=registry, policy=org)
    except EvidenceError as exc:
        typer.echo(f"wrote {out} ({len(rows)} rows)", err=True)
        raise _report_failure(out, exc) from None
    s = ev.subject
    typer.echo(
        f"PASS: wrote {out}: {s.runtime_id} {s.runtime_version} on {s.route_id}, levels "
        f"{', '.join(ev.proposed_levels)}, from {len(rows)} rows, commit {ev.source_commit}"
    )
    typer.echo(DISCLAIMER)


@app.command("verify-pin")
def verify_pin(
    files: Annotated[list[Path], typer.Argument(help="Artifacts: sdist, wheel or binary.")],
    policy: Annotated[str, typer.Option("--policy", help="Module defining REGISTRY and POLICY.")],
    runtime: Annotated[str, typer.Option("--runtime", help="Runtime id.")],
    version: Annotated[str, typer.Option("--version", help="Exact runtime version.")],
) -> None:
    """Check local artifacts against the registry's pin of a runtime version."""
    from reasonwire.govern.cli.gateway import load_policy
    from reasonwire.govern.registry import verify_artifact

    try:
        registry, _ = load_policy(policy)
        _, pin = registry.pinned(runtime, version)
    except ConfigError as exc:
        raise fail(f"error: {exc}", 2) from None
    except PolicyRefusal as exc:
        raise fail(f"FAIL: {exc.reason}: {exc.detail}", 1) from None
    failed = False
    for f in files:
        try:
            art = verify_artifact(f, runtime, pin)
        except PolicyRefusal as exc:
            typer.echo(f"FAIL: {f}: {exc.detail}", err=True)
            failed = True
            continue
        except OSError as exc:
            raise fail(f"error: cannot read {f}: {type(exc).__name__}", 2) from None
        typer.echo(
            f"PASS: {f} is {runtime} {pin.version} ({art.name}, sha256 {art.sha256}, "
            f"tag {pin.source_tag}, commit {pin.source_commit})"
        )
    if failed:
        raise typer.Exit(1)
