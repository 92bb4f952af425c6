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

Schema 2 (what ``reasonwire qualify collect`` writes from a gateway run's evidence rows) adds
what a bounded, attributable observation needs: every provider-reported usage unit (uncached
input, cache read, cache write, output, reasoning; ``null`` where the provider reported none),
each observation's latency under a stated bound, the call ids behind every claim, the
deployment id, the mapping id (a hash of what each level meant on the route's wire) and the
runtime's source pin. Given the registry and policy (``--policy``), the validator also checks
the subject against them: the exact runtime record and its pin, the route (registered, not
revoked, same qualification, same mapping), the proposed levels and the organisation maximum.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal, TypedDict, Unpack

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reasonwire.credentials import redact
from reasonwire.errors import ConfigError, EvidenceError
from reasonwire.govern.levels import LEVELS, Level
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import Registry, RouteRegistration
from reasonwire.secrets_scan import format_path, load_pairs, scan_json, scan_text
from reasonwire.wire.model import JSON, JsonObject

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
NEGATIVE_REASONS: Mapping[str, tuple[str, ...]] = {
    "tampered": ("binding-bad-signature",),
    "expired": ("binding-expired",),
    "alg-none": ("binding-bad-alg",),
    "wrong-key": ("binding-unknown-key",),
    "other-conversation": ("conversation-mismatch",),
    "stale-runtime-version": ("runtime-version-unknown",),
    "unsupported-route": ("route-unknown",),
    "provider-mismatch": ("provider-mismatch",),
    "over-policy-level": ("over-policy",),
    "route-revoked-after-projection": ("route-revoked",),
}
"""The gateway's refusal reasons that show each negative case failed closed."""
HIDDEN_PLACES = ("transcript", "activity", "logs", "artifacts")
DISCLAIMER = (
    "Passing proves the evidence is complete and bound to the source commit; "
    "it does not prove the observations are true."
)

# Not a credential shape but a sign that one may be near: evidence never needs to talk about
# API keys. Linear (one literal-ish run), so it rides along with the detector's patterns.
_MENTIONS = (("api key mention", re.compile(r"api[\s_\-]?key", re.IGNORECASE)),)

_GLUED = r"[A-Za-z0-9_\-]"
"""A key character: a prefix glued to one is inside a longer run (a carrier, an id), not a key."""


def _prefixed(prefix: str, body: str, least: int) -> re.Pattern[str]:
    """A literal ``prefix`` not glued to a key character, then at least ``least`` of
    ``body``: the detector's linear shape (a failed start costs its run once, the starts
    inside the run are refused by the look-behind in O(1))."""
    lit = re.escape(prefix)
    return re.compile(f"{lit}(?<!{_GLUED}{lit}){body}{{{least},}}")


PROVIDER_KEYS: tuple[tuple[str, str, str, str], ...] = (
    # (provider, how its keys open, who finds them, source)
    ("openai", "sk-, sk-proj-", "detector (sk- key)", "secrets_scan; platform.openai.com keys"),
    ("anthropic", "sk-ant-", "detector (sk- key)", "secrets_scan"),
    ("openrouter / nous", "sk-or-v1-", "detector (sk- key)", "secrets_scan"),
    ("deepseek, moonshot, dashscope", "sk-", "detector (sk- key)", "secrets_scan"),
    ("xai", "xai-", "detector (xai- key)", "secrets_scan"),
    ("gemini / google cloud", "AIza", "detector (Google API key)", "secrets_scan"),
    ("huggingface", "hf_", "detector (Hugging Face token)", "secrets_scan"),
    ("aws", "AKIA, ASIA", "detector (AWS access key id)", "secrets_scan"),
    ("github", "ghp_ gho_ ghu_ ghs_ ghr_ github_pat_", "detector (GitHub token)", "secrets_scan"),
    (
        "groq",
        "gsk_",
        "detector (Groq API key)",
        "skills.sh groq-security-basics: 'Groq API keys start with gsk_'",
    ),
    (
        "cerebras",
        "csk- (older csk_)",
        "detector (Cerebras API key)",
        "docs.rs redact-secret src/detectors/cerebras.rs (the provider's VS Code validator)",
    ),
    (
        "nvidia (build.nvidia.com)",
        "nvapi-",
        "detector (NVIDIA API key)",
        "docs.rs redact-secret src/detectors/nvidia.rs (NVIDIA docs, ngcsdk SCOPED_KEY_PREFIX)",
    ),
    (
        "replicate",
        "r8_",
        "detector (Replicate API token)",
        "replicate.com/docs/topics/security/api-tokens: '40-character strings ... start with r8_'",
    ),
    (
        "minimax",
        "eyJ (a JWT)",
        "detector (JWS-shaped token)",
        "the JWS shape covers any JWT; no provider statement found",
    ),
    (
        "mistral, zai (z.ai), fireworks, azure openai",
        "no documented prefix",
        "secret-named fields, Bearer values only",
        "none found (search, 2026-12); a bare key of theirs is not recognised",
    ),
)
"""Every provider of :mod:`reasonwire.routes` and the usual cloud ones: how their keys open
and what finds them: the shared detector (:mod:`reasonwire.secrets_scan`), so redaction and
this validator refuse the same keys."""

_RULES = _MENTIONS
MAX_DEPTH = 32
"""Deepest nesting of arrays and objects accepted (the schema needs 4). Past it the file is
refused before it is walked: a walk's paths cost their depth, so a bound keeps it linear."""
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*+"|(")|([\[{])|[\]}]')
"""A whole string (skipped), a quote that opens no whole string (the text ends inside it),
an opening or a closing bracket. Possessive: a string is read once."""
_MAX_SHOWN = 20  # findings listed; the rest are counted


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


_NonNeg = Annotated[int, Field(ge=0)]
_CallIds = Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]


