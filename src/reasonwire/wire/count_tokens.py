"""Token count endpoints, as data: where each dialect counts a request's input, what it takes
and where the count sits in the answer.

The consumption harness measures T (the tokens of a replayed trace) as the count of a request
with the carrier minus the count of the same request without it, where a dialect has such an
endpoint. Only ``wire/`` knows JSON shapes, so the path, the request fields the endpoint
accepts (a count endpoint refuses generation-only fields such as ``max_tokens`` or
``stream``) and the answer's count field live here.

Each dialect object holds its own :class:`CountSpec` (``Dialect.count``); Chat Completions
has none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reasonwire.errors import MalformedBody
from reasonwire.wire.jsonload import loads
from reasonwire.wire.model import JSON


@dataclass(frozen=True)
class CountSpec:
    """One dialect's count endpoint.

    ``path`` is below the route's base URL; ``{model}`` is replaced by the model id (Gemini
    puts the model in the path). ``keep`` names the request-body fields the endpoint accepts;
    every other field of a generation body is left out. ``result`` is the answer's count field.
    """

    path: str
    keep: frozenset[str]
    result: str


def count_path(spec: CountSpec, model: str) -> str:
    """The endpoint path for ``model`` (below the base URL)."""
    return spec.path.replace("{model}", model.removeprefix("models/"))


def count_body(spec: CountSpec, body: Mapping[str, JSON]) -> dict[str, JSON]:
    """The count request for a generation ``body``: the accepted fields, in their order."""
    return {k: v for k, v in body.items() if k in spec.keep}


def parse_count(spec: CountSpec, raw: bytes | str) -> int:
    """The count in an endpoint's answer; :class:`MalformedBody` when it has none."""
    try:
        data: JSON = loads(raw)
    except ValueError as exc:
        raise MalformedBody(f"count answer is not JSON: {exc}") from None
    value = data.get(spec.result) if isinstance(data, dict) else None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise MalformedBody(f"count answer has no integer {spec.result!r}")
    return value


__all__ = ["CountSpec", "count_body", "count_path", "parse_count"]
