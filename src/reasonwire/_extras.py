"""Optional dependencies: which extra brings which module, and one clear line when it is missing.

``pip install reasonwire`` is the lean core (httpx and orjson); everything heavier sits behind
an extra (``pyproject.toml``). A package that needs an extra says so where its heavy imports
are, in one of two ways::

    require("govern")          # checks every module of the extra, imports none (find_spec)

    try:
        import jinja2
    except ModuleNotFoundError as exc:
        raise as_missing_extra("templates", exc) from None

Without the extra, the import fails with :class:`~reasonwire.errors.MissingExtra` (a
``ModuleNotFoundError``, so ``except ImportError`` keeps working) whose message is one line
naming the install command. The ``reasonwire`` command turns a ``MissingExtra``, or a
``ModuleNotFoundError`` for a module of :data:`EXTRAS`, into that line on stderr and exit
status 2 (:func:`missing_extra`).
"""

from __future__ import annotations

import importlib.util

from reasonwire.errors import MissingExtra

# extra -> top-level modules it provides (import names, not distribution names: PyJWT is jwt).
# Keep in step with [project.optional-dependencies] in pyproject.toml.
EXTRAS: dict[str, tuple[str, ...]] = {
    "cli": ("typer", "rich"),
    "sim": ("starlette", "uvicorn", "cryptography"),
    "govern": (
        "starlette",
        "uvicorn",
        "jwt",
        "cryptography",
        "pydantic",
        "psycopg",
        "psycopg_pool",
    ),
    "localserver": ("gguf", "numpy", "tokenizers", "platformdirs"),
    "templates": ("jinja2", "tokenizers", "gguf", "numpy", "platformdirs"),
    "eval": (
        "rich",
        "starlette",
        "uvicorn",
        "cryptography",
        "gguf",
        "numpy",
        "tokenizers",
        "platformdirs",
    ),
    "otel": ("opentelemetry",),
}

# extra -> modules it installs that are used when present and never required: uvicorn serves
# the gateway with uvloop and httptools when it finds them (less CPU per proxied call) and with
# asyncio and h11 otherwise, so a missing one is no reason to refuse the gateway.
ACCELERATORS: dict[str, tuple[str, ...]] = {"govern": ("uvloop", "httptools")}


def install_hint(extra: str) -> str:
    return f"pip install 'reasonwire[{extra}]'"


def message(extra: str, feature: str) -> str:
    """The one line: ``<feature> needs the '<extra>' extra: pip install 'reasonwire[<extra>]'``."""
    return f"{feature} needs the '{extra}' extra: {install_hint(extra)}"


def missing_extra_error(extra: str, feature: str, module: str) -> MissingExtra:
    """The :class:`~reasonwire.errors.MissingExtra` for ``module`` of ``extra``, with its line."""
    return MissingExtra(message(extra, feature), extra=extra, feature=feature, module=module)


def as_missing_extra(
    extra: str, exc: ModuleNotFoundError, feature: str | None = None
) -> ModuleNotFoundError:
    """``exc`` as a :class:`~reasonwire.errors.MissingExtra` when the missing module is one of
    :data:`EXTRAS`, else ``exc`` itself, unchanged (a missing module of reasonwire itself is a
    bug, not a missing extra)."""
    if extra_for(exc.name) is None:
        return exc
    return missing_extra_error(extra, feature or f"reasonwire.{extra}", exc.name or "?")


def _present(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken install counts as absent
        return False


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be found (empty: the extra is installed)."""
    return [m for m in EXTRAS[extra] if not _present(m)]


def require(extra: str, feature: str | None = None) -> None:
    """Raise :class:`MissingExtra` unless every module of ``extra`` can be imported.

    ``feature`` names what needs it in the message (default ``reasonwire.<extra>``)."""
    absent = missing(extra)
    if absent:
        raise missing_extra_error(extra, feature or f"reasonwire.{extra}", absent[0])


def extra_for(module: str | None) -> str | None:
    """The extra that provides top-level module ``module`` (``None``: not an optional one).

    The first extra listing it wins, in :data:`EXTRAS` order (``cli`` before ``eval``)."""
    if not module:
        return None
    top = module.partition(".")[0]
    return next((extra for extra, mods in EXTRAS.items() if top in mods), None)


def missing_extra(exc: BaseException, feature: str, extra: str | None = None) -> str | None:
    """The command's line (``reasonwire: <message>``) for ``exc`` if it is a missing optional
    dependency, else ``None``.

    ``extra`` is the one ``feature`` is documented to need: named when it lists the missing
    module (gguf is in several extras), otherwise the first extra that provides it."""
    if isinstance(exc, MissingExtra):
        return f"reasonwire: {exc}"
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.partition(".")[0]
        found = extra if extra is not None and top in EXTRAS.get(extra, ()) else extra_for(top)
        if found is not None:
            return f"reasonwire: {message(found, feature)}"
    return None


__all__ = [
    "EXTRAS",
    "as_missing_extra",
    "extra_for",
    "install_hint",
    "message",
    "missing",
    "missing_extra",
    "missing_extra_error",
    "require",
]
