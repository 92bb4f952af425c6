"""The one ``reasonwire`` command. Each package contributes a sub-command group from its own
``cli`` module; this file only wires them together.

The command needs the ``cli`` extra (typer, rich) and each group its package's extra; without
them it prints one line naming the install command and exits 2, never a traceback. This module
imports typer only inside :func:`main` and :func:`build_app`, so it imports on the lean core.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from reasonwire._extras import missing_extra, require
from reasonwire.errors import MissingExtra
from reasonwire.version import version

if TYPE_CHECKING:
    import typer

HELP = "Reasoning state on the wire: continuity, consumption, cost and governance."


@dataclass(frozen=True, slots=True)
class _Group:
    """One sub-command group: ``module`` holds a typer app called ``app`` (each package's
    commands are in its ``cli`` module, see ARCHITECTURE.md); ``extra`` is what it needs."""

    name: str
    module: str
    extra: str
    help: str


_GROUPS: tuple[_Group, ...] = (
    _Group(
        name="eval",
        module="reasonwire.eval.cli",
        extra="eval",
        help="Consumption harness: which models read replayed reasoning.",
    ),
    # the scan's --cross-check joins templates and localserver: the group sits above both
    _Group(
        name="templates",
        module="reasonwire.crosscheck.cli",
        extra="templates",
        help="Offline consumption scan of chat templates.",
    ),
    _Group(
        name="probe",
        module="reasonwire.probe.cli",
        extra="cli",
        help="Read-only stream probe ledger and report.",
    ),
    _Group(
        name="fold",
        module="reasonwire.fold.cli",
        extra="cli",
        help="Fold long replayed reasoning text: plan, settings.",
    ),
    _Group(
        name="sim", module="reasonwire.sim.cli", extra="sim", help="Reference provider simulator."
    ),
    _Group(
        name="localserver",
        module="reasonwire.localserver.cli",
        extra="localserver",
        help="Real llama.cpp server with tiny models.",
    ),
    _Group(
        name="gateway",
        module="reasonwire.govern.cli.gateway",
        extra="govern",
        help="Governed-effort loopback gateway.",
    ),
    # the audit runs the simulator (its extra); see reasonwire.audit for what it needs
    _Group(
        name="audit",
        module="reasonwire.audit.cli",
        extra="sim",
        help="Continuity audit on the wire: audit [--out DIR] -- <command...>; audit frameworks.",
    ),
    _Group(
        name="control",
        module="reasonwire.govern.cli.control",
        extra="govern",
        help="Control: signed per-turn bindings.",
    ),
    _Group(
        name="qualify",
        module="reasonwire.govern.cli.qualify",
        extra="govern",
        help="Evidence validator for adapter qualification.",
    ),
)
_EXTRA_OF = {g.name: g.extra for g in _GROUPS}
# What a group needs before it starts, when less than its extra: ``eval`` against a real route
# runs on the core; only its embedded default (simulator, local server) needs the [eval] extra,
# and says so when it starts them.
_START_OF = {"eval": "cli"}


def build_app(only: str | None = None) -> typer.Typer:
    """The typer app with its sub-command groups; ``only`` imports just that group (a fast
    start for ``reasonwire <group> ...``: the other groups' imports cost about a second).
    Without ``only``, a group whose extra is not installed is left out of the help."""
    import typer

    from reasonwire.doctor.cli import doctor_command, inspect_command

    app = typer.Typer(
        name="reasonwire", help=HELP, no_args_is_help=True, pretty_exceptions_enable=False
    )

    @app.callback(invoke_without_command=True)
    def _root(
        show_version: bool = typer.Option(
            False, "--version", "-V", help="Print the version and exit.", is_eager=True
        ),
    ) -> None:
        if show_version:
            typer.echo(f"reasonwire {version()}")
            raise typer.Exit()

    app.command("inspect")(inspect_command)
    app.command("doctor")(doctor_command)
    for group in _GROUPS:
        if only is not None and group.name != only:
            continue
        if only is None:
            try:
                require(_START_OF.get(group.name, group.extra))
            except MissingExtra:
                continue
        mod = importlib.import_module(group.module)
        app.add_typer(mod.app, name=group.name, help=group.help)
    return app


EXAMPLES: dict[str, str] = {
    "inspect": "reasonwire inspect saved-stream.txt --replay",
    "doctor": "reasonwire doctor ~/.claude/projects/p/session.jsonl --out repaired.jsonl",
    "eval run": "reasonwire eval run --route openrouter --models portal-max:4 --out runs/or "
    "--budget 5 --fold",
    "eval models": "reasonwire eval models --route nous",
    "eval report": "reasonwire eval report --out runs/or",
    "templates scan": "reasonwire templates scan --out out/templates --cross-check",
    "probe report": "reasonwire probe report --json",
    "probe otel": "reasonwire probe otel --endpoint http://127.0.0.1:4318 --session s1",
    "fold plan": "reasonwire fold plan --matrix runs/or/matrix.json --ledger ~/.local/share/"
    "reasonwire/probe --out fold.toml",
    "sim serve": "reasonwire sim serve --port 8787",
    "sim models": "reasonwire sim models",
    "localserver build": "reasonwire localserver build",
    "localserver model": "reasonwire localserver model --template Qwen-Qwen3-0.6B",
    "localserver serve": "reasonwire localserver serve --template Qwen-Qwen3-0.6B --port 8080",
    "gateway serve": "reasonwire gateway serve --policy my_policy --keys keys/ --fold fold.toml",
    "gateway keygen": "reasonwire gateway keygen --out keys/ --kid k1",
    "audit run": "reasonwire audit --out audit-out -- python my_agent.py",
    "audit frameworks": "reasonwire audit frameworks --framework litellm --dialect anthropic",
    "qualify validate": "reasonwire qualify validate --evidence evidence.json --repo .",
    "qualify collect": "reasonwire qualify collect --evidence-db evidence.sqlite --out "
    "evidence.json --policy my_policy --deployment-id prod-1",
    "qualify verify-pin": "reasonwire qualify verify-pin --policy my_policy --runtime hermes "
    "--version 1.4.2 dist/hermes-1.4.2.tar.gz",
    "control sign": "reasonwire control sign --policy my_policy --keys keys/ --conversation c1 "
    "--runtime hermes --runtime-version 1.4.2 --route chat/main --level Auto",
}
"""One example per sub-command, shown at the end of its help."""


def polish(command: Any, path: tuple[str, ...] = ()) -> None:
    """Help that renders as written: markup characters in help texts are escaped (a literal
    ``[routes.NAME]`` stays), flags show no value placeholder, every sub-command ends with an
    example (:data:`EXAMPLES`)."""
    from rich.markup import escape

    if command.help:
        command.help = escape(command.help)
    for param in getattr(command, "params", ()):
        if getattr(param, "help", None):
            param.help = escape(param.help)
        if getattr(param, "is_flag", False) or getattr(param, "is_bool_flag", False):
            param.metavar = ""
    make_help = command.get_help_option

    def help_option(ctx: Any) -> Any:  # --help is made per context: a flag like the others
        opt = make_help(ctx)
        if opt is not None:
            opt.metavar = ""
        return opt

    command.get_help_option = help_option
    subs = getattr(command, "commands", None)
    if subs:
        for name, sub in subs.items():
            polish(sub, (*path, name))
    elif path:
        example = EXAMPLES.get(" ".join(path))
        if example and "Example" not in (command.epilog or ""):
            command.epilog = escape(f"Example: {example}")


def command(only: str | None = None) -> Any:
    """The click command of :func:`build_app`, polished (:func:`polish`)."""
    import typer

    cmd = typer.main.get_command(build_app(only))
    polish(cmd)
    return cmd


def _missing(exc: ModuleNotFoundError, feature: str, extra: str) -> NoReturn:
    """One line on stderr and exit 2 for a missing optional dependency; anything else (a
    missing module of reasonwire itself) propagates."""
    line = missing_extra(exc, feature, extra)
    if line is None:
        raise exc
    print(line, file=sys.stderr)
    raise SystemExit(2)


def main() -> None:
    args = sys.argv[1:]
    if args[:1] in (["--version"], ["-V"]):
        # Answered before typer is imported: a lean install can still say what it is.
        print(f"reasonwire {version()}")
        return
    group = args[0] if args and args[0] in _EXTRA_OF else None
    extra = _EXTRA_OF[group] if group else "cli"
    feature = f"the '{group}' command" if group else "this command"
    try:
        require("cli", feature)
        require(_START_OF.get(group or "", extra), feature)
        cli = command(group)
    except ModuleNotFoundError as exc:
        _missing(exc, feature, extra)
    try:
        cli(prog_name="reasonwire")
    except ModuleNotFoundError as exc:  # a command's lazy import of an optional dependency
        _missing(exc, feature, extra)
