"""The LiteLLM proxy callback around :class:`~reasonwire.govern.litellm_governor.Governor`
(the governed call's rules, without LiteLLM), and the checks that the proxy it runs in keeps
the gateway's promise.

Settings the hook requires (checked when it is made from the proxy's config; it refuses to
start without them, :func:`check_proxy_config`):

- ``litellm_settings.callbacks: reasonwire.govern.litellm_hook.proxy_handler``;
- ``REASONWIRE_POLICY`` (module defining ``REGISTRY`` and ``POLICY``), ``REASONWIRE_KEYS``
  (keys directory; public keys suffice) and ``REASONWIRE_EVIDENCE`` (SQLite path or
  ``postgresql://`` URL) in the proxy's environment; ``REASONWIRE_VAULT`` (the same kinds of
  target) when several proxy workers or replicas serve one conversation (default: in memory,
  one process);
- the LiteLLM model name of each governed deployment is the route's model;
- ``general_settings.forward_client_headers_to_llm_api`` not true and no
  ``model_group_settings.forward_client_headers_to_llm_api`` (client headers, the binding
  among them, would reach the upstream);
- no ``general_settings.allow_client_side_credentials`` and no
  ``configurable_clientside_auth_params`` on a governed deployment (a client could pick its
  own ``api_base`` or key; LiteLLM then refuses such a body itself, before the hook, and the
  hook records that refusal).

The LiteLLM class (a ``CustomLogger``) is made at run time from the installed LiteLLM
(:func:`hook_class`), so this module imports without it. Chat completions only.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from typing import Any, Protocol

from reasonwire.errors import ConfigError, HookRefused
from reasonwire.govern.binding import KeyRing
from reasonwire.govern.litellm_fields import CALL_ID_KEY, ROUTING_FIELDS, ROUTING_HEADERS
from reasonwire.govern.litellm_governor import Governor
from reasonwire.govern.policy import OrgPolicy
from reasonwire.govern.registry import Registry
from reasonwire.wire.model import JSON, JsonObject

__all__ = [
    "CALL_ID_KEY",
    "ROUTING_FIELDS",
    "ROUTING_HEADERS",
    "Governor",
    "check_proxy_config",
    "from_env",
    "hook_class",
]


def _error_detail(governor: Governor, status: int, reason: str, message: str) -> JSON:
    return governor.dialect.error_body(status, reason, message, None)


def _with_cost(answer: JSON, response: object) -> JSON:
    """The projected answer, carrying LiteLLM's own cost figure for the response it replaces
    (in ``_hidden_params``, which LiteLLM's proxy reads from a dict answer and removes before
    sending it). Why: without it the proxy recomputes the cost from the dict on every call
    (its ``_response_cost_from_logging_obj``, ~4% of the hooked proxy's event loop under wrk
    for a model whose cost is 0). Only the cost crosses: the response's other hidden params
    (``api_base``, relayed headers) never reach the answer."""
    hidden = getattr(response, "_hidden_params", None)
    if not isinstance(answer, dict) or not isinstance(hidden, Mapping):
        return answer
    cost = hidden.get("response_cost")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        answer["_hidden_params"] = {"response_cost": cost}
    return answer


class _Hook(Protocol):
    """What the hook's methods use of the LiteLLM ``CustomLogger`` they are bound to."""

    governor: Governor