class UsageUnits(_Strict):
    """Provider-reported units; ``None`` where the provider reported none (never a 0)."""

    input_uncached_tokens: _NonNeg | None
    cache_read_tokens: _NonNeg | None
    cache_write_tokens: _NonNeg | None
    output_tokens: _NonNeg | None
    reasoning_tokens: _NonNeg | None


class Latency(_Strict):
    total_ms: Annotated[float, Field(ge=0)]
    first_byte_ms: Annotated[float, Field(ge=0)] | None


class ObservationV2(_Strict):
    level: Level
    requested: Level
    resolved: Level
    evidence_call_ids: _CallIds
    stream: bool
    usage_status: Literal["reported", "unavailable"]
    usage: UsageUnits | None
    cost_status: Literal["confirmed", "estimated", "unavailable"]
    cost_usd: Annotated[float, Field(ge=0)] | None
    latency: Latency


class SubjectV2(Subject):
    runtime_source_tag: Annotated[str, Field(min_length=1)]
    runtime_source_commit: Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")]
    deployment_id: Annotated[str, Field(min_length=1)]
    mapping_id: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]


class AutoResolutionV2(AutoResolution):
    evidence_call_ids: _CallIds


class ResumeV2(Resume):
    evidence_call_ids: _CallIds


class IsolationV2(Isolation):
    evidence_call_ids: _CallIds


class NegativeCaseV2(NegativeCase):
    evidence_call_ids: _CallIds


class QualificationEvidenceV2(_Strict):
    schema_version: Literal[2]
    source_commit: Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")]
    subject: SubjectV2
    proposed_levels: Annotated[list[Level], Field(min_length=1)]
    latency_bound_ms: Annotated[float, Field(gt=0)]
    observations: list[ObservationV2]
    auto_resolution: AutoResolutionV2
    resume: ResumeV2
    isolation: IsolationV2
    negative_cases: dict[str, NegativeCaseV2]
    hidden_reasoning: dict[str, Literal["absent", "present"]]
    limitations: Annotated[list[Annotated[str, Field(min_length=1)]], Field(min_length=1)]


AnyEvidence = QualificationEvidence | QualificationEvidenceV2


