"""The fold: shorten long replayed reasoning text before it goes back on the wire.

Public API:

- :func:`fold_request` ``(dialect_name_or_obj, body, settings, *, route=None, host=None,
  model=None) -> (new_body, FoldReport)``: pure, on request JSON bodies (see
  :mod:`reasonwire.wire.fold` for what is folded and how);
- :class:`FoldSettings` (off by default), :func:`load_fold_settings` (a TOML file);
- :class:`FoldTransport` / :class:`AsyncFoldTransport`: httpx transports that fold request
  bodies of dialect endpoints before sending;
- :func:`make_plan`, :func:`plan_settings`, :func:`settings_toml`, :class:`PlanLine`: the
  ``reasonwire fold plan`` decisions (drop / fold / keep / unknown per route and model).
"""

from reasonwire.fold._settings import load_fold_settings
from reasonwire.fold.plan import PlanLine, make_plan, plan_settings, settings_toml
from reasonwire.fold.transport import AsyncFoldTransport, FoldTransport
from reasonwire.wire.fold import FoldedText, FoldReport, FoldSettings, fold_request, fold_text

__all__ = [
    "AsyncFoldTransport",
    "FoldReport",
    "FoldSettings",
    "FoldTransport",
    "FoldedText",
    "PlanLine",
    "fold_request",
    "fold_text",
    "load_fold_settings",
    "make_plan",
    "plan_settings",
    "settings_toml",
]
