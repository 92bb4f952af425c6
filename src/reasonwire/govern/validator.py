"""The qualification evidence validator.

An evidence file (JSON) proposes levels for one runtime adapter on one route and states what
was observed. The validator checks that it is complete and bound to the exact source commit:
a strict schema (unknown fields fail), the commit equal to ``git rev-parse HEAD`` of the repo,
one observation per proposed level with requested == resolved, Auto resolution, resume,
concurrent-conversation isolation, every negative case ``failed-closed``, hidden reasoning
absent everywhere it was looked for, usage ``reported``/``unavailable`` (a figure only when
reported, never a made-up zero), a cost status, stated limitations.

Before the schema is applied, the evidence is scanned for likely credentials with the one
detector of :mod:`reasonwire.secrets_scan` (the one redaction uses): every JSON key and value
of the parsed document (repeated keys included) and the raw text, as written and JSON-unescaped.
A hit is refused naming the kind and the JSON path only (the parent's path for a key name;
the line when the text is not JSON), never the value. Every other message is passed through
redaction too, and names of unknown fields or cases are shown only when they are plain.
Passing proves completeness and commit binding, not truth.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reasonwire.credentials import redact
from reasonwire.errors import ConfigError
from reasonwire.govern.levels import Level
from reasonwire.secrets_scan import format_path, load_pairs, scan_json, scan_text

NEGATIVE_CASES = (
    "tampered",
    "expired",
    "alg-none",
    "wrong-key",
    "other-conversation",
    "stale-runtime-version",
    "unsupported-route",
    "provider-mismatch",
    "over-policy-level",
    "route-revoked-after-projection",
)
HIDDEN_PLACES = ("transcript", "activity", "logs", "artifacts")
DISCLAIMER = (
    "Passing proves the evidence is complete and bound to the source commit; "
    "it does not prove the observations are true."
)

# Not a credential shape but a sign that one may be near: evidence never needs to talk about
# API keys. Linear (one literal-ish run), so it rides along with the detector's patterns.
_MENTIONS = (("api key mention", re.compile(r"api[\s_\-]?key", re.IGNORECASE)),)
_MAX_SHOWN = 20  # findings listed; the rest are counted


class EvidenceError(ConfigError):
    """The evidence file cannot be accepted; ``problems`` lists every reason."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class UsageFigures(_Strict):
    input_tokens: Annotated[int, Field(ge=0)]
    output_tokens: Annotated[int, Field(ge=0)]
    reasoning_tokens: Annotated[int, Field(ge=0)] | None = None


class Observation(_Strict):
    level: Level
    requested: Level
    resolved: Level
    evidence_call_ids: Annotated[list[str], Field(min_length=1)]
    usage_status: Literal["reported", "unavailable"]
    usage: UsageFigures | None
    cost_status: Literal["confirmed", "estimated", "unavailable"]
    cost_usd: Annotated[float, Field(ge=0)] | None


class AutoResolution(_Strict):
    org_maximum: Level
    resolved: Level


class Resume(_Strict):
    turns: Annotated[int, Field(ge=2)]
    effort_constant: bool
    changed_effort_refused: bool


class Isolation(_Strict):
    conversations: Annotated[int, Field(ge=2)]
    crossed_bindings: Annotated[int, Field(ge=0)]
    crossed_evidence_rows: Annotated[int, Field(ge=0)]


class NegativeCase(_Strict):
    outcome: Literal["failed-closed", "accepted"]
    reason: Annotated[str, Field(min_length=1)]


class Subject(_Strict):
    runtime_id: Annotated[str, Field(min_length=1)]
    runtime_version: Annotated[str, Field(min_length=1)]
    runtime_qualification_id: Annotated[str, Field(min_length=1)]
    route_id: Annotated[str, Field(min_length=1)]
    route_qualification_id: Annotated[str, Field(min_length=1)]


class QualificationEvidence(_Strict):
    schema_version: Literal[1]
    source_commit: Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")]
    subject: Subject
    proposed_levels: Annotated[list[Level], Field(min_length=1)]
    observations: list[Observation]
    auto_resolution: AutoResolution
    resume: Resume
    isolation: Isolation
    negative_cases: dict[str, NegativeCase]
    hidden_reasoning: dict[str, Literal["absent", "present"]]
    limitations: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]


