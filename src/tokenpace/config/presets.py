"""Well-known providers as data: where each one listens, which wire protocol it speaks and its key's variable.

A preset saves looking up a base URL; it holds the *name* of the environment variable for the key, never a
key. Local servers are listed at their default ports and need no key. The URLs are the providers' documented
bases; the note says what is worth knowing when measuring there. A gateway that serves each model on its own
API carries its dated endpoint table (config/gateways.py), a provider with published plans their billing, and
one that routes by a session header sends a fresh value of it with every request (config/headers.FRESH_VALUE).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from types import MappingProxyType
from typing import TYPE_CHECKING

from tokenpace.config.gateways import OPENCODE_GO, OPENCODE_ZEN
from tokenpace.config.headers import FRESH_VALUE
from tokenpace.config.prices import Price
from tokenpace.config.protocols import PROTOCOLS as PROTOCOLS  # where the rest of tokenpace finds them
from tokenpace.config.protocols import ProtocolName as ProtocolName
from tokenpace.config.protocols import Routes
from tokenpace.errors import ConfigError

if TYPE_CHECKING:  # settings loads pydantic: the command line's help and choices must cost no such import
    from tokenpace.config.settings import Billing


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    base_url: str
    protocol: ProtocolName
    api_key_env: str | None  # None: no key (a local server)
    note: str
    # What `tokenpace serve` measures when it finds the key and no config names a model: a small, widely
    # served model of the provider's (a retired name shows up as http_error samples, not silence). Local
    # servers have none: their own model list says what they serve.
    model: str | None = None
    # The list price of ``model`` where we are sure of it, dated and with its source: prices change, so pages
    # mark one older than prices.STALE_DAYS. None where unsure: no figure beats a wrong one.
    price: Price | None = None
    routes: Routes | None = None  # a gateway's endpoint table: each model's protocol, ``protocol`` the rest's
    plans: tuple[tuple[str, Billing], ...] = ()  # published plans' names and billing, the default for a table's
    headers: tuple[tuple[str, str], ...] = ()  # sent with every request; a FRESH_VALUE value is new each time

    def price_for(self, model: str) -> Price | None:
        """The preset's price where ``model`` is its default one; None for any other model."""
        return self.price if model == self.model else None

    def protocol_of(self, model: str) -> ProtocolName:
        """The protocol ``model`` is served on: its endpoint table's or rule's where there is one, else ``protocol``."""
        return (self.routes.protocol(model) if self.routes else None) or self.protocol

    def billing_of(self, plan: str) -> Billing | None:
        """The published billing of the plan of that name; None where the preset names no such plan."""
        return dict(self.plans).get(plan)


