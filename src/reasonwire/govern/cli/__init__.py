"""The commands of :mod:`reasonwire.govern`, one module a group: ``reasonwire gateway``
(:mod:`.gateway`), ``reasonwire control`` (:mod:`.control`) and ``reasonwire qualify``
(:mod:`.qualify`). What the groups share is here: how a group is made and how a command
fails (one line on stderr, an exit code)."""

from __future__ import annotations

import typer


def group(summary: str) -> typer.Typer:
    """A command group whose help, run on its own, is ``summary``; a group even with one
    command (``control sign`` stays ``sign``)."""
    app = typer.Typer(no_args_is_help=True, pretty_exceptions_enable=False)
    app.callback(help=summary)(_no_options)
    return app


def _no_options() -> None:
    """The group itself takes no options: its commands do."""


def fail(message: str, code: int) -> typer.Exit:
    """``message`` as one line on stderr; raise the returned exit with ``code``."""
    typer.echo(message, err=True)
    return typer.Exit(code)
