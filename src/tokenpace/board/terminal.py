"""What the terminal shows: of a run, a table per endpoint and one line about the run and the client; of the
service, the leaderboard with the web page's columns."""

from __future__ import annotations

import io
import textwrap
from collections.abc import Iterable, Mapping, Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tokenpace.board import console as clean
from tokenpace.board import numbers, regions, rows
from tokenpace.board.query import METRIC_OF
from tokenpace.board.ranking import Board, Entry
from tokenpace.board.summary import SUMMARY_FIGURES, Summary, summarise
from tokenpace.board.warmcold import WarmCold
from tokenpace.config.presets import Preset
from tokenpace.config.windows import EACH
from tokenpace.load.engine import RunResult
from tokenpace.measure.catalogue import Metric, metric
from tokenpace.measure.sample import Sample

# The terminal's columns, in the page's order (the page adds provider, plan and model): (key, label); sortable
# keys are those in SORTS. A figure's label and unit (measure/catalogue.py); the rest of its header, whose tokens
# and after what, is too wide for a table that must fit a terminal: the line under it says it (key_line).
BOARD_FIGURES = tuple(map(metric, METRIC_OF.values()))
TERMINAL_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rank", "#"),
    ("name", "Endpoint"),
    *((key, f"{m.label} ({m.unit_text})") for key, m in zip(METRIC_OF, BOARD_FIGURES, strict=True)),
    ("success", metric("success_rate").label),
    ("samples", "Samples"),
    ("price", "$/1M (3:1)"),
    ("cost", "$/request"),
    ("last", "Last sample"),
)


def print_summary(console: Console, s: Summary) -> None:
    """The endpoint's figures (beside the simulator's true values under --sim), then its commonest errors."""
    rate = numbers.percent(s.success_rate)
    errors = ", ".join(f"{k} {v}" for k, v in s.errors.items()) or "none"
    title = f"{clean.shown(s.endpoint)}  ·  {s.ok}/{s.samples} ok ({rate})  ·  errors: {errors}"
    if s.canary_checked:  # answers that began with the line asked for: a wrong or swapped model shows here
        title += f"  ·  canary {s.canary_passed}/{s.canary_checked} ({numbers.percent(s.canary_pass_rate)})"
    if s.ok == 0:
        console.print(title + "  ·  [bold red]no request succeeded[/]: no figures", soft_wrap=True)
    else:
        console.print(title, soft_wrap=True)  # a line of its own: a table's title would wrap at the table's width
        table = Table()
        columns = ("figure", "unit", "n", "P5", "P50", "P95", "mean") + (("set",) if s.truth is not None else ())
        for col in columns:
            table.add_column(col, justify="left" if col in ("figure", "unit") else "right")
        rows = [(m.key, m.label, m.unit_header, s.figures[m.key]) for m in SUMMARY_FIGURES]
        if s.groups is not None:
            speed, first = metric("output_speed"), metric("ttft_ms")
            rows += [
                ("", f"Group {speed.noun} ({s.groups.count} groups)", speed.unit_header, s.groups.speed),
                ("", f"Group {first.noun} spread", first.unit_header, s.groups.ttft_spread),
            ]
        for name, label, unit, st in rows:
            cells = [label, unit, str(st.n), *(numbers.figure_text(v) for v in (st.p5, st.p50, st.p95, st.mean))]
            if s.truth is not None:
                cells.append(numbers.figure_text(s.truth.get(name)) if name in s.truth else "")
            table.add_row(*cells)
        console.print(table)
        console.print(key_line(SUMMARY_FIGURES), highlight=False)
        if s.truth is not None:
            console.print("set: what the simulator was told to do (its true TTFT and output speed)")
    if (c := s.cold) is not None:
        after = numbers.interval(c.after_s) if c.after_s >= 1 else f"{c.after_s:g} s"
        cold_ms, warm_ms = (
            f"{numbers.figure_text(f.p50, 'ms')} ms ({numbers.count(f.n)})" for f in (c.ttft_cold, c.ttft_warm)
        )
        ttft = f"TTFT p50 cold {cold_ms} vs warm {warm_ms}"
        console.print(f"{c.count} of {s.samples} cold (idle >= {after}): {ttft}", soft_wrap=True, highlight=False)
    for kind, found in s.error_messages.items():
        for m in found:
            console.print(f"  {kind} ({m.count}): {clean.shown(m.message)}", soft_wrap=True, highlight=False)
            if m.hint:
                console.print(f"    hint: {m.hint}", soft_wrap=True, style="yellow", highlight=False)


