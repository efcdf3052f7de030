"""A route in the forms users paste: a LiteLLM Router ``model_list`` and an OpenRouter ``provider`` object.

Only the endpoints in a route are exported, best first; each one left out says why in ``left_out``.

LiteLLM: one deployment per endpoint, all under the goal's model name (one model group), each at its configured
base URL, its model as ``PREFIX/ID`` by the protocol tokenpace speaks to it (:data:`LITELLM_PREFIX`; LiteLLM's
Anthropic and Ollama clients add their own paths, so those bases lose a trailing ``/v1``), and ``order`` its rank:
LiteLLM tries a group's lowest order first, and tied endpoints share one, left to its strategy. The key is only
ever a reference to the variable that holds it (``os.environ/VAR``, as LiteLLM's config reads it), never a value;
configured headers are not exported (they may hold credentials). An endpoint the running config does not hold
has no address to export.

OpenRouter: ``provider.order`` lists OpenRouter's slug of each endpoint's provider (:data:`OPENROUTER_SLUGS`:
the hosts OpenRouter routes to under the same name), in rank order, each once; ``allow_fallbacks`` stays true.
An endpoint of another provider, or of OpenRouter itself (its own routing, no one host), has no slug.
"""

from __future__ import annotations

from typing import Any

from tokenpace.board.route import Pick, Route
from tokenpace.config.endpoints import Config, Endpoint

# tokenpace's protocol -> LiteLLM's provider prefix, for a deployment at an api_base
LITELLM_PREFIX = {
    "openai-chat": "openai",
    "openai-responses": "openai",
    "openai-completions": "text-completion-openai",
    "anthropic": "anthropic",
    "ollama": "ollama_chat",
    "gemini": "gemini",
}
_OWN_PATH = ("anthropic", "gemini")  # LiteLLM appends /v1/messages or its version itself
# tokenpace's provider (a preset's name) -> OpenRouter's provider slug
OPENROUTER_SLUGS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "gemini": "google-ai-studio",
    "groq": "groq",
    "cerebras": "cerebras",
    "together": "together",
    "fireworks": "fireworks",
    "deepseek": "deepseek",
    "mistral": "mistral",
}
FORMATS = ("json", "litellm", "openrouter")


def _configured(config: Config, p: Pick) -> Endpoint | None:
    r = p.row
    return next((e for e in config.endpoints if (e.provider, e.plan, e.model) == (r.provider, r.plan, r.model)), None)


def _left(p: Pick, why: str) -> dict[str, str]:
    return {"name": p.row.name, "why": why}


def _out(route: Route) -> list[dict[str, str]]:
    return [
        _left(p, "out of the route: " + "; ".join(why for _, why in p.reasons)) for p in route.picks if not p.chosen
    ]


def deployment(e: Endpoint, model_name: str, order: int) -> dict[str, Any]:
    """One LiteLLM deployment of an endpoint: its model, base URL, key variable and order."""
    base = e.base_url.rstrip("/")
    if e.protocol in _OWN_PATH:
        base = base.removesuffix("/v1").removesuffix("/v1beta")
    params: dict[str, Any] = {"model": f"{LITELLM_PREFIX[e.protocol]}/{e.model}", "api_base": base, "order": order}
    if e.api_key_env:
        params["api_key"] = f"os.environ/{e.api_key_env}"
    return {"model_name": model_name, "litellm_params": params}


def litellm(route: Route, config: Config) -> dict[str, Any]:
    """``{"model_list": [...], "left_out": [...]}``: the endpoints in, best first, as a LiteLLM Router model list."""
    models, left = [], []
    for p in route.chosen:
        e = _configured(config, p)
        if e is None:
            left.append(_left(p, "not in the running config: no address to export"))
            continue
        models.append(deployment(e, route.goal.model, p.rank or 1))
        if e.headers:
            left.append(_left(p, "exported without its configured headers (they may hold credentials)"))
    return {"model_list": models, "left_out": left + _out(route)}


def openrouter(route: Route) -> dict[str, Any]:
    """``{"provider": {"order": [...], "allow_fallbacks": true}, "left_out": [...]}``: OpenRouter's provider
    preferences naming the endpoints in, best first, by slug."""
    order: list[str] = []
    left = []
    for p in route.chosen:
        slug = OPENROUTER_SLUGS.get(p.row.provider)
        if slug is None:
            left.append(_left(p, "no OpenRouter provider slug for this provider"))
        elif slug not in order:
            order.append(slug)
    return {"provider": {"order": order, "allow_fallbacks": True}, "left_out": left + _out(route)}