def scan_credentials(text: str) -> list[str]:
    """Likely credentials in evidence ``text``: kind and JSON path (or line), never the text.

    A parsable document is walked (keys and values, repeated keys too); the raw text is
    scanned as well, and a hit the walk did not explain is reported by line.
    """
    found: list[str] = []
    try:
        hits = scan_json(load_pairs(text), _MENTIONS)
    except (ValueError, RecursionError):
        hits = []
    for h in hits:
        if h.in_key:
            found.append(f"likely credential ({h.kind}) in a key name at {format_path(h.path)}")
        else:
            found.append(f"likely credential ({h.kind}) at {format_path(h.path)}")
    if not hits:
        lines: dict[tuple[str, int], None] = {}
        line, pos = 1, 0
        for m in scan_text(text, _MENTIONS):  # sorted: count newlines once, forwards
            line += text.count("\n", pos, m.start)
            pos = m.start
            lines[(m.kind, line)] = None
        found.extend(f"likely credential ({kind}) on line {n}" for kind, n in lines)
    found = list(dict.fromkeys(found))
    if len(found) > _MAX_SHOWN:
        found[_MAX_SHOWN:] = [f"... and {len(found) - _MAX_SHOWN} more likely credentials"]
    return found


_PLAIN_NAME = re.compile(r"[a-z0-9][a-z0-9_\-]{0,39}")


def _name(name: str) -> str:
    """An unknown case or place name, shown only when it is a plain short name."""
    if _PLAIN_NAME.fullmatch(name) and not scan_text(name, _MENTIONS):
        return repr(name)
    return "(a name not shown)"


def repo_head(repo: Path) -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        raise ConfigError(f"{repo} is not a git repository with a commit") from None
    return out.stdout.strip()


def _checks(ev: QualificationEvidence, head: str) -> list[str]:
    problems = []
    if ev.source_commit != head:
        problems.append(f"source_commit {ev.source_commit} is not the repo HEAD {head}")
    if len(set(ev.proposed_levels)) != len(ev.proposed_levels):
        problems.append("proposed_levels repeats a level")
    by_level: dict[str, int] = {}
    for ob in ev.observations:
        by_level[ob.level] = by_level.get(ob.level, 0) + 1
        if not (ob.level == ob.requested == ob.resolved):
            problems.append(
                f"observation {ob.level}: requested {ob.requested} resolved {ob.resolved}"
            )
        if ob.usage_status == "reported" and ob.usage is None:
            problems.append(f"observation {ob.level}: usage reported but no figures")
        if ob.usage_status == "unavailable" and ob.usage is not None:
            problems.append(f"observation {ob.level}: usage unavailable but figures given")
        if (ob.cost_status == "unavailable") != (ob.cost_usd is None):
            problems.append(f"observation {ob.level}: cost_usd must be given iff cost is known")
    for lv in ev.proposed_levels:
        if by_level.get(lv, 0) != 1:
            problems.append(f"level {lv}: {by_level.get(lv, 0)} observations, expected exactly 1")
    for name in sorted(set(by_level) - set(ev.proposed_levels)):
        problems.append(f"observation for level {name} which is not proposed")
    if ev.auto_resolution.resolved != ev.auto_resolution.org_maximum:
        problems.append("Auto did not resolve to the organisation maximum")
    if not (ev.resume.effort_constant and ev.resume.changed_effort_refused):
        problems.append("resume: effort must stay constant and a change must be refused")
    if ev.isolation.crossed_bindings or ev.isolation.crossed_evidence_rows:
        problems.append("isolation: bindings or evidence rows crossed between conversations")
    for case in NEGATIVE_CASES:
        nc = ev.negative_cases.get(case)
        if nc is None:
            problems.append(f"negative case {case} is missing")
        elif nc.outcome != "failed-closed":
            problems.append(f"negative case {case} was {nc.outcome}, expected failed-closed")
    for extra in sorted(set(ev.negative_cases) - set(NEGATIVE_CASES)):
        problems.append(f"unknown negative case {_name(extra)}")
    for place in HIDDEN_PLACES:
        state = ev.hidden_reasoning.get(place)
        if state != "absent":
            problems.append(f"hidden reasoning in {place}: {state or 'not checked'}")
    for extra in sorted(set(ev.hidden_reasoning) - set(HIDDEN_PLACES)):
        problems.append(f"unknown hidden-reasoning place {_name(extra)}")
    return problems


def _refuse(problems: list[str]) -> EvidenceError:
    # A last guard: whatever a message was built from, no key-shaped text leaves.
    return EvidenceError([redact(p) for p in problems])


def validate_text(text: str, head: str) -> QualificationEvidence:
    """Validate evidence text against the commit ``head``; raise :class:`EvidenceError`."""
    leaks = scan_credentials(text)
    if leaks:
        raise _refuse(leaks)  # before the schema: nothing of the file is echoed
    try:
        ev = QualificationEvidence.model_validate_json(text)
    except ValidationError as exc:
        raise _refuse(
            [f"{format_path(p for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        ) from None
    problems = _checks(ev, head)
    if problems:
        raise _refuse(problems)
    return ev


def validate_file(path: Path, repo: Path) -> QualificationEvidence:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read evidence file {path}: {type(exc).__name__}") from None
    return validate_text(text, repo_head(repo))
