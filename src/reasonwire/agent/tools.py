"""Tools the agent can call: a Python callable plus the :class:`ToolSpec` the model sees.

The schema is derived from the callable's signature (type hints and defaults) when no spec is
given, so the usual case is one decorator. Arguments arrive as the JSON text the model sent;
a tool's return value goes back as text (a ``str`` as is, anything else as compact JSON).
A tool that raises does not end the loop: the model gets ``error: <Type>: <message>`` as the
result, because the model can often recover (retry with other arguments) and the wire state
must stay paired (every call needs a result).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import types
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Union

from reasonwire.errors import ConfigError
from reasonwire.wire.model import JSON, ToolCall, ToolResult, ToolSpec

_SCALARS: Mapping[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
}


def _schema_for(annotation: Any) -> dict[str, JSON]:
    """A JSON schema for a (simple) Python annotation; unknown types accept anything."""
    if annotation in _SCALARS:
        return {"type": _SCALARS[annotation]}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (list, tuple, set, frozenset):
        item = _schema_for(args[0]) if args else {}
        return {"type": "array", "items": item}
    if origin in (dict, Mapping):
        return {"type": "object"}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return _schema_for(rest[0])
        return {"anyOf": [_schema_for(a) for a in rest]}
    return {}


def spec_from_callable(fn: Callable[..., Any], name: str | None = None) -> ToolSpec:
    """A :class:`ToolSpec` from ``fn``: its name, first docstring paragraph and parameters."""
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn)
    props: dict[str, JSON] = {}
    required: list[str] = []
    for pname, param in sig.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        props[pname] = _schema_for(hints.get(pname, Any))
        if param.default is inspect.Parameter.empty:
            required.append(pname)
    schema: dict[str, JSON] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    doc = inspect.getdoc(fn) or ""
    description = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    return ToolSpec(name=name or fn.__name__, description=description, parameters=schema)


@dataclass(frozen=True)
class Tool:
    """A callable and the spec the model sees. ``fn`` may be sync or ``async``."""

    fn: Callable[..., Any]
    spec: ToolSpec

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)


def tool(
    fn: Callable[..., Any] | None = None, *, name: str | None = None, spec: ToolSpec | None = None
) -> Any:
    """Decorator (``@tool`` or ``@tool(name=...)``) turning a callable into a :class:`Tool`."""

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool(f, spec or spec_from_callable(f, name))

    return wrap(fn) if fn is not None else wrap


def as_tools(tools: Any) -> dict[str, Tool]:
    """Normalise ``tools`` (Tools, plain callables or ``(callable, ToolSpec)`` pairs) by name."""
    out: dict[str, Tool] = {}
    for t in tools or ():
        if isinstance(t, Tool):
            item = t
        elif isinstance(t, tuple) and len(t) == 2 and isinstance(t[1], ToolSpec):
            item = Tool(t[0], t[1])
        elif callable(t):
            item = Tool(t, spec_from_callable(t))
        else:
            raise ConfigError(
                f"not a tool: {t!r} (give a callable, a Tool or (callable, ToolSpec))"
            )
        if item.name in out:
            raise ConfigError(f"two tools are called {item.name!r}")
        out[item.name] = item
    return out


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _bad(call: ToolCall, exc: BaseException) -> ToolResult:
    return ToolResult(call.id, call.name, f"error: {type(exc).__name__}: {exc}")


def _arguments(call: ToolCall) -> dict[str, Any]:
    args = call.parsed_arguments()
    if not isinstance(args, dict):
        raise TypeError(f"arguments must be a JSON object, got {type(args).__name__}")
    return args


def run_call(tools: Mapping[str, Tool], call: ToolCall) -> ToolResult:
    """Execute one call synchronously (an async tool runs in its own event loop)."""
    t = tools.get(call.name)
    if t is None:
        return ToolResult(call.id, call.name, f"error: unknown tool {call.name!r}")
    try:
        value = t.fn(**_arguments(call))
        if inspect.isawaitable(value):
            value = asyncio.run(_await(value))
    except Exception as exc:  # a failure goes to the model as text
        return _bad(call, exc)
    return ToolResult(call.id, call.name, _render(value))


async def _await(value: Awaitable[Any]) -> Any:
    return await value


async def arun_call(tools: Mapping[str, Tool], call: ToolCall) -> ToolResult:
    """Execute one call in the running loop (a sync tool runs in a worker thread)."""
    t = tools.get(call.name)
    if t is None:
        return ToolResult(call.id, call.name, f"error: unknown tool {call.name!r}")
    try:
        args = _arguments(call)
        if t.is_async:
            value = await t.fn(**args)
        else:
            value = await asyncio.to_thread(t.fn, **args)
            if inspect.isawaitable(value):
                value = await value
    except Exception as exc:
        return _bad(call, exc)
    return ToolResult(call.id, call.name, _render(value))


__all__ = ["Tool", "arun_call", "as_tools", "run_call", "spec_from_callable", "tool"]
