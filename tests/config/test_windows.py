"""The board's windows as defined: each one's span, the long span of long-context workloads, and the default."""

from __future__ import annotations

from tokenpace.config.windows import DEFAULT_WINDOW, WINDOWS


def test_each_window_spans_its_name_and_only_72h_has_a_long_span() -> None:
    assert {w.name: (w.seconds, w.statistic) for w in WINDOWS.values()} == {
        "24h": (86_400, "mean"),
        "72h": (72 * 3600, "median"),
        "7d": (7 * 86_400, "median"),
    }
    assert WINDOWS["72h"].span("100k", ("100k",)) == 14 * 86_400  # Artificial Analysis's 14 days for 100k
    assert WINDOWS["72h"].span("1k", ("100k",)) == WINDOWS["72h"].span("100k") == 72 * 3600
    assert WINDOWS["7d"].span("100k", ("100k",)) == 7 * 86_400
    assert DEFAULT_WINDOW in WINDOWS and len({w.label for w in WINDOWS.values()}) == len(WINDOWS)
