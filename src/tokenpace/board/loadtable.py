"""What the terminal shows of a load test: a row per load level, and of a comparison, a table per level.

The load column names the rate asked for (``rate 4/s``, and ``#2`` for the second run of ``--repeat``);
``req/s`` beside it is what the endpoint answered; ``dispatch P99`` is how late the client itself sent (sent -
scheduled start), and a level it makes invalid says so under the table with its figures from schedule. A
figure counted in tokens names whose tokens under it (the catalogue's ``tokens``): o200k, and where the
server's usage reported its own count, output tok/s and TPOT P50 in those too.

Figures are written by board.numbers (ms whole, tok/s one decimal below 100); a request rate keeps two
decimals below 10, where a sweep's low levels live (0.25 req/s is not "0.2").
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from tokenpace.board import console as clean
from tokenpace.board import numbers
from tokenpace.board.compare import Comparison, LevelChange, describe_change
from tokenpace.load.figures import EARLY_STOPPED, TAIL_Q
from tokenpace.load.results import BenchPoint, BenchResult
from tokenpace.measure.catalogue import UNIT_TEXT, metric
from tokenpace.measure.stats import ES_CONFIDENCE, commonest


def _head(key: str, under: str = "") -> str:
    """A two-line header: a figure's narrow label (measure/catalogue.py) over its statistic or unit ("TTFT" over
    "P50"), or the label alone on two lines ("SLO" over "met"); a figure in the server's tokens says so on a
    third line."""
    m = metric(key)
    head = f"{m.narrow}\n{under}" if under else m.narrow.replace(" ", "\n", 1)
    return f"{head}\n{m.tokens}" if m.tokens == "server" else head  # beside o200k's column of the same label


def _rate_head(key: str) -> str:
    return _head(key, metric(key).unit_text)


# Left out below 120 columns (an invalid level's dispatch delay gets a line of its own).
NARROW_DROPS = (_head("tpot_ms", "P99"), _head("itl_ms", "P99"), _head("concurrency_held"), _head("wait_ms", "P99"))
# Then, in turn, while the table is wider than the terminal (an SLO's and the client's columns, 4-digit TTFTs).
NARROWER_DROPS = (
    _head("tpot_server_ms", "P50"),
    _rate_head("output_tokens_per_s_server"),
    _head("tpot_ms", "P50"),
    _head("e2e_ms", "P50"),
    _rate_head("output_tokens_per_s"),
    _head("ttft_ms", "P99"),
)
_NARROW_LATENCIES = tuple(metric(key).narrow for key in ("ttft_ms", "tpot_ms", "e2e_ms"))  # a tag's line
UNBOUNDED = 10_000  # columns: a table measured at its natural width
VERDICT_STYLE = {"better": "green", "worse": "bold red", "same": "dim", "n/a": "dim"}


def server_tokens(result: BenchResult) -> bool:
    """Some level has a figure in the server's tokens: its usage reported them."""
    return any(p.figures.tpot_server.n or p.figures.output_tokens_per_s_server is not None for p in result.points)


def _level_columns(result: BenchResult) -> list[str]:
    """Two-line headers and no borders: fourteen columns fit a 120-column terminal."""
    server = server_tokens(result)
    cols = ["load", "ok/\nall", _rate_head("request_rate"), _rate_head("output_tokens_per_s")]
    cols += [_rate_head("output_tokens_per_s_server")] if server else []
    cols += [_head(key, stat) for key in ("ttft_ms", "tpot_ms") for stat in ("P50", "P99")]
    cols += [_head("tpot_server_ms", "P50")] if server else []
    cols += [_head("itl_ms", "P99"), _head("e2e_ms", "P50")]
    cols += [_rate_head("goodput"), _head("slo_attainment")] if result.slo is not None else []
    cols += [_head("concurrency_held"), _head("wait_ms", "P99")]
    return cols + (["client"] if any(p.client_bound or p.invalid for p in result.points) else [])


