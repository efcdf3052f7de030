"""Badges as data: an endpoint's (or a model's best endpoint's) current board figure, in words and a colour.

An endpoint's output speed and TTFT badges show its headline figure on the board a visitor opens first: the
default window (72 h median), the opening workload (its first scheduled one where it has none there), the
default region. Its uptime badge shows its success share over the last 30 days, every workload pooled, by the
board's definition (stats.success_rate: published samples, tokenpace's own cancellations left out). A model's
badge shows its best endpoint's figure: among the endpoints the model page heads with (enough counted samples,
not failing: model_page.headline), the fastest output speed, the lowest TTFT, or the highest 30-day uptime; its
title names that endpoint (and, for uptime, of how many it is the best).

The colour rule (:func:`figure_colour`, :func:`uptime_colour`): grey where there is no figure to stand on (none,
too few samples, a stale row); speed and TTFT are blue, or red where the endpoint is failing, because no speed is
good or bad for every model; uptime is green from 99 %, yellow-green from 95 %, orange from the board's failing
bound (90 %), red below it. The web draws the SVG (web/badges.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tokenpace.board import numbers, regions
from tokenpace.board.leaderboard_page import ranked
from tokenpace.board.model_page import headline
from tokenpace.board.pageparts import PageSource
from tokenpace.board.ranking import Entry
from tokenpace.board.rows import FAILING_BELOW
from tokenpace.config.endpoints import endpoint_name
from tokenpace.config.windows import DEFAULT_WINDOW, WINDOWS, Window
from tokenpace.measure import catalogue
from tokenpace.measure.stats import success_rate
from tokenpace.store.windows import EndpointRow, endpoint_rows, present_models

GREY, BLUE, RED = "#9f9f9f", "#007ec6", "#e05d44"
GREEN, YELLOW_GREEN, ORANGE = "#44cc11", "#a4a61d", "#fe7d37"
UPTIME_DAYS = 30
UPTIME_WINDOW = Window(f"{UPTIME_DAYS}d", UPTIME_DAYS * 86_400, "median", f"{UPTIME_DAYS} d")
# metric -> (the row's figure, whose label and unit the catalogue gives, and how numbers.figure_text writes it)
BADGE_FIGURES: dict[str, tuple[str, numbers.Kind]] = {"speed": ("output_speed", "num"), "ttft": ("ttft_ms", "ms")}
UPTIME_LABEL = f"uptime {UPTIME_DAYS}d"
ENDPOINT_BADGES = ("speed", "ttft", "uptime")
MODEL_BADGES = ("speed", "ttft", "uptime")
NAME_CUT = 120  # characters of a name in a badge's title: a hostile name never makes a badge kilobytes long


@dataclass(frozen=True, slots=True)
class Badge:
    """What one badge says: its label, its value as text, its colour (a CSS hex colour) and its title, which
    names what the figure is of and the window it is over."""

    label: str
    value: str
    colour: str
    title: str


def figure_colour(has_figure: bool, too_few: bool, stale: bool, failing: bool) -> str:
    """Grey without a figure to stand on (none, too few samples, stale), red when failing, else blue."""
    if not has_figure or too_few or stale:
        return GREY
    return RED if failing else BLUE


def uptime_colour(share: float | None) -> str:
    """Grey when nothing was judged; green >= 99 %, yellow-green >= 95 %, orange >= FAILING_BELOW, else red."""
    if share is None:
        return GREY
    return GREEN if share >= 0.99 else YELLOW_GREEN if share >= 0.95 else ORANGE if share >= FAILING_BELOW else RED


def figure_badge(metric: str, row: EndpointRow | None, entry: Entry | None, window: Window, whose: str) -> Badge:
    """A speed or TTFT badge from a row as the board shows it (``entry``: its place on the board, if listed)."""
    column, kind = BADGE_FIGURES[metric]
    label, unit = catalogue.metric(column).label, catalogue.metric(column).unit
    value = None if row is None else row.figure(column).headline(window.statistic)
    n = 0 if row is None else row.figure(column).n
    too_few, stale, failing = (entry.too_few, entry.stale, entry.failing) if entry is not None else (False,) * 3
    colour = figure_colour(value is not None, too_few, stale, failing)
    text = (
        "no data" if value is None else "too few samples" if too_few else f"{numbers.figure_text(value, kind)} {unit}"
    )
    where = "" if row is None else f" on workload {numbers.cut(row.workload, NAME_CUT)}, {n:,} samples"
    notes = "".join(note for note, on in ((", stale", stale), (", failing", failing)) if on)
    return Badge(label, text, colour, f"{whose}: {label} {text}, {window.label}{where}{notes}")


def uptime_badge(ok: int, samples: int, cancelled: int, whose: str) -> Badge:
    """The 30-day uptime badge: ok / (samples - cancelled) of the published samples (stats.success_rate)."""
    share = success_rate(ok, samples, cancelled)
    text = numbers.percent(share) if share is not None else "no data"
    judged = samples - cancelled
    counts = f"{ok:,} of {judged:,} judged samples ok" if judged else "no judged sample"
    title = f"{whose}: success share over the last {UPTIME_DAYS} days, every workload: {counts}"
    return Badge(UPTIME_LABEL, text, uptime_colour(share), title)


def badge_label(metric: str) -> str:
    """The label (left half) of one of ENDPOINT_BADGES."""
    return catalogue.metric(BADGE_FIGURES[metric][0]).label if metric in BADGE_FIGURES else UPTIME_LABEL


def _badge_region(source: PageSource) -> str | None:
    return regions.store_filter(regions.default(source.config))


def _rows(
    source: PageSource, window: Window, model: str, provider: str | None = None, plan: str | None = None
) -> list[EndpointRow]:
    """Rows of the default region. Not kept in the rows' memo, whose 256 entries the board shares: a badge per
    endpoint would push the board's own rows out. The rendered badge is kept instead (web/memo.py's pages)."""
    return endpoint_rows(
        source.store, window, source.now(), source.long_workloads, model=model, provider=provider, plan=plan,
        region=_badge_region(source),
    )  # fmt: skip


def endpoint_badge(source: PageSource, provider: str, plan: str, model: str, metric: str) -> Badge | None:
    """One of ENDPOINT_BADGES for an endpoint; None where it is neither configured nor sampled in 30 days."""
    whose = numbers.cut(endpoint_name(provider, plan, model), NAME_CUT)
    month = _rows(source, UPTIME_WINDOW, model, provider, plan)
    configured = any((e.provider, e.plan, e.model) == (provider, plan, model) for e in source.config.endpoints)
    if not month and not configured:
        return None
    if metric == "uptime":
        samples, cancelled = sum(r.samples for r in month), sum(r.cancelled for r in month)
        return uptime_badge(sum(r.ok for r in month), samples, cancelled, whose)
    window = WINDOWS[DEFAULT_WINDOW]
    rows = _rows(source, window, model, provider, plan)
    present = {r.workload: r for r in rows}
    usual = source.default_workload
    workload = usual if usual in present or not present else source.ordered(present)[0]
    row = present.get(workload)
    board = ranked(source, {"window": window.name, "workload": workload, "region": regions.default(source.config)})
    entry = next((e for e in board.entries if row is not None and e.row.key == row.key), None)
    return figure_badge(metric, row, entry, window, whose)


def model_badge(source: PageSource, asked: str, metric: str) -> Badge | None:
    """One of MODEL_BADGES for a model: its best endpoint's figure on the opening workload (module docstring);
    None where no endpoint serving it is configured or sampled in the window."""
    window, models, now = WINDOWS[DEFAULT_WINDOW], source.config.models, source.now()
    model = models.canonical(asked)
    seen = source.memo.get(
        ("badge-models", window.name), lambda: present_models(source.store, window, now, source.long_workloads)
    )
    ids = models.ids(model, [*seen, *(e.model for e in source.config.endpoints)])
    if not ids:
        return None
    rows = [r for m in ids for r in _rows(source, window, m)]
    workloads = source.ordered({r.workload for r in rows})
    usual = source.default_workload
    workload = usual if usual in workloads or not workloads else workloads[0]
    top = headline([r for r in rows if r.workload == workload], window.statistic, source.min_samples)
    if metric == "uptime":
        if top.ranked:
            return _best_uptime(source, model, top.ranked)
        text = "too few samples" if top.listed else "no data"
        return Badge(UPTIME_LABEL, text, GREY, f"{numbers.cut(model, NAME_CUT)}: no endpoint ranked, {window.label}")
    column = BADGE_FIGURES[metric][0]
    figured = [(v, r.name, r) for r in top.ranked if (v := r.figure(column).headline(window.statistic)) is not None]
    best = [r for _, _, r in sorted(figured, key=lambda x: (x[0], x[1]))]  # ties by name: the same one each time
    row = (best[-1] if metric == "speed" else best[0]) if best else None
    whose = numbers.cut(model, NAME_CUT) + (f" on {numbers.cut(row.name, NAME_CUT)}" if row is not None else "")
    badge = figure_badge(metric, row, None, window, whose)
    if row is None and top.listed:  # listed, none ranked: too few samples, or every one failing
        return Badge(badge.label, "too few samples", GREY, f"{whose}: no endpoint has enough samples and succeeds")
    return badge


def _best_uptime(source: PageSource, model: str, ranked: Sequence[EndpointRow]) -> Badge:
    """The 30-day uptime of the model's ranked endpoint that kept the highest (ties by name), named in the title."""
    shares = []
    for r in ranked:
        month = _rows(source, UPTIME_WINDOW, r.model, r.provider, r.plan)
        counts = (sum(m.ok for m in month), sum(m.samples for m in month), sum(m.cancelled for m in month))
        shares.append((success_rate(*counts) or 0.0, r.name, counts))
    _, name, counts = min(shares, key=lambda x: (-x[0], x[1]))
    badge = uptime_badge(*counts, f"{numbers.cut(model, NAME_CUT)} on {numbers.cut(name, NAME_CUT)}")
    of = f"; the best of the {len(ranked)} endpoints ranked for it" if len(ranked) > 1 else ""
    return Badge(badge.label, badge.value, badge.colour, badge.title + of)
