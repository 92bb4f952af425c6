"""The qualification evidence validator.

An evidence file (JSON) proposes levels for one runtime adapter on one route and states what
was observed. The validator checks that it is complete and bound to the exact source commit:
a strict schema (unknown fields fail), the commit equal to ``git rev-parse HEAD`` of the repo,
one observation per proposed level with requested == resolved, Auto resolution, resume,
concurrent-conversation isolation, every negative case ``failed-closed``, hidden reasoning
absent everywhere it was looked for, usage ``reported``/``unavailable`` (a figure only when
reported, never a made-up zero), a cost status, stated limitations.

Before anything is parsed the raw text is scanned for likely credentials; a hit is refused
without echoing the match. Passing proves completeness and commit binding, not truth.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reasonwire.errors import ConfigError
from reasonwire.govern.levels import Level

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

_CREDENTIALS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("bearer token", re.compile(r"[Bb]earer\s+[A-Za-z0-9._~+/\-]{8,}")),
    ("sk- key", re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_\-]{8,}")),
    ("JWS-shaped token", re.compile(r"eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*")),
    ("api key mention", re.compile(r"api[\s_\-]?key", re.IGNORECASE)),
)


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
    """Kinds of likely credentials in ``text`` with line numbers; never the matched text."""
    found = []
    for kind, pattern in _CREDENTIALS:
        m = pattern.search(text)
        if m:
            found.append(
                f"likely credential ({kind}) on line {text.count(chr(10), 0, m.start()) + 1}"
            )
    return found


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
        problems.append(f"unknown negative case {extra!r}")
    for place in HIDDEN_PLACES:
        state = ev.hidden_reasoning.get(place)
        if state != "absent":
            problems.append(f"hidden reasoning in {place}: {state or 'not checked'}")
    for extra in sorted(set(ev.hidden_reasoning) - set(HIDDEN_PLACES)):
        problems.append(f"unknown hidden-reasoning place {extra!r}")
    return problems


def validate_text(text: str, head: str) -> QualificationEvidence:
    """Validate evidence text against the commit ``head``; raise :class:`EvidenceError`."""
    leaks = scan_credentials(text)
    if leaks:
        raise EvidenceError(leaks)  # before parsing: nothing of the file is echoed
    try:
        ev = QualificationEvidence.model_validate_json(text)
    except ValidationError as exc:
        raise EvidenceError(
            [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors()]
        ) from None
    problems = _checks(ev, head)
    if problems:
        raise EvidenceError(problems)
    return ev


def validate_file(path: Path, repo: Path) -> QualificationEvidence:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read evidence file {path}: {type(exc).__name__}") from None
    return validate_text(text, repo_head(repo))