def _row(p: BenchPoint, slo: bool, flag: bool, server: bool) -> list[str]:
    f = p.figures
    tok_s: list[float | None] = [f.output_tokens_per_s]
    tpot = [f.tpot.p50, f.tpot.p99]
    if server:
        tok_s, tpot = [*tok_s, f.output_tokens_per_s_server], [*tpot, f.tpot_server.p50]
    ms = [numbers.figure_text(v, "ms") for v in (f.ttft.p50, f.ttft.p99, *tpot, f.itl.p99, f.e2e.p50)]
    cells = [load_label(p), f"{f.ok}/{f.requests}", numbers.rate(f.request_rate)]
    cells += [*(numbers.figure_text(v) for v in tok_s), *ms]
    cells += [numbers.rate(f.goodput), numbers.percent(f.slo_attainment)] if slo else []
    cells += [f"{f.concurrency_held:.1f}", numbers.figure_text(f.wait.p99, "ms")]
    state = "[bold red]invalid[/]" if p.invalid else "[bold yellow]bound[/]" if p.client_bound else "ok"
    return cells + ([state] if flag else [])


def load_label(p: BenchPoint) -> str:
    """The load, and which run of --repeat: "concurrency 4 #2"."""
    return p.load.describe() + (f" #{p.repeat}" if p.repeat else "")


def _table(result: BenchResult, columns: list[str], shown: list[int]) -> Table:
    slo = f"  ·  SLO {result.slo.describe()}" if result.slo is not None else ""
    said = "  ·  ".join(clean.shown(t) for t in (result.endpoint, result.protocol, f"dataset {result.dataset}"))
    title = said + slo
    title += "  ·  latencies in ms"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=0, show_edge=False)
    for i in shown:
        col = columns[i]
        table.add_column(col, justify="left" if col == "load" else "right", no_wrap=True)
    flag, server = any(p.client_bound or p.invalid for p in result.points), server_tokens(result)
    for p in result.points:
        cells = _row(p, result.slo is not None, flag, server)
        table.add_row(*(cells[i] for i in shown))
    return table


def fitting_table(console: Console, result: BenchResult) -> Table:
    """The level table with as many columns as fit the terminal whole: below 120 columns the tails and the
    concurrency held give way (NARROW_DROPS), then, while it is still too wide, NARROWER_DROPS in turn; never a
    header or a number cut short."""
    columns = _level_columns(result)
    shown = [i for i, c in enumerate(columns) if console.width >= 120 or c not in NARROW_DROPS]
    table = _table(result, columns, shown)
    for drop in NARROWER_DROPS:
        if Measurement.get(console, console.options.update_width(UNBOUNDED), table).maximum <= console.width:
            break
        shown = [i for i in shown if columns[i] != drop]
        table = _table(result, columns, shown)
    return table


def print_result(console: Console, result: BenchResult) -> None:
    """A row per load level (latencies in ms), then per level its errors and tags, then the saturation rate."""
    console.print(fitting_table(console, result))
    console.print(legend_line(server_tokens(result)), highlight=False)
    for p in result.points:
        f = p.figures
        if p.invalid:
            console.print(
                f"  [bold red]{clean.shown(load_label(p))} invalid:[/] {clean.shown(p.invalid)}", soft_wrap=True
            )
            console.print(f"    {clean.shown(schedule_line(p))}", soft_wrap=True, highlight=False)
        if f.errors:
            kinds = ", ".join(f"{kind} {n}" for kind, n in commonest(f.errors)[:5])
            console.print(f"  {p.load.describe()}: errors {clean.shown(kinds)}", soft_wrap=True, highlight=False)
        if f.ok:
            console.print(f"  {clean.shown(tail_line(p))}", highlight=False)  # wrapped: it is long
        if p.workers:
            console.print(f"  {clean.shown(workers_line(p))}", highlight=False)
        for t in f.by_tag:
            ms = "  ".join(
                f"{name} P50 {numbers.figure_text(fig.p50, 'ms')} ms ({numbers.count(fig.n)})"
                for name, fig in zip(_NARROW_LATENCIES, (t.ttft, t.tpot, t.e2e), strict=True)
            )
            line = f"  {p.load.describe()}  ·  {clean.shown(t.tag or '(untagged)')}: {t.ok}/{t.requests} ok  {ms}"
            console.print(line, soft_wrap=True, highlight=False)
    if any(p.client_bound for p in result.points):
        console.print("[yellow]client bound:[/] this client lagged there; its timings are inflated")
    if (said := saturation_line(result)) is not None:
        console.print(said, soft_wrap=True, highlight=False)