def hook_class() -> type:
    """The LiteLLM ``CustomLogger`` subclass around a :class:`Governor` (needs LiteLLM and
    FastAPI, which the proxy has)."""
    base: type = importlib.import_module("litellm.integrations.custom_logger").CustomLogger
    http_exception: Any = importlib.import_module("fastapi").HTTPException

    def http_error(status: int, detail: JSON, headers: dict[str, str] | None = None) -> Exception:
        error: Exception = http_exception(status_code=status, detail=detail, headers=headers)
        return error

    def refusal(exc: HookRefused) -> Exception:
        """The hook's refusal as the HTTP error LiteLLM answers with."""
        detail = {"error": {"code": exc.reason, "message": exc.message}}
        return http_error(exc.status, detail, exc.headers)

    def __init__(self: _Hook, governor: Governor) -> None:
        base.__init__(self)  # type: ignore[misc]
        self.governor = governor

    async def async_pre_call_hook(
        self: _Hook, user_api_key_dict: object, cache: object, data: JsonObject, call_type: object
    ) -> JsonObject:
        try:
            return await self.governor.apre_call(data, str(call_type))
        except HookRefused as exc:
            raise refusal(exc) from None

    async def async_pre_call_deployment_hook(
        self: _Hook, kwargs: JsonObject, call_type: object
    ) -> JsonObject:
        try:
            return await self.governor.aattempt_start(kwargs)
        except HookRefused as exc:
            raise refusal(exc) from None

    async def async_post_call_failure_deployment_hook(
        self: _Hook,
        request_data: JsonObject,
        exception: BaseException,
        call_type: object,
        fallback_depth: object = None,
    ) -> None:
        self.governor.attempt_failed(request_data, exception)

    async def async_post_call_success_deployment_hook(
        self: _Hook, request_data: JsonObject, response: object, call_type: object
    ) -> None:
        self.governor.attempt_answered(request_data, response)
        return None

    async def async_post_call_success_hook(
        self: _Hook, data: JsonObject, user_api_key_dict: object, response: object
    ) -> JSON:
        return _with_cost(self.governor.answer(data, response), response)

    async def async_post_call_streaming_iterator_hook(
        self: _Hook,
        user_api_key_dict: object,
        response: AsyncIterable[object],
        request_data: JsonObject,
    ) -> AsyncIterator[object]:
        async for item in self.governor.relay(request_data, response):
            yield item

    async def async_post_call_response_headers_hook(
        self: _Hook,
        data: JsonObject,
        user_api_key_dict: object,
        response: object,
        request_headers: object = None,
        litellm_call_info: object = None,
    ) -> None:
        self.governor.drop_relayed_headers(response)
        return None

    async def async_post_call_failure_hook(
        self: _Hook,
        request_data: JsonObject,
        original_exception: BaseException,
        user_api_key_dict: object,
        traceback_str: object = None,
    ) -> Exception | None:
        if isinstance(original_exception, http_exception):
            return None  # the hook's own refusal, already in its words
        if not self.governor.failed(request_data, original_exception):
            # Refused by LiteLLM before the hook (nothing went upstream). An error with a
            # status is LiteLLM's own answer; one without (its body checks raise a bare
            # ValueError, which LiteLLM itself then fails to map) is a 400 in the hook's words.
            if isinstance(getattr(original_exception, "status_code", None), int):
                return None
            return http_error(
                400,
                {
                    "error": {
                        "code": "litellm-refused",
                        "message": "LiteLLM refused the request before reasonwire's hook "
                        "(a client credential, endpoint or model list)",
                    }
                },
            )
        code = getattr(original_exception, "status_code", None)
        status = code if isinstance(code, int) and 400 <= code <= 599 else 502
        message = f"the upstream answered {status}"
        return http_error(
            status,
            {"error": _error_detail(self.governor, status, "upstream-error", message)["error"]},
        )

    return type(
        "ReasonwireLiteLLMHook",
        (base,),
        {
            "__init__": __init__,
            "__doc__": "reasonwire's governed effort as a LiteLLM proxy callback.",
            "async_pre_call_hook": async_pre_call_hook,
            "async_pre_call_deployment_hook": async_pre_call_deployment_hook,
            "async_post_call_failure_deployment_hook": async_post_call_failure_deployment_hook,
            "async_post_call_success_deployment_hook": async_post_call_success_deployment_hook,
            "async_post_call_success_hook": async_post_call_success_hook,
            "async_post_call_streaming_iterator_hook": async_post_call_streaming_iterator_hook,
            "async_post_call_response_headers_hook": async_post_call_response_headers_hook,
            "async_post_call_failure_hook": async_post_call_failure_hook,
        },
    )


def _load_policy(module: str) -> tuple[Registry, OrgPolicy]:
    """``REGISTRY`` and ``POLICY`` of ``module`` (as ``gateway serve --policy``; the proxy's
    venv has no typer, so not through the CLI module)."""
    try:
        mod = importlib.import_module(module)
    except Exception as exc:  # the module is code: any failure at import
        raise ConfigError(f"cannot import policy module {module!r}: {type(exc).__name__}") from None
    registry, policy = getattr(mod, "REGISTRY", None), getattr(mod, "POLICY", None)
    if not isinstance(registry, Registry) or not isinstance(policy, OrgPolicy):
        raise ConfigError(f"{module} must define REGISTRY (Registry) and POLICY (OrgPolicy)")
    return registry, policy


