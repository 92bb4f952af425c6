"""Render a chat template the way Hugging Face transformers does.

Why: vLLM, SGLang and transformers itself render open models' prompts with this environment,
and llama.cpp's own jinja engine follows it. A template's verdict is only worth citing if the
offline render matches what those servers feed the model, so the environment copies
transformers' documented choices: a sandboxed, immutable jinja2 environment with
``trim_blocks`` and ``lstrip_blocks``, the loop-controls extension, a ``tojson`` filter that
does not escape HTML and does not force ASCII (with ``indent``, ``separators`` and
``sort_keys``), the ``raise_exception`` and ``strftime_now`` globals, the
``{% generation %}`` block tag (rendered as its body; transformers uses it only to mark
assistant spans), and ``bos_token``/``eos_token`` plus any other keyword (``tools``,
``add_generation_prompt``, ``enable_thinking``, ``documents`` ...) as template variables.

:func:`render_llama_cpp_compat` is the second attempt the scan makes for templates written
for llama.cpp's own jinja engine, which is more permissive than transformers' sandbox: lists
are mutable (``ns.items.append(x)``) and ``tojson`` accepts the lazy results of ``map`` and
``select``. Rows rendered that way say so.

A template that raises gets a :class:`TemplateRenderError` carrying the template's own message
(``raise_exception`` text or the jinja2 error), never a bare traceback.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import lru_cache, partial
from io import StringIO
from pathlib import Path
from types import CodeType

from reasonwire._extras import as_missing_extra
from reasonwire.errors import TemplateRenderError, _RaisedByTemplate
from reasonwire.templates._compiled_store import CompiledStore
from reasonwire.wire.model import JSON, JsonObject

try:
    import jinja2
    import jinja2.ext
    import jinja2.nodes
    from jinja2.compiler import CodeGenerator
    from jinja2.meta import TrackingCodeGenerator
    from jinja2.parser import Parser
    from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment
except ModuleNotFoundError as _exc:  # one line naming the extra, not a bare ImportError
    raise as_missing_extra("templates", _exc) from None


def _raise_exception(message: str) -> None:
    raise _RaisedByTemplate(message)


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


def _tojson(
    value: object,
    ensure_ascii: bool = False,
    indent: int | str | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
    *,
    lazy: bool = False,
) -> str:
    """transformers' ``tojson`` filter; ``lazy`` (llama.cpp's permissive environment) first
    turns iterables that are not JSON (a ``dict.items()`` view...) into lists."""
    return json.dumps(
        _lazy_to_list(value) if lazy else value,
        ensure_ascii=ensure_ascii,
        indent=indent,
        separators=separators,
        sort_keys=sort_keys,
        default=_lazy_to_list if lazy else None,
    )


class _GenerationTag(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}``: renders its body unchanged."""

    tags = {"generation"}  # noqa: RUF012 - jinja2's Extension API declares it this way

    def parse(self, parser: Parser) -> jinja2.nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_body", [])
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _body(self, caller: Callable[[], object]) -> str:
        return str(caller())


def _lazy_to_list(value: object) -> JSON:
    if isinstance(value, (dict, list, str, int, float, bool)) or value is None:
        return value
    if isinstance(value, Iterable):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _environment(*, compat: bool) -> SandboxedEnvironment:
    cls = SandboxedEnvironment if compat else ImmutableSandboxedEnvironment
    env = cls(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_GenerationTag, jinja2.ext.loopcontrols],
    )
    env.filters["tojson"] = partial(_tojson, lazy=True) if compat else _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


_HF_ENV = _environment(compat=False)
_COMPAT_ENV = _environment(compat=True)
# this module configures both environments: its source is part of every stored entry's name
_STORE = CompiledStore(Path(__file__))


class _CodeAndVariables(TrackingCodeGenerator):
    """jinja2's code generator that also records the variables a template reads.

    Why: ``jinja2.meta.find_undeclared_variables`` is a whole code-generation pass that writes
    nothing (its ``TrackingCodeGenerator``), as costly as compiling; a scan needs both the code
    and the variables of every template. This generator keeps that frame hook and writes the
    code too, so one pass gives what the two gave: the same code as ``Environment.compile``
    (same tree, names and optimizer setting) and the same variables as ``jinja2.meta``."""

    write = CodeGenerator.write

    def __init__(self, environment: jinja2.Environment, out: StringIO) -> None:
        CodeGenerator.__init__(self, environment, None, None, out, optimized=environment.optimized)
        self.undeclared_identifiers = set()