def tail_line(p: BenchPoint) -> str:
    """A level's P99s, each with its n and MLPerf's early-stopping estimate: "concurrency 4 P99: TTFT 412 ms
    (n=300; early stopping at 99%: P97.8 ≤ 430 ms, P99 needs 662)  TPOT ..."."""
    f = p.figures
    said = []
    for name in EARLY_STOPPED:
        fig, es = getattr(f, name), f.early_stopping.get(name)
        stop = (
            "" if es is None else f"; early stopping at {ES_CONFIDENCE:.0%}: {numbers.early_stop_text(es, 'ms', 'ms')}"
        )
        value = numbers.figure_text(fig.p99, "ms")  # TAIL_Q's percentile
        said.append(f"{metric(name + '_ms').narrow} {value} ms ({numbers.count(fig.n)}{stop})")
    return f"{load_label(p)} {numbers.percentile_name(TAIL_Q)}: " + "  ".join(said)


def workers_line(p: BenchPoint) -> str:
    """Each worker process's own verdict on a level it shared: "concurrency 256 on 2 workers: #0 (128 streams)
    loop lag P99 1.2 ms, 31 µs CPU per event; #1 (128 streams) ..., client-bound"."""
    said = []
    for w in p.workers:
        part = f"{w.concurrency} streams" if w.rate is None else f"{numbers.rate(w.rate)} req/s"
        lag, cpu = numbers.figure_text(w.loop_lag_p99_ms), numbers.figure_text(w.cpu_us_per_event)
        bound = ", client-bound" if w.client_bound else ""
        said.append(f"#{w.worker} ({part}) loop lag P99 {lag} ms, {cpu} µs CPU per event{bound}")
    return f"{load_label(p)} on {len(p.workers)} workers: " + "; ".join(said)


def legend_line(server: bool = False) -> str:
    """What the narrow headers leave out: whose tokens TPOT is per, and that throughput is the whole run's (and,
    with ``server``, the same of the columns in the server's tokens)."""
    keys = ("tpot_ms", "output_tokens_per_s") + (("tpot_server_ms", "output_tokens_per_s_server") if server else ())
    return "  ·  ".join(f"{' '.join(_head(k).split())}: {metric(k).detail}" for k in keys)


def saturation_line(result: BenchResult) -> str | None:
    """What an auto sweep found, as one line: the bracket and why the sweep stopped there (None: no auto sweep)."""
    b = result.bracket
    if b is None:  # a document written before brackets: its one rate
        return None if result.saturation is None else f"saturation: {numbers.rate(result.saturation)} req/s offered"
    if b.low is None:
        return f"no saturation rate: {b.stopped}"
    if b.high is None:
        return f"no saturation found: kept up with every rate up to {numbers.rate(b.low)} req/s (stopped: {b.stopped})"
    low, high = numbers.rate(b.low), numbers.rate(b.high)
    return (
        f"saturation between {low} and {high} req/s offered: kept up with {low}, not with {high} (stopped: {b.stopped})"
    )


def schedule_line(p: BenchPoint) -> str:
    """Dispatch delay P50/P90/P99/max, and TTFT and E2E from the scheduled start beside those from the send."""
    f = p.figures
    w = f.wait
    delay = " / ".join(numbers.figure_text(v, "ms") for v in (w.p50, w.p90, w.p99, w.max))
    ttft, e2e = (metric(key).narrow for key in ("ttft_ms", "e2e_ms"))
    pairs = ((ttft, f.ttft, f.ttft_from_schedule), (e2e, f.e2e, f.e2e_from_schedule))
    lat = "  ".join(
        f"{name} P50 {numbers.figure_text(sent.p50, 'ms')} -> {numbers.figure_text(sched.p50, 'ms')}, "
        f"P99 {numbers.figure_text(sent.p99, 'ms')} -> {numbers.figure_text(sched.p99, 'ms')}"
        for name, sent, sched in pairs
    )
    n = numbers.count(w.n)
    return f"{metric('wait_ms').noun} P50/P90/P99/max {delay} ms ({n}) · from send -> from schedule (ms): {lat}"


