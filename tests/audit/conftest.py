"""Shared pieces of the audit tests: a fresh recording simulator per test, the marker of the
full frameworks run (``make test-audit``)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from reasonwire.audit.recorder import AuditServer

FULL_ENV = "REASONWIRE_AUDIT_FRAMEWORKS"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "audit_frameworks: the full `reasonwire audit frameworks` run (installs a venv per "
        f"framework from the registry); runs only with {FULL_ENV}=1 (make test-audit)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(FULL_ENV) == "1":
        return
    skip = pytest.mark.skip(reason=f"set {FULL_ENV}=1 (make test-audit) for the frameworks run")
    for item in items:
        if "audit_frameworks" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def audit_server() -> Iterator[AuditServer]:
    with AuditServer(seed=0) as server:
        yield server
