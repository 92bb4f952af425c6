"""Every simulated behaviour cites what it imitates (``Behaviour.rule``), and the citation is
real: the WIRE.md section it names exists, every passage it quotes from that section is in
WIRE.md (``...`` marks an elision), and every recording it names is in the conformance
folders. Read against ``../shared/WIRE.md`` and ``../shared/conformance`` themselves (what the
simulator was written from), never against the simulator's own tables; skipped when the
shared folder is absent (a fresh clone)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from reasonwire.sim.behaviours import BEHAVIOURS, Behaviour

WIRE = Path(
    os.environ.get(
        "REASONWIRE_WIRE_MD", str(Path(__file__).resolve().parents[3] / "shared" / "WIRE.md")
    )
)
CONFORMANCE = WIRE.parent / "conformance"
RECORDING = re.compile(
    r"recording (?P<folder>cassettes(?:-2026)?)/(?P<name>\S+?\.(?:yaml|json|txt))"
)
SECTION = re.compile(r"^WIRE\.md > (?P<section>[^:]+):")
# a quoted passage: opens after ": " or "; ", closes before "; ", " (" or the end
QUOTE = re.compile(r"(?:^|: |; )'(?P<text>.+?)'(?=; | \(|$)")


def _norm(text: str) -> str:
    return " ".join(text.replace("`", "").split())


def _lanes(b: Behaviour) -> list[Behaviour]:
    return [b, *b.lanes.values()]


ALL = {
    f"{b.model}/{lane.id_prefix or '-'}": lane for b in BEHAVIOURS.values() for lane in _lanes(b)
}


@pytest.fixture(scope="module")
def wire() -> str:
    if not WIRE.is_file():
        pytest.skip(f"WIRE.md not found at {WIRE} (set REASONWIRE_WIRE_MD)")
    return WIRE.read_text(encoding="utf-8")


@pytest.mark.parametrize("key", sorted(ALL))
def test_rule_names_a_real_section_and_quotes_it(wire: str, key: str) -> None:
    rule = ALL[key].rule
    m = SECTION.match(rule)
    assert m, f"{key}: the rule does not start with 'WIRE.md > <section>:': {rule!r}"
    headings = [h.strip() for h in re.findall(r"^## (.+)$", wire, re.M)]
    section = m["section"]
    assert any(h == section or h.startswith(section + " (") for h in headings), (
        f"{key}: no WIRE.md section {section!r}"
    )
    quotes = [q["text"] for q in QUOTE.finditer(rule)]
    assert quotes, f"{key}: the rule quotes nothing: {rule!r}"
    text = _norm(wire)
    for q in quotes:
        for fragment in re.split(r"\.\.\.|…", q):
            fragment = _norm(fragment).strip(" ,;")
            if len(fragment) >= 4:
                assert fragment in text, f"{key}: {fragment!r} is not in WIRE.md"
    for rec in RECORDING.finditer(rule):
        assert (CONFORMANCE / rec["folder"] / rec["name"]).is_file(), f"{key}: no {rec[0]}"


def test_some_rule_cites_a_recording() -> None:
    """The recording check above is not vacuous: at least one rule names a recording."""
    assert any(RECORDING.search(b.rule) for b in ALL.values())


def test_the_check_refuses_a_made_up_citation(wire: str) -> None:
    """The checker itself: a quote WIRE.md does not hold is caught (the oracle is not vacuous)."""
    fake = "WIRE.md > Responses API: 'Reasoning items never need to come back'"
    (q,) = [q["text"] for q in QUOTE.finditer(fake)]
    assert _norm(q) not in _norm(wire)