_ALL = (
    Preset(
        "openai",
        "https://api.openai.com/v1",
        "openai-chat",
        "OPENAI_API_KEY",
        "OpenAI; reasoning models also on openai-responses",
        model="gpt-4o-mini",
        price=Price(0.15, 0.60, 0.075, date(2025, 10, 1), "https://openai.com/api/pricing/"),
    ),
    Preset(
        "anthropic",
        "https://api.anthropic.com/v1",
        "anthropic",
        "ANTHROPIC_API_KEY",
        "Anthropic Messages API",
        model="claude-haiku-4-5",
        price=Price(1.00, 5.00, 0.10, date(2025, 10, 15), "https://www.anthropic.com/pricing"),
    ),
    Preset(
        "gemini",
        "https://generativelanguage.googleapis.com/v1beta",
        "gemini",
        "GEMINI_API_KEY",
        "Google AI Studio (Gemini API)",
        model="gemini-2.5-flash",
        price=Price(0.30, 2.50, None, date(2025, 10, 1), "https://ai.google.dev/gemini-api/docs/pricing"),
    ),
    Preset(
        "groq",
        "https://api.groq.com/openai/v1",
        "openai-chat",
        "GROQ_API_KEY",
        "Groq LPUs, OpenAI-compatible",
        model="llama-3.1-8b-instant",
        price=Price(0.05, 0.08, None, date(2025, 10, 1), "https://groq.com/pricing"),
    ),
    Preset(
        "cerebras",
        "https://api.cerebras.ai/v1",
        "openai-chat",
        "CEREBRAS_API_KEY",
        "Cerebras wafer-scale inference, OpenAI-compatible",
        model="llama3.1-8b",
        price=Price(0.10, 0.10, None, date(2025, 10, 1), "https://www.cerebras.ai/pricing"),
    ),
    Preset(
        "together",
        "https://api.together.xyz/v1",
        "openai-chat",
        "TOGETHER_API_KEY",
        "Together AI, OpenAI-compatible",
        model="meta-llama/Llama-3.3-70B-Instruct-Turbo",
        price=Price(0.88, 0.88, None, date(2025, 10, 1), "https://www.together.ai/pricing"),
    ),
    Preset(
        "fireworks",
        "https://api.fireworks.ai/inference/v1",
        "openai-chat",
        "FIREWORKS_API_KEY",
        "Fireworks AI; models named accounts/fireworks/models/...",
        model="accounts/fireworks/models/llama-v3p1-8b-instruct",
        price=Price(0.20, 0.20, None, date(2025, 10, 1), "https://fireworks.ai/pricing"),
    ),
    Preset(
        "openrouter",
        "https://openrouter.ai/api/v1",
        "openai-chat",
        "OPENROUTER_API_KEY",
        "a router: the upstream provider may differ between requests",
        model="meta-llama/llama-3.1-8b-instruct",
    ),
    Preset(
        "deepseek",
        "https://api.deepseek.com/v1",
        "openai-chat",
        "DEEPSEEK_API_KEY",
        "DeepSeek; reasoning streams as reasoning_content",
        model="deepseek-chat",
        price=Price(0.28, 0.42, 0.028, date(2025, 9, 29), "https://api-docs.deepseek.com/quick_start/pricing"),
    ),
    Preset(
        "mistral",
        "https://api.mistral.ai/v1",
        "openai-chat",
        "MISTRAL_API_KEY",
        "Mistral AI (La Plateforme)",
        model="mistral-small-latest",
    ),
    Preset(
        "ollama-cloud",
        "https://ollama.com",
        "ollama",
        "OLLAMA_API_KEY",
        "Ollama Cloud, native /api/chat with a Bearer key; plans free and pro, each capped (a 5-hour session "
        "and a weekly limit, https://ollama.com/pricing)",
        model="gpt-oss:120b",
        plans=(("free", "capped"), ("pro", "capped")),
    ),
    Preset(
        "opencode-zen",
        "https://opencode.ai/zen/v1",
        "openai-chat",
        "OPENCODE_API_KEY",
        "OpenCode Zen gateway, pay per use: each model on its own API (Chat Completions, Messages, Responses "
        "or Gemini's), as its endpoint table says",
        model="claude-haiku-4-5",
        routes=OPENCODE_ZEN,
    ),
    Preset(
        "opencode-go",
        "https://opencode.ai/zen/go/v1",
        "openai-chat",
        "OPENCODE_API_KEY",
        "OpenCode Go, a $10/month subscription capped by the dollar over 5 hours, a week and a month: each model "
        "on its own API; a fresh x-opencode-session per request",
        model="mimo-v2.5",
        routes=OPENCODE_GO,
        plans=(("default", "capped"),),
        headers=(("x-opencode-session", FRESH_VALUE),),
    ),
    Preset(
        "ollama",
        "http://127.0.0.1:11434",
        "ollama",
        None,
        "a local Ollama server (native API, server-side timings kept)",
    ),
    Preset(
        "llama.cpp",
        "http://127.0.0.1:8080/v1",
        "openai-chat",
        None,
        "a local llama-server (its timings are kept)",
    ),
    Preset(
        "vllm",
        "http://127.0.0.1:8000/v1",
        "openai-chat",
        None,
        "a local vLLM server (vllm serve)",
    ),
    Preset(
        "sglang",
        "http://127.0.0.1:30000/v1",
        "openai-chat",
        None,
        "a local SGLang server",
    ),
)

PRESETS: MappingProxyType[str, Preset] = MappingProxyType({p.name: p for p in _ALL})


def served_elsewhere(provider: str, model: str, used: ProtocolName) -> str | None:
    """Where the preset of that name serves ``model``, when its endpoint table (or rule) names another protocol
    than ``used``: ``opencode-zen serves kimi-k2.5 on openai-chat, not anthropic (...)``; None otherwise."""
    pre = PRESETS.get(provider)
    if pre is None or pre.routes is None or (right := pre.protocol_of(model)) == used:
        return None
    how = "its endpoint table" if model in pre.routes.models else "its rule for models its endpoint table lacks"
    return f"{provider} serves {model} on {right}, not {used} ({how} of {pre.routes.as_of.isoformat()})"


def preset(name: str) -> Preset:
    """The preset called ``name``."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown preset {name!r} (known: {', '.join(PRESETS)})") from None
