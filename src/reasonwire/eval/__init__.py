"""The consumption harness: which providers and models read replayed reasoning.

Public API: :func:`run_eval` / :func:`arun_eval` with an :class:`EvalConfig` of
:class:`Target` (route, model) pairs, and :func:`build_matrix` over an output directory.
"""

from reasonwire.eval.matrix import build_matrix, render_md, write_reports
from reasonwire.eval.runner import EvalConfig, RunResult, Target, arun_eval, run_eval

__all__ = [
    "EvalConfig",
    "RunResult",
    "Target",
    "arun_eval",
    "build_matrix",
    "render_md",
    "run_eval",
    "write_reports",
]
