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

The package holds everything of the fold above the pure core (``wire/fold.py``): the settings
file (``_settings``), the transports (``transport``), ``fold plan`` (``plan``, ``cli``), and
the evidence ``eval run --fold`` gathers: its long trace (``trace``) and its report section
(``report``). It imports none of its users (the layer contract): the fold step and its rows
stay in ``eval`` (they run on eval's executor and read eval's call records), the upstream fold
in ``govern`` (it decides between a registered route's settings and the operator's), and
the agent's ``fold=`` option in ``agent`` (one call to the pure core).
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