def summaries(
    samples: Sequence[Sample],
    truth: Mapping[str, dict[str, float]] | None = None,
    cold_after: Mapping[str, float] | None = None,
) -> list[Summary]:
    """One summary per endpoint, in the order they were measured; ``truth``: a simulator's settings by name;
    ``cold_after``: the idle time that made a request cold, by name."""
    by_endpoint: dict[str, list[Sample]] = {}
    for s in samples:
        by_endpoint.setdefault(s.endpoint.name, []).append(s)
    after = cold_after or {}
    return [summarise(name, got, (truth or {}).get(name), after.get(name, 0.0)) for name, got in by_endpoint.items()]


def print_run(out: Console, err: Console, result: RunResult, where: str) -> None:
    r = result.run
    lag_ms, cpu_us = numbers.figure_text(r.loop_lag_p99_ms), numbers.figure_text(r.cpu_us_per_event)
    lag = f"loop lag p99 {lag_ms} ms, {cpu_us} µs CPU per event"
    if r.client_bound:
        err.print(
            f"[bold yellow]warning:[/] this client was the bottleneck ({lag}); timings are inflated. "
            "Lower --concurrency or run on a less busy machine."
        )
    # soft_wrap: one line however narrow the terminal or pipe, so the run id and the seed stay whole.
    line = f"saved {r.completed} samples to {where} (run {r.id[:12]}, --seed {r.seed}; {lag})"
    out.print(line, soft_wrap=True, highlight=False)


def print_warm_cold(out: Console, rows: Sequence[WarmCold]) -> None:
    """A paired workload's warm vs cold TTFT per endpoint (turn 1 cold, turn 2 sent once it ended)."""
    title = "Prompt cache: TTFT p50 (ms) of a prefix sent cold, then warm; warm turns the provider reported cached"
    table = Table(title=title, title_justify="left")
    for col in ("endpoint", "pairs", "cold", "warm", "speed-up", "cached"):
        table.add_column(col, justify="left" if col == "endpoint" else "right")
    for r in rows:
        name = clean.shown(f"{r.provider}/{r.model}") + (" [magenta](simulated)[/]" if r.simulated else "")
        speedup = numbers.DASH if r.speedup is None else f"{r.speedup:.2f}x"
        tokens = r.warm_cached_tokens_p50
        held = f" ({numbers.figure_text(tokens, 'int')} tok)" if tokens else ""
        cached = numbers.percent(r.warm_cached_share) + held
        figures = (numbers.figure_text(r.cold_ttft_p50_ms), numbers.figure_text(r.warm_ttft_p50_ms))
        table.add_row(name, f"{min(r.cold_n, r.warm_n)}", *figures, speedup, cached)
    out.print(table)


def _cell(board: Board, e: Entry, key: str) -> str:
    r, statistic = e.row, board.window.statistic
    if key == "rank":
        if e.too_few:
            return f"too few ({e.n}/{board.query.min_samples})"
        return numbers.DASH if e.rank is None else f"={e.rank}" if e.tied else str(e.rank)
    if key == "name":
        one_shot = f" [cyan](one-shot {r.one_shot})[/]" if r.one_shot else ""
        changed = " [yellow](changed)[/]" if e.change else ""  # what changed is in --json, too long for a cell
        where = f" [blue]@{clean.shown(regions.token(r.region))}[/]" if board.query.region == EACH else ""
        wrong = " [red](fast but wrong)[/]" if rows.fast_but_wrong(r) else ""  # its canary failed too often
        simulated = " [magenta](simulated)[/]" if r.simulated else ""
        return clean.shown(r.name) + where + _badges(e) + wrong + simulated + one_shot + changed
    if key in ("speed", "ttft", "e2e"):
        figure = r.figure(METRIC_OF[key])
        return f"{numbers.figure_text(figure.headline(statistic))} [dim](n={figure.n})[/]"
    if key == "success":
        canary = f" [dim](canary {numbers.percent(r.canary_rate)})[/]" if r.canary_checked else ""
        # Rate-limited samples left out (/methodology): only where there are some, else it is the success rate.
        limited = f" [dim](availability {numbers.percent(r.availability)}, {r.rate_limited} rate-limited)[/]"
        return numbers.percent(r.success_rate) + canary + limited * bool(r.rate_limited)
    if key == "samples":
        # Client-bound, cached and cold samples are left out of the figures (client-bound unless included).
        apart = ((r.client_bound, "client-bound"), (r.cached, "cached"), (r.cold, "cold"))
        return str(r.samples) + "".join(f" [yellow]({n} {what})[/]" for n, what in apart if n)
    if key == "price":  # blended: the one figure that fits a column; JSON has every rate
        c = e.cost
        return numbers.dollars(c.blended if c else None) + (" [yellow](old price)[/]" if c and c.stale else "")
    if key == "cost":
        return numbers.dollars(e.cost.cost if e.cost else None)
    last = numbers.DASH if r.last_at is None else f"{numbers.when(r.last_at, seconds=False)} UTC"
    return last  # a stale row says so beside its name (_badges)


