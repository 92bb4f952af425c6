"""Offline consumption scan: which chat templates render replayed reasoning, and when.

Why: on vLLM, SGLang and llama.cpp the chat template decides whether a replayed reasoning
field reaches the model. Rendering the harness fixture through each template and counting the
prompt with the model's own vocabulary answers "is ``reasoning_content`` consumed in the loop,
across turns, or dropped" for free, before any paid call.

Method (the harness's, offline): for every template, every variant of
:mod:`reasonwire.templates.fixture` is rendered at both positions; a field's delta is the
token count of its render minus the ``none`` render (every other byte identical). With ``T``
the token count of the trace itself, a delta ``>= ratio * T`` (``ratio`` 0.5 by default)
means consumed. Verdict per field:

- ``consumes-all-turns``: consumed in the loop and across turns;
- ``in-loop-only``: consumed in the loop, dropped once a new user message follows;
- ``cross-turn-only``: the reverse (no corpus template does this; kept so it is never
  mislabelled);
- ``accepted-ignored``: renders, but the delta stays below the threshold in both positions;
- ``error``: the template refused every documented message shape; ``error`` holds its message.

Shapes tried, in order, until the ``none`` render and the variant render both succeed (each
delta compares two renders of the same shape): tool-call arguments as an object (what vLLM
and llama.cpp pass to templates) or as the JSON string of the wire; ``content: null`` or
``""`` on the tool-call turn; the system message separate or merged into the first user
message; tool-call ids as on the wire or as 9 alphanumerics (Mistral's rule); the extra
documented kwargs ``functions``/``datetime`` (Firefunction); finally the same shapes in the
llama.cpp-compatible environment (:func:`render.render_llama_cpp_compat`).

``templates.json`` schema (stable; users script against it). A JSON list, one object per
(template, field), fields in the order ``reasoning_content, reasoning, reasoning_details,
thinking, all``::

    {
      "template": str,            # template file stem, e.g. "Qwen-Qwen3-0.6B"
      "field": str,               # one of the five fields above ("all" = every field at once)
      "verdict": str,             # one of the verdict words above
      "in_loop_delta": int|null,  # tokens(variant) - tokens(none), in_loop; null on error
      "cross_turn_delta": int|null,
      "tokenizer": str,           # "ggml-vocab-qwen2", "ggml-vocab-deepseek-llm (approx)",
                                  # "tokenizer.json", or "chars/4"
      "error": str|null,          # the template's own message when verdict == "error"
      # additional keys (may grow, never renamed):
      "tokenizer_exact": bool,    # the vocabulary is the model's own family
      "trace_tokens": int,        # T, the trace counted with the same tokenizer
      "threshold": int,           # ceil(ratio * T)
      "in_loop_canary": bool|null,    # the canary sentence appears in the render
      "cross_turn_canary": bool|null,
      "shape": str|null,          # the message shape that rendered, e.g. "args=object"
      "source": str               # file the template came from
    }
"""

from __future__ import annotations

import html
import itertools
import json
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from reasonwire.errors import ConfigError
from reasonwire.templates.fixture import FIELDS, POSITIONS, TOOLS, Fixture
from reasonwire.templates.render import (
    TemplateRenderError,
    render_chat_template,
    render_llama_cpp_compat,
)
from reasonwire.templates.tokenize import CharsPerToken, GGUFVocabTokenizer, TokenCounter

VERDICTS: Final = (
    "consumes-all-turns",
    "in-loop-only",
    "cross-turn-only",
    "accepted-ignored",
    "error",
)
DEFAULT_RATIO: Final = 0.5

