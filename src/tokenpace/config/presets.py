"""Well-known providers as data: where each one listens, which wire protocol it speaks and its key's variable.

A preset saves looking up a base URL; it holds the *name* of the environment variable for the key, never a
key. Local servers are listed at their default ports and need no key. The URLs are the providers' documented
bases; the note says what is worth knowing when measuring there.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from datetime import date
from types import MappingProxyType
from typing import Literal

from tokenpace.config.prices import Price
from tokenpace.errors import ConfigError

# The wire protocols' names, here rather than in config so the command line's choices cost no import.
ProtocolName = Literal["openai-chat", "openai-completions", "openai-responses", "anthropic", "ollama", "gemini"]
PROTOCOLS: tuple[ProtocolName, ...] = typing.get_args(ProtocolName)


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

    def price_for(self, model: str) -> Price | None:
        """The preset's price where ``model`` is its default one; None for any other model."""
        return self.price if model == self.model else None


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
        "Ollama Cloud, native /api/chat with a Bearer key",
        model="gpt-oss:120b",
    ),
    Preset(
        "opencode-zen",
        "https://opencode.ai/zen/v1",
        "anthropic",
        "OPENCODE_API_KEY",
        "OpenCode Zen gateway; its Claude models on the Messages API",
        model="claude-haiku-4-5",
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


def preset(name: str) -> Preset:
    """The preset called ``name``."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ConfigError(f"unknown preset {name!r} (known: {', '.join(PRESETS)})") from None