def _badges(e: Entry) -> str:
    """The web row's badges beside the name: failing, stale, not measured any more."""
    failing = f" [red](failing · {numbers.percent(e.row.success_rate)} ok)[/]" if e.failing else ""
    stale = " [yellow](stale)[/]" if e.stale and e.measured else ""
    return failing + stale + ("" if e.measured else " [yellow](not measured any more)[/]")


def _title(board: Board) -> list[str]:
    """The board's title in parts: workload, the window as its samples cover it, the sort; provisional ranks
    said so."""
    q = board.query
    parts = [f"{clean.shown(q.workload)} workload", clean.shown(board.cover.label), f"sorted by {q.sort} {q.direction}"]
    if board.provisional:
        waiting, need = len(board.waiting) + len(board.unsampled), q.min_samples
        endpoints, samples = "endpoint" + "s" * (waiting != 1), "sample" + "s" * (need != 1)
        parts.append(f"[yellow]provisional ranks: {waiting} {endpoints} below {need} {samples}[/]")
    return parts


def print_board(console: Console, board: Board) -> None:
    """The leaderboard as a rich table: the web page's columns, in its order; rows too few to rank are dim."""
    q = board.query
    where = clean.shown(", ".join(f"{k} {v}" for k, v in (("provider", q.provider), ("plan", q.plan)) if v))
    title = "  ·  ".join(_title(board)) + ("  ·  client-bound samples included" if q.include_client_bound else "")
    table = Table(title=title + (f"  ·  {where}" if where else ""), title_justify="left")
    for key, label in TERMINAL_COLUMNS:
        # Names fold rather than truncate: a cut name could be another endpoint's.
        table.add_column(label, justify="left" if key in ("name", "last") else "right", overflow="fold")
    for e in board.entries:
        table.add_row(*(_cell(board, e, key) for key, _ in TERMINAL_COLUMNS), style="dim" if e.too_few else None)
    console.print(table)
    _say_empty(console, board)


def key_line(figures: Iterable[Metric] = BOARD_FIGURES) -> str:
    """What a table's columns leave out of its figures' headers, those with a qualifier: "Output speed: after the
    first chunk, o200k tok/s"."""
    return "  ·  ".join(f"{m.label}: {m.detail}" for m in figures if m.qualifier)


def _say_empty(console: Console, board: Board) -> None:
    if n := board.uncharted:
        console.print(f"{n} successful sample{'s' * (n != 1)}, all client-bound (timed while this client was the "
                      "bottleneck), so no figure yet: --client-bound include counts them")  # fmt: skip
    if not board.entries:
        console.print(f"no samples of the {clean.shown(board.query.workload)} workload in this window (workloads: "
                      f"{clean.shown(', '.join(board.workloads)) or 'none yet'})", soft_wrap=True)  # fmt: skip


def print_presets(console: Console, presets: Sequence[Preset]) -> None:
    """The presets as a table where one fits the terminal; else (narrow, or piped) one record per preset:
    name, protocol and key variable on a line, then the base URL and the note below, nothing cut short. Then
    each gateway's endpoint table, dated, and each preset's published plans."""
    _print_preset_rows(console, presets)
    for p in presets:
        if p.routes is not None:
            console.print(f"\n{p.name} serves each model on its own protocol: its endpoint table of "
                          f"{p.routes.as_of.isoformat()} ({p.routes.source})", highlight=False)  # fmt: skip
            groups = [(str(proto), ", ".join(models)) for proto, models in p.routes.by_protocol().items()]
            rules = [f"{glob} {proto}" for glob, proto in p.routes.rules] + [f"any other {p.protocol}"]
            for label, text in [*groups, ("not listed", ", ".join(rules))]:
                width = max(console.width - 20, 30)  # model ids are whole words: never cut at a hyphen
                lines = textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False) or [""]
                for i, line in enumerate(lines):
                    console.print(f"  {label if i == 0 else '':<17} {line}", highlight=False)
    plans = [f"{p.name}: " + ", ".join(f"{n} {billing}" for n, billing in p.plans) for p in presets if p.plans]
    if plans:
        console.print("\nplans' billing, the default of a config's plan of that name: " + "; ".join(plans),
                      highlight=False)  # fmt: skip


