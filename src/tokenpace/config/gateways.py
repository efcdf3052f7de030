"""Gateways' published endpoint tables: which API serves each model, as read on a date from the gateway's docs.

A table goes stale as a gateway adds and retires models: each is dated, names its source, and has rules for
the model families it does not list (drawn from the same table). A config's ``protocols`` always wins over it,
and a model refused on the wrong protocol says which one the table names (load/send.py).
"""

from __future__ import annotations

from datetime import date

from tokenpace.config.protocols import Routes, endpoint_table

# https://opencode.ai/docs/zen/#endpoints, from its source (anomalyco/opencode, packages/web/src/content/docs/
# zen.mdx at e33d5b41). Gemini models are reached at /zen/v1/models/{id}: Google's own API, tokenpace's gemini.
OPENCODE_ZEN = Routes(
    as_of=date(2026, 12, 6),
    source="https://opencode.ai/docs/zen/#endpoints",
    models=endpoint_table(
        {
            "openai-responses": "gpt-5.6-sol-fast gpt-5.6-sol gpt-5.6-terra gpt-5.6-luna gpt-5.5 gpt-5.5-pro gpt-5.4 "
            "gpt-5.4-pro gpt-5.4-mini gpt-5.4-nano gpt-5.3-codex gpt-5.3-codex-spark gpt-5.2 gpt-5.2-codex gpt-5.1 "
            "gpt-5.1-codex gpt-5.1-codex-max gpt-5.1-codex-mini gpt-5 gpt-5-codex gpt-5-nano",
            "anthropic": "claude-fable-5 claude-opus-5 claude-opus-4-8 claude-opus-4-7 claude-opus-4-6 claude-opus-4-5 "
            "claude-sonnet-5 claude-sonnet-4-6 claude-sonnet-4-5 claude-haiku-4-5 "
            "qwen3.7-max qwen3.7-plus qwen3.6-plus qwen3.5-plus",
            "gemini": "gemini-3.6-flash gemini-3.5-flash gemini-3.5-flash-lite gemini-3.1-pro gemini-3-flash",
            "openai-chat": "grok-4.5 grok-build-0.1 deepseek-v4-pro deepseek-v4-flash minimax-m3 minimax-m2.7 "
            "minimax-m2.5 glm-5.2 glm-5.1 glm-5 kimi-k2.5 kimi-k2.6 kimi-k2.7-code kimi-k3 big-pickle mimo-v2.5-free "
            "laguna-s-2.1-free ling-3.0-flash-free north-mini-code-free nemotron-3-ultra-free deepseek-v4-flash-free",
        }
    ),
    rules=(("claude-*", "anthropic"), ("gpt-*", "openai-responses"), ("gemini-*", "gemini"), ("qwen*", "anthropic")),
)

# https://opencode.ai/docs/go/#endpoints, from its source (go.mdx at b73203b4).
OPENCODE_GO = Routes(
    as_of=date(2026, 12, 6),
    source="https://opencode.ai/docs/go/#endpoints",
    models=endpoint_table(
        {
            "openai-responses": "grok-4.5 gpt-5.6-luna muse-spark-1.2-contributor",
            "openai-chat": "glm-5.3 glm-5.2 glm-5.1 kimi-k3 kimi-k2.7-code kimi-k2.6 deepseek-v4-pro deepseek-v4-flash "
            "deepseek-v4-flash-vision-exp mimo-v2.5 mimo-v2.5-pro hy3 ox-alpha-free",
            "anthropic": "minimax-m3 minimax-m2.7 minimax-m2.5 qwen3.8-max qwen3.7-max qwen3.7-plus qwen3.6-plus",
        }
    ),
    rules=(("minimax-*", "anthropic"), ("qwen*", "anthropic"), ("gpt-*", "openai-responses")),
)
