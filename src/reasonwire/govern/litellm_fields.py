"""What of a LiteLLM proxy's request a governed call reads, refuses or masks: the fields and
headers by which a client would pick its own routing (refused), where LiteLLM keeps the client's
headers and metadata, and the call id that ties LiteLLM's events to one governed call. Kept
apart from :mod:`reasonwire.govern.litellm_governor` (the rules) because these names follow
LiteLLM's own request layout (``litellm_pre_call_utils``), which changes with LiteLLM releases."""

from __future__ import annotations

from collections.abc import Mapping

from reasonwire.govern.binding import HEADER
from reasonwire.wire.model import JSON

CALL_ID_KEY = "reasonwire_call_id"
"""The key under the request's LiteLLM metadata that ties LiteLLM's events to our call."""
ROUTING_FIELDS = frozenset(
    {
        "fallbacks",
        "context_window_fallbacks",
        "content_policy_fallbacks",
        "num_retries",
        "max_retries",
        "retry_policy",
        "model_list",
        "models",
        "model_info",
        "deployment_id",
        "api_base",
        "base_url",
        "api_key",
        "api_version",
        "organization",
        "custom_llm_provider",
        "region_name",
        "extra_headers",
        "headers",
        "metadata",
        "litellm_metadata",
        "user_config",
        "tags",
        "timeout",
        "stream_timeout",
        "keepalive_seconds",
        "request_timeout",
        "priority",
    }
)
"""Request fields LiteLLM reads as routing, retry or transport settings (its Router, its
``completion`` kwargs, its clientside auth params), or as routing metadata (``metadata``:
LiteLLM's own key, though OpenAI's API has a field of that name). A client sending one is
refused: the route's own settings are the only ones. Names starting ``litellm_`` or ``mock_``
(LiteLLM's internal and test switches) are refused alike."""
ROUTING_PREFIXES = ("litellm_", "mock_")
ROUTING_HEADERS = frozenset(
    {
        "x-litellm-num-retries",
        "x-litellm-timeout",
        "x-litellm-stream-timeout",
        "x-litellm-keepalive-seconds",
        "x-litellm-tags",
    }
)
"""Client headers LiteLLM's proxy turns into the same settings (``litellm_pre_call_utils``)."""
_LITELLM_OWN = frozenset(
    {"proxy_server_request", "secret_fields", "litellm_call_id", "litellm_logging_obj"}
)
PROXY_REQUESTER_KEYS = frozenset({"headers", "used_client_oauth_token"})
"""What LiteLLM's proxy itself puts in ``requester_metadata`` (its copy of the request's
``metadata`` before its own keys): anything else there came from the client."""
_MASK = "[verified by reasonwire]"
"""What replaces a verified binding in LiteLLM's logged copies of the headers."""


def request_headers(data: Mapping[str, JSON]) -> dict[str, str]:
    """The client's request headers as LiteLLM passed them to the hook (lower-cased)."""
    for where in (data.get("proxy_server_request"), data.get("metadata")):
        if isinstance(where, Mapping) and isinstance(where.get("headers"), Mapping):
            return {str(k).lower(): str(v) for k, v in where["headers"].items()}
    return {}


def mask_binding(data: Mapping[str, JSON]) -> None:
    """Replace the binding in LiteLLM's logged copies of the headers (its spend logs and
    callbacks see them): a verified binding has no use downstream."""
    meta = data.get("metadata")
    asked = meta.get("requester_metadata") if isinstance(meta, Mapping) else None
    for where in (data.get("proxy_server_request"), meta, asked, data):
        holder = where.get("headers") if isinstance(where, Mapping) else None
        if isinstance(holder, dict):
            for k in list(holder):
                if str(k).lower() == HEADER:
                    holder[k] = _MASK


def litellm_metadata(data: Mapping[str, JSON]) -> Mapping[str, JSON]:
    for name in ("metadata", "litellm_metadata"):
        meta = data.get(name)
        if isinstance(meta, Mapping):
            return meta
    params = data.get("litellm_params")
    meta = params.get("metadata") if isinstance(params, Mapping) else None
    return meta if isinstance(meta, Mapping) else {}


def client_keys(data: Mapping[str, JSON]) -> set[str]:
    """The fields of ``data`` that came from the client: LiteLLM's snapshot of the request
    body (``proxy_server_request.body``, header-derived settings included), else every field
    but LiteLLM's own."""
    psr = data.get("proxy_server_request")
    body = psr.get("body") if isinstance(psr, Mapping) else None
    keys = set(body) if isinstance(body, Mapping) else set(data) - _LITELLM_OWN
    keys.discard("metadata")  # LiteLLM's own dict; the client's part is checked apart
    return keys


def plain_name(name: str) -> str:
    return name if name.isascii() and name.replace("_", "").replace("-", "").isalnum() else "?"


def response_json(response: object) -> JSON:
    """A LiteLLM response object as the JSON it would send (or the dict as given)."""
    if isinstance(response, Mapping):
        return dict(response)
    dump = getattr(response, "model_dump", None)
    if callable(dump):
        try:
            return dump(exclude_none=True)
        except TypeError:
            return dump()
    return None
