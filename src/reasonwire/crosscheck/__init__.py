"""The offline template scan checked against the real llama.cpp server.

This package joins :mod:`reasonwire.templates` (the offline scan) and
:mod:`reasonwire.localserver` (the real server), which do not import each other (the layer
contract, ``tests/test_layers.py``): it sits above both. It holds the cross-check
(:mod:`.check`) and, because ``reasonwire templates scan --cross-check`` runs it, the
``reasonwire templates`` command group (:mod:`.cli`).
"""

from reasonwire.crosscheck.check import (
    SAMPLE,
    Finding,
    cross_check,
    cross_check_template,
    findings_markdown,
    timed_cross_check,
    unserved,
)

__all__ = [
    "SAMPLE",
    "Finding",
    "cross_check",
    "cross_check_template",
    "findings_markdown",
    "timed_cross_check",
    "unserved",
]