# Template stem (lower-cased, searched) -> (GGUF vocabulary stem, exact family?). First match
# wins. "Exact" means the model ships that tokenizer; "approx" means the nearest vocabulary in
# the llama.cpp tree (e.g. DeepSeek V3's 129k vocabulary is not there; its V2 one is).
# Unlike reasonwire.localserver.model.vocab_for_template, which must always pick a vocabulary
# (a tiny model needs one), a template with no fitting vocabulary is counted as chars/4 here,
# and said so: a token count from an unrelated vocabulary would pass for a measurement.
VOCAB_MAP: Final[tuple[tuple[str, str, bool], ...]] = (
    (r"qwen3\.5", "ggml-vocab-qwen35", True),
    (r"distill-qwen", "ggml-vocab-qwen2", False),
    (r"qwen|qwq", "ggml-vocab-qwen2", True),
    (r"mimo", "ggml-vocab-qwen2", False),
    (r"meta-llama-llama-3", "ggml-vocab-llama-bpe", True),
    (
        r"distill-llama|hermes-.*llama-3|firefunction|functionary-medium-v3|smollm3",
        "ggml-vocab-llama-bpe",
        False,
    ),
    (r"deepseek", "ggml-vocab-deepseek-llm", False),
    (r"command-r-plus", "ggml-vocab-command-r", True),
    (r"command-r|cohere", "ggml-vocab-command-r", False),
    (r"phi-3", "ggml-vocab-phi-3", True),
)


@dataclass(frozen=True)
class TemplateSource:
    """One template to scan: its name, text, origin and (optionally) its own tokenizer."""

    name: str
    text: str
    origin: str
    tokenizer_json: Path | None = None
    bos_token: str | None = None
    eos_token: str | None = None


@dataclass
class Row:
    """One (template, field) result; :meth:`to_json` is the stable ``templates.json`` form."""

    template: str
    field: str
    verdict: str
    in_loop_delta: int | None
    cross_turn_delta: int | None
    tokenizer: str
    error: str | None
    tokenizer_exact: bool
    trace_tokens: int
    threshold: int
    in_loop_canary: bool | None
    cross_turn_canary: bool | None
    shape: str | None
    source: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Counter:
    """A token counter with the label the report shows."""

    label: str
    exact: bool
    counter: TokenCounter
    bos_token: str | None = None
    eos_token: str | None = None


# --- sources ---------------------------------------------------------------------------------


def corpus_sources() -> list[TemplateSource]:
    """The llama.cpp template corpus (the 71 ``.jinja`` files of the pinned sdist)."""
    from reasonwire.localserver.sdist import templates_dir

    return [_jinja_source(p) for p in sorted(templates_dir().glob("*.jinja"))]


def resolve_sources(specs: Sequence[str]) -> list[TemplateSource]:
    """Turn CLI arguments into templates; no argument means the llama.cpp corpus.

    Accepted: a ``.jinja`` file, a HF ``tokenizer_config.json``, a directory (a HF model
    directory, or a folder of ``.jinja`` files), or a model id in the local HF cache
    (``org/name``). Anything else is a :class:`ConfigError` naming the argument.
    """
    if not specs:
        return corpus_sources()
    out: list[TemplateSource] = []
    for spec in specs:
        path = Path(spec).expanduser()
        if path.is_file():
            out.extend(_file_sources(path))
        elif path.is_dir():
            out.extend(_dir_sources(path))
        elif re.fullmatch(r"[\w.-]+/[\w.-]+", spec):
            out.extend(_dir_sources(_hf_cache_snapshot(spec), name=spec.replace("/", "-")))
        else:
            raise ConfigError(f"{spec}: not a .jinja file, tokenizer_config.json, dir or model id")
    return out


def _jinja_source(path: Path, name: str | None = None) -> TemplateSource:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read template {path}: {exc}") from exc
    if name is None:
        name = path.parent.name if path.stem == "chat_template" else path.stem
    tok = path.parent / "tokenizer.json"
    return TemplateSource(name, text, str(path), tok if tok.is_file() else None)


def _file_sources(path: Path, name: str | None = None) -> list[TemplateSource]:
    if path.suffix != ".json":
        return [_jinja_source(path, name)]
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from exc
    base = name or (path.parent.name if path.name == "tokenizer_config.json" else path.stem)
    chat = cfg.get("chat_template") if isinstance(cfg, dict) else None
    named: list[tuple[str, str]] = []
    if isinstance(chat, str):
        named = [(base, chat)]
    elif isinstance(chat, list):
        for item in chat:
            if isinstance(item, dict) and isinstance(item.get("template"), str):
                sub = str(item.get("name", "default"))
                named.append((base if sub == "default" else f"{base}-{sub}", item["template"]))
    if not named:
        raise ConfigError(f"{path}: no chat_template in this file")
    tok = path.parent / "tokenizer.json"
    bos, eos = _special(cfg.get("bos_token")), _special(cfg.get("eos_token"))
    return [
        TemplateSource(n, t, str(path), tok if tok.is_file() else None, bos, eos) for n, t in named
    ]