def _print_preset_rows(console: Console, presets: Sequence[Preset]) -> None:
    header = ("preset", "protocol", "base URL", "key variable", "note")
    rows = [(p.name, p.protocol if p.routes is None else "per model", p.base_url, p.api_key_env or "-", p.note)
            for p in presets]  # fmt: skip
    # Whole cells in the first four columns, 30 characters for the note, 3 per column of borders and padding.
    needed = sum(max(len(r[i]) for r in [header, *rows]) for i in range(4)) + 30 + 3 * len(header) + 1
    if console.is_terminal and needed <= console.width:
        table = Table()
        for col in header:
            table.add_column(col, no_wrap=col != "note")
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    indent = " " * 14
    for p in presets:
        protocol = p.protocol if p.routes is None else "per model"
        console.print(f"{p.name:<13} {protocol:<17} {p.api_key_env or '(no key: a local server)'}", highlight=False)
        console.print(indent + p.base_url, soft_wrap=True, highlight=False)
        for line in textwrap.wrap(p.note, max(console.width - len(indent), 30)):
            console.print(indent + line, style="dim", highlight=False)


# What follows each figure's number where the board is packed into lines: a speed's unit says which figure it is.
_UNITS = {
    key: m.unit_text if m.unit == "tok/s" else f"{m.unit_text} {m.noun}"
    for key, m in ((key, metric(figure)) for key, figure in METRIC_OF.items())
}


def _packed(parts: Sequence[str], width: int) -> list[str]:
    """Markup parts joined by " · " into lines at most ``width`` cells wide where they fit (a part is never cut)."""
    lines: list[str] = []
    for part in parts:
        joined = f"{lines[-1]}  ·  {part}" if lines else part
        if lines and Text.from_markup(joined).cell_len <= width:
            lines[-1] = joined
        else:
            lines.append(part)
    return lines


def print_leaderboard(console: Console, board: Board) -> None:
    """The board as print_board's table where it fits the console whole; else (narrow, or piped at 80
    columns) a few lines per endpoint: rank and name, then its figures, success and samples packed into lines
    of the console's width (a line breaks between two figures, never inside one)."""
    drawn = io.StringIO()
    print_board(clean.Console(width=1000, file=drawn, color_system=None), board)  # measured as shown
    if max(map(cell_len, drawn.getvalue().splitlines()), default=0) <= console.width:
        print_board(console, board)
        if board.entries:
            console.print(key_line(), highlight=False)
        return
    for line in _packed(_title(board), console.width):
        console.print(line, soft_wrap=True)
    statistic = board.window.statistic
    for e in board.entries:
        style = "dim" if e.too_few else None
        console.print(f"{_cell(board, e, 'rank'):>3}  {_cell(board, e, 'name')}", style=style, soft_wrap=True)
        figures = []
        for key, unit in _UNITS.items():
            figure = e.row.figure(METRIC_OF[key])
            figures.append(f"{numbers.figure_text(figure.headline(statistic))} {unit} [dim](n={figure.n})[/]")
        rest = [f"success {_cell(board, e, 'success')}", f"samples {_cell(board, e, 'samples')}"]
        if (c := e.cost) and c.price:
            old = " [yellow](old price)[/]" if c.stale else ""
            rest.append(f"{numbers.dollars(c.blended)}/1M{old}, {numbers.dollars(c.cost)}/request")
        rest.append(f"last {_cell(board, e, 'last')}")
        for line in _packed([*figures, *rest], console.width - 5):
            console.print(f"     {line}", style=style, soft_wrap=True, highlight=False)
    _say_empty(console, board)  # the title once, then the line (print_board would draw its title again)
    if board.entries:
        console.print(key_line(), highlight=False)