@lru_cache(maxsize=512)
def _compiled(template: str, compat: bool) -> tuple[CodeType, frozenset[str]]:
    """The template's code and the variables it reads, from one parse and one generation
    pass (the variables are found on the tree as parsed, as ``jinja2.meta`` finds them)."""
    env = _COMPAT_ENV if compat else _HF_ENV
    try:
        tree = env.parse(template)
        out = StringIO()
        generator = _CodeAndVariables(env, out)
        try:
            generator.visit(tree)
        except jinja2.TemplateSyntaxError:
            env.handle_exception()  # as Environment.compile reports its own errors
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateRenderError(f"template syntax error (line {exc.lineno}): {exc}") from exc
    code = env._compile(out.getvalue(), "<template>")  # Environment.compile's step
    return code, frozenset(generator.undeclared_identifiers)


@lru_cache(maxsize=512)
def compile_template(template: str, *, compat: bool = False) -> jinja2.Template:
    """Compile once per template text (a scan renders each template dozens of times), and
    once across scans: the compiled code and the variables read are stored on disk
    (:mod:`._compiled_store`)."""
    env = _COMPAT_ENV if compat else _HF_ENV
    code = _STORE.load_code(template, compat)
    if code is None:
        code, variables = _compiled(template, compat)
        _STORE.save_code(template, compat, code)
        _STORE.save_variables(template, compat, variables)
    return env.template_class.from_code(env, code, env.make_globals(None))


@lru_cache(maxsize=512)
def variables_read(template: str) -> frozenset[str]:
    """The variables ``template`` reads that it does not set itself (``messages``, ``tools``,
    ``clear_thinking`` ...). Why: a server setting that reaches templates as a variable
    changes a verdict only where the template reads it; the report names those. Stored on
    disk with the compiled code."""
    stored = _STORE.load_variables(template, False)
    if stored is not None:
        return stored
    try:
        variables = _compiled(template, False)[1]
    except TemplateRenderError:
        return frozenset()
    _STORE.save_variables(template, False, variables)
    return variables


def render_chat_template(
    template: str,
    messages: list[JsonObject],
    tools: list[JsonObject] | None = None,
    add_generation_prompt: bool = True,
    **kwargs: JSON,
) -> str:
    """Render ``messages`` (OpenAI-style dicts) with ``template`` as transformers would.

    ``kwargs`` become template variables (``bos_token``, ``eos_token``, ``enable_thinking``,
    ...); ``bos_token`` and ``eos_token`` default to ``""`` so templates that reference them
    render. Raises :class:`TemplateRenderError` with the template's own message.
    """
    return _render(compile_template(template), messages, tools, add_generation_prompt, kwargs)


def render_llama_cpp_compat(
    template: str,
    messages: list[JsonObject],
    tools: list[JsonObject] | None = None,
    add_generation_prompt: bool = True,
    **kwargs: JSON,
) -> str:
    """Like :func:`render_chat_template`, in the permissive environment described above."""
    compiled = compile_template(template, compat=True)
    return _render(compiled, messages, tools, add_generation_prompt, kwargs)


def _render(
    compiled: jinja2.Template,
    messages: list[JsonObject],
    tools: list[JsonObject] | None,
    add_generation_prompt: bool,
    kwargs: JsonObject,
) -> str:
    variables: JsonObject = {"bos_token": "", "eos_token": ""}
    variables.update(kwargs)
    variables["messages"] = messages
    variables["tools"] = tools
    variables["add_generation_prompt"] = add_generation_prompt
    try:
        return compiled.render(**variables)
    except _RaisedByTemplate as exc:
        raise TemplateRenderError(str(exc)) from exc
    except jinja2.TemplateError as exc:
        raise TemplateRenderError(f"{type(exc).__name__}: {exc}") from exc
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        raise TemplateRenderError(f"{type(exc).__name__}: {exc}") from exc
    except RecursionError as exc:
        raise TemplateRenderError("template recursion too deep") from exc
