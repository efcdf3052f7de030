"""Secrets a server echoes back are replaced before anything is kept, even one spelled across events."""

from __future__ import annotations

from tokenpace.clients.scrub import redact, scrub, scrub_events
from tokenpace.measure.timing import Event, EventKind

KEY = "sk-test-0123456789abcdef"


def test_the_longest_secret_is_replaced_first() -> None:
    assert redact(f"key {KEY} and {KEY[:10]}", (KEY[:10], KEY)) == "key *** and ***"


def test_every_string_of_a_json_shape_is_scrubbed_keys_included() -> None:
    doc = {"error": {"message": f"bad {KEY}", KEY: [f"x{KEY}y", 3, None]}}
    assert scrub(doc, (KEY,)) == {"error": {"message": "bad ***", "***": ["x***y", 3, None]}}
    assert scrub(doc, ()) is doc  # nothing to hide: the same object, not a copy


def test_a_secret_spelled_across_events_is_masked_in_each() -> None:
    pieces = [" the key is ", KEY[:5], KEY[5:15], KEY[15:], " ok"]
    events = [Event(i, EventKind.CONTENT, p) for i, p in enumerate(pieces)]
    out = scrub_events(events, (KEY,))
    text = "".join(e.text for e in out)
    assert KEY not in text and all(KEY[i : i + 4] not in text for i in range(len(KEY) - 4))
    assert text.startswith(" the key is ") and text.endswith(" ok") and len(text) == len("".join(pieces))
    assert [e.t_ns for e in out] == [e.t_ns for e in events]  # timing untouched