def _value(c: LevelChange, v: float | None) -> str:
    if c.unit == "share":
        return numbers.percent(v)
    if c.unit == "req/s":
        return numbers.rate(v)
    if c.unit in ("ms", "ms/tok") and v is not None:
        return f"{numbers.figure_text(v, 'ms')} {UNIT_TEXT[c.unit]}"
    return numbers.figure_text(v)


def _with_interval(
    c: LevelChange, v: float | None, interval: tuple[float, float] | None, ns: tuple[int, ...] = ()
) -> str:
    """The value, and its 95 % interval and n dim beneath it: "102 ms" over "98-110, n=300" (n per repeat:
    "n=300/298/301")."""
    unit = f" {UNIT_TEXT[c.unit]}"
    below = [] if interval is None else ["-".join(_value(c, x).removesuffix(unit) for x in interval)]
    below += ["n=" + "/".join(f"{n:,}" for n in ns)] if ns else []
    return _value(c, v) + (f"\n[dim]{', '.join(below)}[/]" if below else "")


def print_comparison(console: Console, comparison: Comparison) -> None:
    """Per compared load level a table of figure, A, B, change and verdict; then what was not compared and
    one verdict line."""
    for note in comparison.notes:
        console.print(f"[yellow]note:[/] {clean.shown(note)}", soft_wrap=True, highlight=False)
    for pc in comparison.points:
        runs = "" if pc.repeats == (1, 1) else f"  ·  repeats A {pc.repeats[0]}, B {pc.repeats[1]} (medians)"
        table = Table(title=clean.shown(pc.load) + runs, title_justify="left")
        for col in ("figure", "A", "B", "change", "verdict"):
            table.add_column(col, justify="left" if col in ("figure", "verdict") else "right")
        for c in pc.changes:
            name = c.figure if c.headline else f"{c.figure} [dim](not in the verdict)[/]"
            verdict = f"[{VERDICT_STYLE[c.verdict]}]{c.verdict}[/]"
            a, b = _with_interval(c, c.a, c.a_interval, c.a_n), _with_interval(c, c.b, c.b_interval, c.b_n)
            table.add_row(name, a, b, describe_change(c), verdict)
        console.print(table)
        for note in pc.notes:
            console.print(f"  [yellow]{clean.shown(note)}[/]", highlight=False)
    for run, loads in (("A", comparison.only_a), ("B", comparison.only_b)):
        if loads:
            console.print(f"only in run {run} (not compared): {clean.shown(', '.join(loads))}", soft_wrap=True)
    console.print(verdict_line(comparison), soft_wrap=True, highlight=False)


def verdict_line(c: Comparison) -> str:
    """One line: regressed (and what), improved, the same within the threshold, or nothing to compare."""
    limit = f"{c.threshold:.0%}" if (c.threshold * 100).is_integer() else f"{c.threshold:.1%}"
    if c.verdict == "incomparable":
        return "[bold red]nothing compared:[/] the runs share no load level (same concurrency or rate)"
    if c.verdict == "regressed":
        worse = (
            f"{pc.load}: " + ", ".join(f"{ch.figure} {describe_change(ch)}" for ch in bad)
            for pc in c.points
            if (bad := [ch for ch in pc.changes if ch.headline and ch.verdict == "worse"])
        )
        return f"[bold red]regressed[/] beyond {limit}: " + clean.shown("; ".join(worse))
    if c.verdict == "improved":
        return f"[green]improved[/]: no headline figure worse beyond {limit}, some better"
    return f"same: no headline figure moved beyond {limit} and outside its run-to-run noise"
