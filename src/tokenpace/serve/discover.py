"""What ``tokenpace serve`` measures when no config file names anything: whatever it can honestly reach.

Three sources, in order:

1. Well-known providers whose key variable is set (``GROQ_API_KEY``...): the preset's default model.
2. Local servers on their usual ports (Ollama 11434, llama.cpp 8080, vLLM 8000, SGLang 30000) that answer
   their model list: every model listed there.
3. Nothing found: the built-in simulator endpoints of the embedded default config, labelled simulated.

A local server that is tokenpace's own simulator (``tokenpace sim``: its model list carries the header
``X-Tokenpace-Simulator: 1``) is measured labelled simulated, whatever port it answers on: a simulator's figures
must never rank as a real server's. ``run`` and ``bench --base-url`` ask the same of the URL they are given
(:func:`labelled`).

Only the *name* of a key variable is ever kept; the key stays in the environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from tokenpace.clients import protocol_for
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.presets import PRESETS, Preset
from tokenpace.sim import SIMULATOR_HEADER

# What a discovered endpoint is measured on. Not vision: most presets' default models and llama-server without
# a projector take no images. Not 100k: small local models lack the context, and a CPU server would spend
# hours on the prefill. A config file schedules both where the models take them.
WORKLOADS = ("1k", "10k", "parallel")
PROBE_TIMEOUT_S = 1.0  # a local server answers its model list in milliseconds; nothing there refuses at once
# Whatever answers on a well-known port is a stranger: its list is read within these bounds, or not at all.
LIST_BYTES = 1 << 20  # an Ollama with a hundred models pulled lists ~100 kB
MAX_MODELS = 32  # per server: each is scheduled on every workload, so a list of thousands would be a flood
MAX_NAME_CHARS = 200


@dataclass(frozen=True, slots=True)
class Found:
    """Endpoints discovered, and one line per source saying why each is (or is not) measured."""

    endpoints: tuple[Endpoint, ...]
    notes: tuple[str, ...]


def keyed(env: Mapping[str, str]) -> list[Endpoint]:
    """One endpoint per cloud preset whose key variable is set and non-empty."""
    return [
        Endpoint(
            p.name, p.model, p.base_url, protocol=p.protocol_of(p.model), api_key_env=p.api_key_env, headers=p.headers
        )
        for p in PRESETS.values()
        if p.api_key_env and p.model and env.get(p.api_key_env)
    ]


def local_presets() -> list[Preset]:
    """The presets of servers that run on this machine: no key, a loopback URL."""
    return [p for p in PRESETS.values() if p.api_key_env is None]


def _model_names(protocol: str, doc: Any) -> list[str]:
    """Model names from an Ollama ``/api/tags`` or an OpenAI ``/models`` document (anything else: none)."""
    if not isinstance(doc, dict):
        return []
    items = doc.get("models") if protocol == "ollama" else doc.get("data")
    key = "name" if protocol == "ollama" else "id"
    if not isinstance(items, list):
        return []
    names = [m[key] for m in items if isinstance(m, dict) and isinstance(m.get(key), str)]
    # Embedding models list beside chat models (Ollama's nomic-embed-text...) and can never stream a completion.
    names = [n for n in names if "embed" not in n.lower() and 0 < len(n) <= MAX_NAME_CHARS and n.isprintable()]
    return list(dict.fromkeys(names))[:MAX_MODELS]


@dataclass(frozen=True, slots=True)
class _Listing:
    models: list[str]
    simulated: bool  # the server said it is tokenpace's simulator


async def _listed(session: aiohttp.ClientSession, p: Preset, base_url: str) -> _Listing:
    url = base_url + ("/api/tags" if p.protocol == "ollama" else "/models")
    # RecursionError: a list nested thousands deep; ValueError: not JSON, or not UTF-8.
    with contextlib.suppress(aiohttp.ClientError, TimeoutError, ValueError, RecursionError):
        async with session.get(url) as response:
            body = await response.content.read(LIST_BYTES + 1)
            if response.status == 200 and len(body) <= LIST_BYTES:
                simulated = response.headers.get(SIMULATOR_HEADER, "").strip() == "1"
                return _Listing(_model_names(p.protocol, json.loads(body)), simulated)
    return _Listing([], simulated=False)


async def labelled(endpoints: Sequence[Endpoint]) -> list[Endpoint]:
    """The endpoints, each whose server says it is tokenpace's simulator labelled simulated: its model list is
    asked for once (no key sent), within PROBE_TIMEOUT_S, and only its status and headers are read."""

    async def says(session: aiohttp.ClientSession, e: Endpoint) -> bool:
        with contextlib.suppress(aiohttp.ClientError, TimeoutError, ValueError):
            async with session.get(protocol_for(e.protocol).warm_url(e), allow_redirects=False) as response:
                return response.status == 200 and response.headers.get(SIMULATOR_HEADER, "").strip() == "1"
        return False

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=PROBE_TIMEOUT_S)) as session:
        said = await asyncio.gather(*(says(session, e) for e in endpoints))
    return [dataclasses.replace(e, simulated=True) if s else e for e, s in zip(endpoints, said, strict=True)]


async def local(
    servers: Sequence[tuple[Preset, str]] | None = None, skip_ports: Collection[int] = ()
) -> list[Endpoint]:
    """Endpoints of the local servers that answer their model list (default: every local preset's URL)."""
    servers = [(p, p.base_url) for p in local_presets()] if servers is None else servers
    servers = [(p, url) for p, url in servers if urlsplit(url).port not in skip_ports]
    timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        lists = await asyncio.gather(*(_listed(session, p, url) for p, url in servers))
    return [
        Endpoint(p.name, model, url, protocol=p.protocol, simulated=listing.simulated)
        for (p, url), listing in zip(servers, lists, strict=True)
        for model in listing.models
    ]


async def discover(
    env: Mapping[str, str],
    servers: Sequence[tuple[Preset, str]] | None = None,
    skip_ports: Collection[int] = (),
) -> Found:
    """Keyed presets and answering local servers; an empty result means: fall back to the simulators."""
    cloud = keyed(env)
    nearby = await local(servers, skip_ports)
    notes = [f"{e.provider}: {e.api_key_env} is set, measuring {e.model}" for e in cloud]
    notes += [
        f"{e.provider}: {e.base_url} answered, measuring {e.model}"
        + (" (a tokenpace simulator: labelled simulated, its figures are no server's)" if e.simulated else "")
        for e in nearby
    ]
    return Found((*cloud, *nearby), tuple(notes))