def mapping_id(route: RouteRegistration) -> str:
    """What each level means on the route's wire, as one id: SHA-256 of the canonical JSON of
    the route id, dialect, model and the level fragments (sorted keys)."""
    doc: JsonObject = {
        "route_id": route.route_id,
        "dialect": route.dialect,
        "model": route.model,
        "levels": {lv: dict(route.levels[lv]) for lv in LEVELS if lv in route.levels},
    }
    digest = hashlib.sha256(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()
    return f"sha256:{digest}"


def scan_credentials(text: str) -> list[str]:
    """Likely credentials in evidence ``text``: kind and JSON path (or line), never the text.

    A parsable document is walked (keys and values, repeated keys too); the raw text is
    scanned as well, and a hit the walk did not explain is reported by line.
    """
    found: list[str] = []
    try:
        hits = scan_json(load_pairs(text), _RULES) if nesting(text) <= MAX_DEPTH else []
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
        for m in scan_text(text, _RULES):  # sorted: count newlines once, forwards
            line += text.count("\n", pos, m.start)
            pos = m.start
            lines[(m.kind, line)] = None
        found.extend(f"likely credential ({kind}) on line {n}" for kind, n in lines)
    found = list(dict.fromkeys(found))
    if len(found) > _MAX_SHOWN:
        found[_MAX_SHOWN:] = [f"... and {len(found) - _MAX_SHOWN} more likely credentials"]
    return found


def nesting(text: str) -> int:
    """How deep arrays and objects nest in JSON ``text`` (strings skipped), in linear time:
    one pass of tokens, each string read once."""
    depth = deepest = 0
    for m in _TOKEN.finditer(text):
        lone, opening = m.groups()
        if lone is not None:
            break  # an unterminated string runs to the end: nothing after it nests
        if opening is not None:
            depth += 1
            deepest = max(deepest, depth)
        elif m.end() - m.start() == 1:
            depth -= 1
    return deepest


class _Members(list[tuple[str, JSON]]):
    """A JSON object as its members, in order, with the names it repeats."""

    repeated: list[str]


def _members(pairs: list[tuple[str, JSON]]) -> _Members:
    obj = _Members(pairs)
    seen: set[str] = set()
    obj.repeated = [k for k, _ in pairs if k in seen or seen.add(k)]  # type: ignore[func-returns-value]
    return obj


def duplicate_keys(text: str) -> list[str]:
    """Every object member whose name its object already has, anywhere in the document (as
    JSON decodes names: ``"a"`` and ``"\\u0061"`` are the same). A parser keeps one of them
    (orjson and pydantic the last), so a repeated ``outcome`` could hide ``failed-closed``
    behind ``accepted``: refused, never decided. Names are shown only when plain."""
    try:
        doc = json.loads(text, object_pairs_hook=_members)
    except (ValueError, RecursionError):
        return []  # not JSON: the schema's parser names the problem
    found: list[str] = []
    stack: list[tuple[tuple[str | int, ...], JSON]] = [((), doc)]
    while stack:  # depth is bounded (MAX_DEPTH), so each path costs O(1)
        path, node = stack.pop()
        if isinstance(node, _Members):
            found.extend(
                f"duplicate key {_name(k)} in {format_path(path)}"
                for k in dict.fromkeys(node.repeated)
            )
            stack.extend(((*path, k), v) for k, v in reversed(node))
        elif isinstance(node, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(node))))
    return found


_PLAIN_NAME = re.compile(r"[a-z0-9][a-z0-9_\-]{0,39}")


def _name(name: str) -> str:
    """An unknown case or place name, shown only when it is a plain short name."""
    if _PLAIN_NAME.fullmatch(name) and not scan_text(name, _RULES):
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


def _checks(ev: AnyEvidence, head: str) -> list[str]:
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
        if ob.usage_status == "reported" and (
            ob.usage is None
            or (
                isinstance(ob.usage, UsageUnits)
                and all(v is None for v in ob.usage.model_dump().values())
            )
        ):
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
    if isinstance(ev, QualificationEvidenceV2):
        problems += _checks_v2(ev)
    return problems


def _checks_v2(ev: QualificationEvidenceV2) -> list[str]:
    problems = []
    seen: dict[str, str] = {}
    for ob in ev.observations:
        if ob.latency.total_ms > ev.latency_bound_ms:
            problems.append(
                f"observation {ob.level}: latency {ob.latency.total_ms:.0f} ms is over the "
                f"bound {ev.latency_bound_ms:.0f} ms"
            )
        for cid in ob.evidence_call_ids:
            if cid in seen and seen[cid] != ob.level:
                problems.append(
                    f"observations {seen[cid]} and {ob.level} cite the same call {_name(cid)}"
                )
            seen.setdefault(cid, ob.level)
    for case, nc in ev.negative_cases.items():
        allowed = NEGATIVE_REASONS.get(case)
        if allowed is not None and nc.reason not in allowed:
            problems.append(
                f"negative case {case}: reason {_name(nc.reason)} does not show it "
                f"(expected {', '.join(allowed)})"
            )
    return problems


