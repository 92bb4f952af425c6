"""The one ``reasonwire`` command. Each package contributes a sub-command group from its own
``cli`` module; this file only wires them together."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="reasonwire",
    help="Reasoning state on the wire: continuity, consumption, cost and governance.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

# (sub-command, module holding a typer app called ``app``, help)
_GROUPS: tuple[tuple[str, str, str], ...] = (
    ("eval", "reasonwire.eval.cli", "Consumption harness: which models read replayed reasoning."),
    ("templates", "reasonwire.templates.cli", "Offline consumption scan of chat templates."),
    ("probe", "reasonwire.probe.cli", "Read-only stream probe ledger and report."),
    ("sim", "reasonwire.sim.cli", "Reference provider simulator."),
    ("localserver", "reasonwire.localserver.cli", "Real llama.cpp server with tiny models."),
    ("gateway", "reasonwire.govern.gateway_cli", "Governed-effort loopback gateway."),
    ("qualify", "reasonwire.govern.qualify_cli", "Evidence validator for adapter qualification."),
)


def _register(only: str | None = None) -> None:
    """Add the sub-command groups; ``only`` imports just that group (a fast start for
    ``reasonwire <group> ...``: the other groups' imports cost about a second)."""
    from reasonwire.inspect_cli import inspect_command

    app.command("inspect")(inspect_command)
    for name, module, help_text in _GROUPS:
        if only is not None and name != only:
            continue
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and module.startswith(exc.name):
                continue  # that package is not part of this build yet
            raise
        app.add_typer(mod.app, name=name, help=help_text)


def main() -> None:
    import sys

    first = sys.argv[1] if len(sys.argv) > 1 else None
    _register(first if first in {g[0] for g in _GROUPS} else None)
    app()
