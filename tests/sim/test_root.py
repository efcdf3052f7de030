"""A gateway simulated at its own paths: every route under a root, and models each served on one protocol only."""

from __future__ import annotations

import pytest

from tests.simkit import FAST, PROMPT, post
from tokenpace.errors import SimulatorError
from tokenpace.sim import Simulator, serve

pytestmark = pytest.mark.usefixtures("quiet_server")
CHAT = {"messages": [{"role": "user", "content": PROMPT}], "stream": True}
MESSAGES = {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": 50, "stream": True}


async def test_a_root_moves_every_route_under_it_and_the_base_url_with_it() -> None:
    async with serve(Simulator(FAST, root="/zen/go")) as url:
        assert url.endswith("/zen/go/v1")
        port_root = url.removesuffix("/zen/go/v1")
        chat = await post(f"{url}/chat/completions", {"model": "m", **CHAT})
        messages = await post(f"{url}/messages", {"model": "m", **MESSAGES})
        assert (chat.status, messages.status) == (200, 200)
        assert chat.payloads[-1] == "[DONE]" and b"message_stop" in messages.body
        assert (await post(f"{port_root}/zen/go/api/chat", {"model": "m", **CHAT})).status == 200
        assert (await post(f"{port_root}/v1/chat/completions", {"model": "m", **CHAT})).status == 404  # not at /


async def test_without_a_root_the_routes_are_where_they_always_were() -> None:
    async with serve(Simulator(FAST)) as url:
        assert url.endswith("/v1") and url.count("/") == 3  # http://127.0.0.1:PORT/v1
        assert (await post(f"{url}/chat/completions", {"model": "m", **CHAT})).status == 200


@pytest.mark.parametrize("root", ["zen", "/zen/", "/a\nb", "/{x}"])
def test_a_root_that_is_no_path_is_refused(root: str) -> None:
    with pytest.raises(SimulatorError, match=r"give a path such as /zen"):
        Simulator(FAST, root=root)


async def test_a_model_served_on_one_protocol_is_not_supported_on_anothers_route() -> None:
    simulator = Simulator(FAST, root="/zen", served_on={"kimi-k2.5": "openai-chat", "claude-x": "anthropic"})
    async with serve(simulator) as url:
        assert (await post(f"{url}/chat/completions", {"model": "kimi-k2.5", **CHAT})).status == 200
        wrong = await post(f"{url}/messages", {"model": "kimi-k2.5", **MESSAGES})
        assert wrong.status == 404 and b"not supported" in wrong.body
        assert (await post(f"{url}/chat/completions", {"model": "claude-x", **CHAT})).status == 404
        assert (await post(f"{url}/messages", {"model": "claude-x", **MESSAGES})).status == 200
        assert (await post(f"{url}/responses", {"model": "other", "input": PROMPT, "stream": True})).status == 200
    assert len(simulator.truth) == 3  # a refused request is no served request