def check_proxy_config(config: Mapping[str, JSON], registry: Registry) -> list[str]:
    """What in a LiteLLM proxy config breaks the hook's promise (empty: nothing). Read from
    the config the proxy loaded (``general_settings`` are applied after the callbacks are
    made, so the file, not LiteLLM's state, is what can be checked at start)."""
    problems: list[str] = []
    general = config.get("general_settings") or {}
    settings = config.get("litellm_settings") or {}
    if isinstance(general, Mapping) and general.get("forward_client_headers_to_llm_api") is True:
        problems.append(
            "general_settings.forward_client_headers_to_llm_api is true: client headers "
            "(the binding among them) would reach the upstream"
        )
    groups = settings.get("model_group_settings") if isinstance(settings, Mapping) else None
    if isinstance(groups, Mapping) and groups.get("forward_client_headers_to_llm_api"):
        problems.append(
            "litellm_settings.model_group_settings.forward_client_headers_to_llm_api is set: "
            "client headers would reach the upstream"
        )
    if isinstance(general, Mapping) and general.get("allow_client_side_credentials") is True:
        problems.append(
            "general_settings.allow_client_side_credentials is true: a client could pick its "
            "own api_base or key"
        )
    governed = {r.model for r in registry.routes.values()}  # every governed model, any dialect
    for entry in config.get("model_list") or []:
        if not isinstance(entry, Mapping) or entry.get("model_name") not in governed:
            continue
        params = entry.get("litellm_params") or {}
        if isinstance(params, Mapping) and params.get("configurable_clientside_auth_params"):
            problems.append(
                f"model {entry.get('model_name')}: configurable_clientside_auth_params lets a "
                "client pick its own api_base or key"
            )
    return problems


def _proxy_config() -> Mapping[str, JSON] | None:
    """The config file the running LiteLLM proxy loads, parsed (None outside a proxy)."""
    server = sys.modules.get("litellm.proxy.proxy_server")
    path = getattr(server, "user_config_file_path", None) or os.environ.get("CONFIG_FILE_PATH")
    if not path:
        return None
    try:
        yaml = importlib.import_module("yaml")
        with open(path, encoding="utf-8") as f:
            loaded = yaml.safe_load(f)
    except Exception as exc:  # unreadable: the promise cannot be checked, so no start
        raise ConfigError(
            f"cannot read the LiteLLM config {path} to check the hook's settings: "
            f"{type(exc).__name__}"
        ) from None
    return loaded if isinstance(loaded, Mapping) else {}


def from_env() -> object:
    """The hook configured by ``REASONWIRE_POLICY``, ``REASONWIRE_KEYS`` and
    ``REASONWIRE_EVIDENCE`` (and ``REASONWIRE_VAULT``); :class:`ConfigError` naming what is
    missing, or what in the proxy's config breaks the promise."""
    from pathlib import Path

    from reasonwire.govern.stores import open_evidence_store, open_vault

    missing = [
        v
        for v in ("REASONWIRE_POLICY", "REASONWIRE_KEYS", "REASONWIRE_EVIDENCE")
        if not os.environ.get(v)
    ]
    if missing:
        raise ConfigError(f"the reasonwire LiteLLM hook needs {', '.join(missing)} set")
    registry, policy = _load_policy(os.environ["REASONWIRE_POLICY"])
    config = _proxy_config()
    if config is not None:
        problems = check_proxy_config(config, registry)
        if problems:
            raise ConfigError(
                "the reasonwire LiteLLM hook refuses to start: " + "; ".join(problems)
            )
    keys = KeyRing.load_dir(Path(os.environ["REASONWIRE_KEYS"]))
    store = open_evidence_store(os.environ["REASONWIRE_EVIDENCE"])
    target = os.environ.get("REASONWIRE_VAULT")
    vault = open_vault(target) if target else None
    return hook_class()(Governor(registry, policy, keys, store, vault))


_handler: object = None
_handler_lock = threading.Lock()


def __getattr__(name: str) -> object:
    """``proxy_handler``: the hook from the environment, made on first use (LiteLLM's config
    names it as ``reasonwire.govern.litellm_hook.proxy_handler``)."""
    global _handler
    if name != "proxy_handler":
        raise AttributeError(name)
    with _handler_lock:
        if _handler is None:
            _handler = from_env()
        return _handler
