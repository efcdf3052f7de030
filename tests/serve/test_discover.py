"""Discovery: keyed presets from the environment, local servers that answer their model list."""

from __future__ import annotations

import asyncio
import socket
from urllib.parse import urlsplit

from tokenpace import sim
from tokenpace.config.presets import PRESETS
from tokenpace.config.workloads import BUILTIN
from tokenpace.load.engine import RunOptions, run_workload
from tokenpace.serve import discover


def test_keyed_presets_are_the_ones_whose_key_is_set() -> None:
    found = discover.keyed({"GROQ_API_KEY": "gsk-canary", "CEREBRAS_API_KEY": "", "UNRELATED": "x"})
    assert [(e.provider, e.model, e.api_key_env) for e in found] == [("groq", "llama-3.1-8b-instant", "GROQ_API_KEY")]
    assert all("gsk-canary" not in repr(e) for e in found)  # the name of the variable, never the key


def test_every_cloud_preset_has_a_default_model_and_no_local_one_does() -> None:
    for p in PRESETS.values():
        assert (p.model is None) == (p.api_key_env is None), p.name


async def test_local_servers_are_found_by_their_model_lists() -> None:
    ollama, llama = PRESETS["ollama"], PRESETS["llama.cpp"]
    async with sim.serve(sim.Simulator(models={"tiny-a": sim.Scenario()})) as url:
        root = url.removesuffix("/v1")
        with socket.socket() as s:  # a port nothing listens on: refused, not found
            s.bind(("127.0.0.1", 0))
            dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
        found = await discover.local([(ollama, root), (llama, url), (PRESETS["vllm"], dead)])
        assert {(e.provider, e.model, e.base_url, e.protocol) for e in found} == {
            ("ollama", "sim", root, "ollama"),
            ("ollama", "tiny-a", root, "ollama"),
            ("llama.cpp", "sim", url, "openai-chat"),
            ("llama.cpp", "tiny-a", url, "openai-chat"),
        }
        # What is found can be measured as it is.
        result = await run_workload([found[0]], BUILTIN["1k"], RunOptions(requests=1, warm_connections=False))
        assert result.samples[0].ok
        port = int(root.rsplit(":", 1)[1])
        assert await discover.local([(llama, url)], skip_ports=(port,)) == []


async def test_discovery_finds_nothing_where_nothing_answers() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    found = await discover.discover({}, servers=[(PRESETS["ollama"], dead)])
    assert found.endpoints == () and found.notes == ()


def test_real_llama_server_on_its_usual_port_is_discovered(llama_server_8080: str) -> None:
    found = asyncio.run(discover.discover({}))  # the real default ports, nothing overridden
    llama = [e for e in found.endpoints if e.provider == "llama.cpp"]
    assert [(e.base_url, e.model) for e in llama] == [(llama_server_8080, "tiny")]
    assert any(f"llama.cpp: {llama_server_8080} answered" in note for note in found.notes)
    result = asyncio.run(run_workload(llama, BUILTIN["1k"], RunOptions(requests=1)))
    assert result.samples[0].ok and result.samples[0].metrics.output_tokens > 0


def test_embedding_models_are_not_measured() -> None:
    tags = {"models": [{"name": "llama3.2:1b"}, {"name": "nomic-embed-text:latest"}, {"size": 1}]}
    assert discover._model_names("ollama", tags) == ["llama3.2:1b"]
    listing = {"data": [{"id": "tiny"}, {"id": "BAAI/bge-m3-Embedding"}]}
    assert discover._model_names("openai-chat", listing) == ["tiny"]


async def test_tokenpace_simulator_is_discovered_as_simulated_whatever_its_port() -> None:
    """Issue 9 item 1: a simulator answering on a probed port is labelled simulated, never ranked as a server."""
    async with sim.serve(sim.Simulator()) as url:
        root = url.removesuffix("/v1")
        found = await discover.local([(PRESETS["llama.cpp"], url), (PRESETS["ollama"], root)])
        assert found and all(e.simulated for e in found)
        notes = (await discover.discover({}, servers=[(PRESETS["llama.cpp"], url)])).notes
        assert any("tokenpace simulator" in n and "simulated" in n for n in notes), notes


def test_the_simulator_command_listens_off_every_port_discovery_probes() -> None:
    from tokenpace.cli.sim import sim_command

    port = next(p for p in sim_command.params if p.name == "port").default
    probed = {urlsplit(p.base_url).port for p in discover.local_presets()}
    assert probed == {11434, 8080, 8000, 30000} and port not in probed