def registry_checks(ev: AnyEvidence, registry: Registry, policy: OrgPolicy) -> list[str]:
    """The subject against the registry and policy: exact runtime record (and its pin for
    schema 2), the route (registered, not revoked, same qualification and mapping), the
    proposed levels, the organisation maximum."""
    problems = []
    s = ev.subject
    adapter = next(
        (
            a
            for a in registry.adapters
            if a.runtime_id == s.runtime_id and a.version == s.runtime_version
        ),
        None,
    )
    if adapter is None:
        problems.append(f"runtime {s.runtime_id} {s.runtime_version} has no adapter record")
    else:
        if adapter.qualification_id and adapter.qualification_id != s.runtime_qualification_id:
            problems.append(
                f"runtime qualification {s.runtime_qualification_id} is not the registry's "
                f"{adapter.qualification_id}"
            )
        missing = [lv for lv in ev.proposed_levels if lv not in adapter.levels]
        if missing:
            problems.append(f"runtime adapter does not offer {', '.join(missing)}")
        if isinstance(s, SubjectV2):
            pin = adapter.pin
            if pin is None:
                problems.append(f"runtime {s.runtime_id} {s.runtime_version} has no pin")
            elif (pin.source_tag, pin.source_commit) != (
                s.runtime_source_tag,
                s.runtime_source_commit,
            ):
                problems.append(
                    f"runtime source {s.runtime_source_tag} {s.runtime_source_commit} is not "
                    f"the pinned {pin.source_tag} {pin.source_commit}"
                )
    route = registry.routes.get(s.route_id)
    if route is None:
        problems.append(f"route {s.route_id} is not registered")
    else:
        if route.revoked:
            problems.append(f"route {s.route_id} is revoked")
        if route.qualification_id != s.route_qualification_id:
            problems.append(
                f"route qualification {s.route_qualification_id} is not the registry's "
                f"{route.qualification_id}"
            )
        missing = [lv for lv in ev.proposed_levels if lv not in route.levels]
        if missing:
            problems.append(f"route {s.route_id} does not qualify {', '.join(missing)}")
        if isinstance(s, SubjectV2) and s.mapping_id != mapping_id(route):
            problems.append(
                f"mapping {s.mapping_id} is not the registry's {mapping_id(route)} for "
                f"{s.route_id}: the levels meant something else on the wire"
            )
    if ev.auto_resolution.org_maximum != policy.maximum:
        problems.append(
            f"auto_resolution.org_maximum {ev.auto_resolution.org_maximum} is not the policy's "
            f"{policy.maximum}"
        )
    return problems


def _refuse(problems: list[str]) -> EvidenceError:
    # A last guard: whatever a message was built from, no key-shaped text leaves.
    return EvidenceError([redact(p) for p in problems])


def _schema_of(text: str) -> type[QualificationEvidence] | type[QualificationEvidenceV2]:
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        return QualificationEvidence  # its parser names the problem
    if isinstance(doc, dict) and doc.get("schema_version") == 2:
        return QualificationEvidenceV2
    return QualificationEvidence


class Against(TypedDict, total=False):
    """What evidence is checked against besides the commit, as the keywords of
    :func:`validate_text` and :func:`validate_file` (one declaration for both): the subject's
    registry records and the org policy. The checks run only given both."""

    registry: Registry | None
    policy: OrgPolicy | None


def validate_text(text: str, head: str, **against: Unpack[Against]) -> AnyEvidence:
    """Validate evidence text against the commit ``head`` (and, given both, the registry and
    policy); raise :class:`EvidenceError` with every problem."""
    registry, policy = against.get("registry"), against.get("policy")
    leaks = scan_credentials(text)
    if leaks:
        raise _refuse(leaks)  # before the schema: nothing of the file is echoed
    depth = nesting(text)
    if depth > MAX_DEPTH:
        raise _refuse([f"(root): nested {depth} deep, more than {MAX_DEPTH}"])
    repeated = duplicate_keys(text)
    if repeated:
        raise _refuse(repeated)
    try:
        ev: AnyEvidence = _schema_of(text).model_validate_json(text)
    except ValidationError as exc:
        raise _refuse(
            [f"{format_path(p for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        ) from None
    problems = _checks(ev, head)
    if registry is not None and policy is not None:
        problems += registry_checks(ev, registry, policy)
    if problems:
        raise _refuse(problems)
    return ev


def validate_file(path: Path, repo: Path, **against: Unpack[Against]) -> AnyEvidence:
    """:func:`validate_text` on the file at ``path`` against the head of ``repo``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read evidence file {path}: {type(exc).__name__}") from None
    return validate_text(text, repo_head(repo), **against)