def _special(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return str(value["content"])
    return None


def _dir_sources(path: Path, name: str | None = None) -> list[TemplateSource]:
    jinja = path / "chat_template.jinja"
    cfg = path / "tokenizer_config.json"
    if jinja.is_file():
        src = _jinja_source(jinja, name or path.name)
        if cfg.is_file():  # take bos/eos from the config when present
            try:
                data = json.loads(cfg.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                data = {}
            src = TemplateSource(
                src.name,
                src.text,
                src.origin,
                src.tokenizer_json,
                _special(data.get("bos_token")),
                _special(data.get("eos_token")),
            )
        return [src]
    if cfg.is_file():
        return _file_sources(cfg, name or path.name)
    files = sorted(path.glob("*.jinja"))
    if not files:
        raise ConfigError(f"{path}: no chat_template.jinja, tokenizer_config.json or .jinja")
    return [_jinja_source(p) for p in files]


def _hf_cache_snapshot(model_id: str) -> Path:
    roots = []
    if os.environ.get("HF_HUB_CACHE"):
        roots.append(Path(os.environ["HF_HUB_CACHE"]))
    if os.environ.get("HF_HOME"):
        roots.append(Path(os.environ["HF_HOME"]) / "hub")
    roots.append(Path.home() / ".cache" / "huggingface" / "hub")
    folder = "models--" + model_id.replace("/", "--")
    for root in roots:
        snaps = sorted(
            (root / folder / "snapshots").glob("*"), key=lambda p: p.stat().st_mtime, reverse=True
        )
        for snap in snaps:
            if (snap / "chat_template.jinja").is_file() or (
                snap / "tokenizer_config.json"
            ).is_file():
                return snap
    raise ConfigError(f"{model_id}: not in the local Hugging Face cache (looked in {roots[-1]})")


# --- tokenizers ------------------------------------------------------------------------------


class _TokenizerJSON:
    """A model's own ``tokenizer.json`` through HF tokenizers."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        try:
            self._tok = Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises a bare Exception on bad files
            raise ConfigError(f"cannot load {path}: {exc}") from exc
        self.name = "tokenizer.json"

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)


class CounterPool:
    """Loads each vocabulary once per scan and picks the fitting one for a template."""

    def __init__(self, vocab_dir: Path | None = None, *, force_chars: bool = False) -> None:
        self._vocab_dir = vocab_dir
        self._force_chars = force_chars
        self._cache: dict[str, Counter] = {}
        self._loaded: dict[str, GGUFVocabTokenizer | None] = {}

    def for_source(self, src: TemplateSource) -> Counter:
        if self._force_chars:
            return Counter("chars/4", False, CharsPerToken())
        if src.tokenizer_json is not None:
            key = str(src.tokenizer_json)
            if key not in self._cache:
                self._cache[key] = Counter(
                    "tokenizer.json",
                    True,
                    _TokenizerJSON(src.tokenizer_json),
                    src.bos_token,
                    src.eos_token,
                )
            return self._cache[key]
        lowered = src.name.lower()
        for pattern, stem, exact in VOCAB_MAP:
            if re.search(pattern, lowered):
                return self._vocab(stem, exact)
        return Counter("chars/4", False, CharsPerToken())

    def _vocab(self, stem: str, exact: bool) -> Counter:
        key = f"{stem}:{exact}"
        if key in self._cache:
            return self._cache[key]
        tok = self._load(stem)
        if tok is None:
            counter = Counter("chars/4", False, CharsPerToken())
        else:
            label = stem if exact else f"{stem} (approx)"
            counter = Counter(label, exact, tok, tok.bos_token, tok.eos_token)
        self._cache[key] = counter
        return counter

    def _load(self, stem: str) -> GGUFVocabTokenizer | None:
        if stem in self._loaded:
            return self._loaded[stem]
        vocab_dir = self._vocab_dir
        if vocab_dir is None:
            from reasonwire.localserver.sdist import vocab_dir as default_vocab_dir

            vocab_dir = default_vocab_dir()
        path = vocab_dir / f"{stem}.gguf"
        tok = GGUFVocabTokenizer.from_file(path) if path.is_file() else None
        self._loaded[stem] = tok
        return tok


# --- shapes ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """One documented way to present the same conversation to a template."""

    args_object: bool = True
    empty_content: bool = False
    merge_system: bool = False
    short_ids: bool = False
    extra_kwargs: bool = False
    compat: bool = False

    def label(self) -> str:
        parts = ["args=object" if self.args_object else "args=string"]
        if self.empty_content:
            parts.append("content=''")
        if self.merge_system:
            parts.append("system-in-user")
        if self.short_ids:
            parts.append("ids=9-alnum")
        if self.extra_kwargs:
            parts.append("kwargs=functions,datetime")
        if self.compat:
            parts.append("env=llama.cpp-compat")
        return ",".join(parts)


def _shapes() -> list[Shape]:
    out: list[Shape] = []
    for compat in (False, True):
        combos = [
            Shape(a, c, m, i, k, compat)
            for a, c, m, i, k in itertools.product(
                (True, False), (False, True), *([(False, True)] * 3)
            )
        ]
        # fewest changes from the wire form first, then the declared order of the dimensions
        combos.sort(
            key=lambda s: (
                (not s.args_object)
                + s.empty_content
                + s.merge_system
                + s.short_ids
                + s.extra_kwargs
            )
        )
        out.extend(combos)
    return out


SHAPES: Final = tuple(_shapes())
_SHORT_ID = "a1B2c3D4e"
_DATETIME = "09 Nov 2026"


def _apply_shape(messages: list[dict[str, Any]], shape: Shape) -> list[dict[str, Any]]:
    out = [dict(m) for m in messages]
    for msg in out:
        if msg.get("tool_calls"):
            calls = []
            for call in msg["tool_calls"]:
                call = dict(call)
                fn = dict(call["function"])
                if shape.args_object and isinstance(fn.get("arguments"), str):
                    fn["arguments"] = json.loads(fn["arguments"])
                call["function"] = fn
                if shape.short_ids:
                    call["id"] = _SHORT_ID
                calls.append(call)
            msg["tool_calls"] = calls
            if shape.empty_content and msg.get("content") is None:
                msg["content"] = ""
        if shape.short_ids and msg.get("role") == "tool":
            msg["tool_call_id"] = _SHORT_ID
    if shape.merge_system and out and out[0].get("role") == "system":
        system = out.pop(0)
        first_user = next((m for m in out if m.get("role") == "user"), None)
        if first_user is not None:
            first_user["content"] = f"{system['content']}\n\n{first_user['content']}"
    return out


# --- the scan --------------------------------------------------------------------------------


@dataclass
class ScanOptions:
    """Knobs of a scan; the report states them."""

    ratio: float = DEFAULT_RATIO
    seed: int | None = None
    enable_thinking: bool = True
    chars_only: bool = False
    extra_kwargs: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Render:
    text: str | None = None
    error: str | None = None


def _render(
    src: TemplateSource,
    messages: list[dict[str, Any]],
    shape: Shape,
    counter: Counter,
    opts: ScanOptions,
) -> _Render:
    kwargs: dict[str, Any] = {
        "bos_token": src.bos_token if src.bos_token is not None else counter.bos_token or "",
        "eos_token": src.eos_token if src.eos_token is not None else counter.eos_token or "",
        "enable_thinking": opts.enable_thinking,
    }
    if shape.extra_kwargs:
        kwargs["functions"] = json.dumps([t["function"] for t in TOOLS], indent=2)
        kwargs["datetime"] = _DATETIME
    kwargs.update(opts.extra_kwargs)
    fn = render_llama_cpp_compat if shape.compat else render_chat_template
    try:
        return _Render(text=fn(src.text, _apply_shape(messages, shape), TOOLS, True, **kwargs))
    except TemplateRenderError as exc:
        return _Render(error=str(exc) or type(exc).__name__)


def scan_template(
    src: TemplateSource, fixture: Fixture, counter: Counter, opts: ScanOptions | None = None
) -> list[Row]:
    """All field rows for one template (never raises for a template's own failure)."""
    opts = opts or ScanOptions()
    trace_tokens = counter.counter.count(fixture.trace)
    threshold = math.ceil(opts.ratio * trace_tokens)
    canary = f"The verification word for this task is {fixture.canary}."
    baselines: dict[tuple[Shape, str], _Render] = {}
    counts: dict[str, int] = {}

    def count(text: str) -> int:
        if text not in counts:
            counts[text] = counter.counter.count(text)
        return counts[text]

    def baseline(shape: Shape, position: str) -> _Render:
        key = (shape, position)
        if key not in baselines:
            baselines[key] = _render(src, fixture.messages("none", position), shape, counter, opts)
        return baselines[key]

    rows: list[Row] = []
    for fld in FIELDS:
        deltas: dict[str, int] = {}
        seen: dict[str, bool] = {}
        messages: list[str] = []
        used: Shape | None = None
        for shape in SHAPES:
            attempt: dict[str, tuple[int, bool]] = {}
            for position in POSITIONS:
                base = baseline(shape, position)
                if base.text is None:
                    messages.append(base.error or "render failed")
                    break
                got = _render(src, fixture.messages(fld, position), shape, counter, opts)
                if got.text is None:
                    messages.append(got.error or "render failed")
                    break
                attempt[position] = (count(got.text) - count(base.text), canary in got.text)
            if len(attempt) == len(POSITIONS):
                deltas = {p: d for p, (d, _) in attempt.items()}
                seen = {p: c for p, (_, c) in attempt.items()}
                used = shape
                break
        if used is None:
            rows.append(
                Row(
                    src.name,
                    fld,
                    "error",
                    None,
                    None,
                    counter.label,
                    _error_text(messages),
                    counter.exact,
                    trace_tokens,
                    threshold,
                    None,
                    None,
                    None,
                    src.origin,
                )
            )
            continue
        rows.append(
            Row(
                src.name,
                fld,
                verdict(deltas["in_loop"], deltas["cross_turn"], threshold),
                deltas["in_loop"],
                deltas["cross_turn"],
                counter.label,
                None,
                counter.exact,
                trace_tokens,
                threshold,
                seen["in_loop"],
                seen["cross_turn"],
                used.label(),
                src.origin,
            )
        )
    return rows


def _error_text(messages: list[str]) -> str:
    """The template's own messages, most frequent first (distinct, at most three)."""
    ranked = sorted(dict.fromkeys(messages), key=lambda m: -messages.count(m))
    return " | ".join(ranked[:3]) or "render failed"


def verdict(in_loop_delta: int, cross_turn_delta: int, threshold: int) -> str:
    """The harness's verdict words from two deltas and the consumption threshold."""
    in_loop, cross = in_loop_delta >= threshold, cross_turn_delta >= threshold
    if in_loop and cross:
        return "consumes-all-turns"
    if in_loop:
        return "in-loop-only"
    if cross:
        return "cross-turn-only"
    return "accepted-ignored"


@dataclass
class ScanResult:
    rows: list[Row]
    seconds: float
    options: ScanOptions
    fixture: Fixture

    def errors(self) -> list[str]:
        """Templates whose every field is an error."""
        by: dict[str, list[Row]] = {}
        for r in self.rows:
            by.setdefault(r.template, []).append(r)
        return [t for t, rs in by.items() if all(r.verdict == "error" for r in rs)]


def scan(
    sources: Iterable[TemplateSource] | None = None,
    opts: ScanOptions | None = None,
    *,
    vocab_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> ScanResult:
    """Scan templates (default: the llama.cpp corpus) and return one row per (template, field)."""
    opts = opts or ScanOptions()
    start = time.perf_counter()
    fixture = Fixture.from_seed() if opts.seed is None else Fixture.from_seed(opts.seed)
    pool = CounterPool(vocab_dir, force_chars=opts.chars_only)
    rows: list[Row] = []
    for src in corpus_sources() if sources is None else sources:
        if progress is not None:
            progress(src.name)
        rows.extend(scan_template(src, fixture, pool.for_source(src), opts))
    return ScanResult(rows, time.perf_counter() - start, opts, fixture)


# --- outputs ---------------------------------------------------------------------------------


def write_outputs(result: ScanResult, out_dir: Path) -> tuple[Path, Path]:
    """Write ``templates.json`` and ``templates.md`` into ``out_dir``."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        jpath, mpath = out_dir / "templates.json", out_dir / "templates.md"
        jpath.write_text(
            json.dumps([r.to_json() for r in result.rows], indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        mpath.write_text(markdown(result), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write scan output to {out_dir}: {exc}") from exc
    return jpath, mpath


def _grouped(rows: Sequence[Row]) -> list[tuple[str, dict[str, Row]]]:
    by: dict[str, dict[str, Row]] = {}
    for r in rows:
        by.setdefault(r.template, {})[r.field] = r
    return list(by.items())


def _cell(r: Row | None) -> str:
    if r is None:
        return ""
    if r.verdict == "error":
        return "error"
    return f"{r.verdict} ({r.in_loop_delta}/{r.cross_turn_delta})"


def markdown(result: ScanResult) -> str:
    """The human summary: one line per template, verdict and deltas (in_loop/cross_turn)."""
    opts, fx = result.options, result.fixture
    lines = [
        "# Chat-template consumption scan",
        "",
        f"Fixture seed {fx.seed}, trace {len(fx.trace)} chars; a field is consumed when its "
        f"token delta against `none` is >= {opts.ratio} x T (T = trace tokens with the same "
        f"tokenizer). enable_thinking={opts.enable_thinking}. Cells: verdict "
        "(in_loop delta / cross_turn delta).",
        "",
        "| template | tokenizer | T | " + " | ".join(FIELDS) + " |",
        "|---|---|---|" + "---|" * len(FIELDS),
    ]
    errors: list[str] = []
    for name, fields in _grouped(result.rows):
        any_row = next(iter(fields.values()))
        lines.append(
            f"| {name} | {any_row.tokenizer} | {any_row.trace_tokens} | "
            + " | ".join(_cell(fields.get(f)) for f in FIELDS)
            + " |"
        )
        errors.extend(
            f"- {name} / {f}: {r.error}" for f, r in fields.items() if r.verdict == "error"
        )
    if errors:
        lines += ["", "## Errors (the template's own message)", "", *errors]
    lines += ["", f"Scan time: {result.seconds:.1f} s.", ""]
    return "\n".join(lines)


_COLOURS: Final = {
    "consumes-all-turns": "#1b7f3b",
    "in-loop-only": "#b7791f",
    "cross-turn-only": "#6b46c1",
    "accepted-ignored": "#718096",
    "error": "#c53030",
}


def html_section(rows: Sequence[Row]) -> str:
    """A self-contained ``<section>`` (inline styles) for the HTML report."""
    esc = html.escape
    head = "".join(f"<th>{esc(f)}</th>" for f in FIELDS)
    body: list[str] = []
    for name, fields in _grouped(rows):
        any_row = next(iter(fields.values()))
        cells = []
        for f in FIELDS:
            r = fields.get(f)
            if r is None:
                cells.append("<td></td>")
                continue
            colour = _COLOURS.get(r.verdict, "#000")
            tip = (
                r.error
                if r.verdict == "error"
                else (
                    f"in_loop {r.in_loop_delta}, cross_turn {r.cross_turn_delta}, "
                    f"T {r.trace_tokens}"
                )
            )
            deltas = (
                ""
                if r.verdict == "error"
                else (f"<br><small>{r.in_loop_delta} / {r.cross_turn_delta}</small>")
            )
            cells.append(
                f'<td title="{esc(tip or "", quote=True)}" data-verdict="{esc(r.verdict)}">'
                f'<span style="color:#fff;background:{colour};padding:1px 5px;'
                f'border-radius:3px">{esc(r.verdict)}</span>{deltas}</td>'
            )
        body.append(
            f"<tr><td>{esc(name)}</td><td>{esc(any_row.tokenizer)}</td>"
            f"<td>{any_row.trace_tokens}</td>{''.join(cells)}</tr>"
        )
    return (
        '<section id="templates"><h2>Chat-template consumption (offline)</h2>'
        "<p>Token delta of each replayed field against no field, in the loop / across turns; "
        "consumed when the delta reaches half the trace's tokens.</p>"
        '<table class="templates"><thead><tr><th>template</th><th>tokenizer</th><th>T</th>'
        f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></section>"
    )
