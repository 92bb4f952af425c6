"""The running reasonwire's version, for reports and ``--version`` (its own module so that any
package may ask without importing the CLI)."""

from __future__ import annotations


def version() -> str:
    """The installed distribution's version, else the source tree's ``__version__``."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("reasonwire")
    except PackageNotFoundError:
        from reasonwire import __version__

        return __version__


__all__ = ["version"]
