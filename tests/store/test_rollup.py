"""The hourly and daily rollups (issue 10, item 3): always what a rebuild from ``samples`` gives, on SQLite and
PostgreSQL, and windows read through them (whole days, whole hours at the day edges, edge hours raw) equal a
recompute from the samples."""

from __future__ import annotations

import dataclasses
import random
import sqlite3
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import psycopg
import pytest

from tests.store.test_database import columns, raw
from tests.store.test_windows import CEREBRAS, DEMO, GROQ, NOW, stream
from tokenpace.config.endpoints import Endpoint
from tokenpace.config.windows import WINDOWS, Window
from tokenpace.errors import StoreError
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.metrics import corrected_ttft
from tokenpace.measure.sample import CACHED_MIN_TOKENS, LOCAL, Network, Origin, Sample, make_sample
from tokenpace.measure.stats import figure
from tokenpace.measure.verdict import ALL, FIGURE_BOUND, NONE, Bound
from tokenpace.store import rollup
from tokenpace.store.columns import (
    COPY_COLUMNS,
    LAG_COLUMNS,
    NETWORK_COLUMNS,
    ORIGIN_COLUMNS,
    RATE_LIMIT_COLUMNS,
    REGION_COLUMNS,
    SAMPLE_COLUMNS,
    TRUTH_COLUMNS,
    sample_values,
)
from tokenpace.store.database import Store, epoch, open_store
from tokenpace.store.migrations import BOOTSTRAP, MIGRATIONS, SHAPE_6, SHAPE_10, SHAPE_13
from tokenpace.store.tally import HourRow, SampleRow
from tokenpace.store.windows import METRICS, endpoint_rows, present

ANTHROPIC = Endpoint("anthropic", "claude", "http://anthropic.invalid/v1", protocol="anthropic")
KINDS = (ErrorKind.RATE_LIMITED, ErrorKind.HTTP_ERROR, ErrorKind.CANCELLED)


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)  # where a PostgreSQL store's rescue file goes
    return str(tmp_path / "tokenpace.db") if request.param == "sqlite" else str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    with open_store(url) as s:
        yield s


KEY = len(rollup.HOURS.key)  # identity, unit, client_bound and the tags (cached, cold)
COUNTED = 7  # samples, ok, one_shot, first_at, last_at, protocol, simulated; then the failures


def normalised(rows: Sequence[Sequence[Any]]) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """Rollup rows by key, their texts as sorted lists: the writer appends in arrival order, a rebuild in time's.
    Each is (7 counts, failures, canary checked, canary passed, the metrics' values)."""
    found = {}
    checks = len(rollup.CURRENT.checks)
    for r in rows:
        counts, failures = tuple(r[KEY : KEY + COUNTED]), r[KEY + COUNTED]
        verdicts, metrics = r[KEY + COUNTED + 1 : KEY + COUNTED + 1 + checks], r[KEY + COUNTED + 1 + checks :]
        values = (sorted(rollup.decode(m)) for m in metrics)
        found[tuple(r[:KEY])] = (*counts, sorted(failures.split()), *verdicts, *values)
    return found


def kept(url: str, level: rollup.RollupLevel = rollup.HOURS) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    return normalised(raw(url, f"SELECT {', '.join(level.columns)} FROM {level.table}"))  # noqa: S608


def rebuilt(url: str, level: rollup.RollupLevel = rollup.HOURS) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """What rollup.rebuild makes of the samples, on a connection of the test's own, rolled back afterwards."""
    select = f"SELECT {', '.join(level.columns)} FROM {level.table}"  # noqa: S608
    if url.startswith("postgresql://"):
        with psycopg.connect(url) as pg:
            rollup.rebuild(pg, "%s")
            rows = pg.execute(select).fetchall()
            pg.rollback()
            return normalised(rows)
    lite = sqlite3.connect(url, isolation_level=None)
    try:
        lite.execute("BEGIN")
        rollup.rebuild(lite, "?")
        rows = lite.execute(select).fetchall()
        lite.execute("ROLLBACK")
    finally:
        lite.close()
    return normalised(rows)


def assert_rollup_right(url: str, published: int) -> None:
    """Every level equals its rebuild and counts every published sample once; a day is its 24 hours summed."""
    for level in rollup.LEVELS:
        found = kept(url, level)
        assert found == rebuilt(url, level), level.table
        assert sum(v[0] for v in found.values()) == published, level.table
    for level in rollup.LEVELS[1:]:  # a quarter or a day is its hours summed
        per = level.seconds // rollup.HOUR
        units: dict[tuple[Any, ...], list[Any]] = {}
        for key, hour in kept(url).items():
            unit = units.setdefault((*key[:5], key[5] // per, *key[6:]), [0, 0, 0, [], 0, 0, *([] for _ in METRICS)])
            for i in range(3):
                unit[i] += hour[i]
            unit[3] = sorted(unit[3] + hour[COUNTED])  # the failures
            for i in (4, 5):  # the canary's counts
                unit[i] += hour[COUNTED - 3 + i]
            for i in range(len(METRICS)):  # each metric's values
                unit[6 + i] = sorted(unit[6 + i] + hour[COUNTED + 3 + i])
        assert units == {k: [*v[:3], *v[COUNTED:]] for k, v in kept(url, level).items()}, level.table


def metric(s: Sample, name: str) -> float | None:
    """A sample's value of a board metric (TTFT less the round trip is computed, as the store computes it)."""
    if name == "ttft_net_ms":
        return corrected_ttft(s.metrics.ttft_ms, None if s.network is None else s.network.rtt_ms)
    value: float | None = getattr(s.metrics, name)
    return value


def sample(endpoint: Endpoint, at: datetime, rng: random.Random, workload: str = "1k") -> Sample:
    """A sample of any kind: ok or failed, one chunk (no output speed) or many, published or not, client-bound,
    measured here or from a region, with the network path measured or not."""
    failure = Failure(rng.choice(KINDS), "boom", 500) if rng.random() < 0.2 else None
    timing = stream(rng.lognormvariate(5, 0.5), rng.uniform(1, 40), chunks=rng.choice((1, 5)), failure=failure)
    one_shot = rng.random() < 0.3
    source: Literal["scheduled", "one-shot"] = "one-shot" if one_shot else "scheduled"
    published = not one_shot or rng.random() < 0.5
    bound = Bound(rng.randrange(1, 8)) if rng.random() < 0.3 else NONE  # any figures flagged
    region = rng.choice((LOCAL, "eu-west", "us-east"))
    network = Network(rng.uniform(1, 50), None, rng.uniform(1, 90)) if region and rng.random() < 0.7 else None
    origin = Origin(region=region, agent=f"{region}-1" if region else None, network=network)
    made = make_sample(
        "run", endpoint, workload, at, timing, source=source, published=published, client_bound=bound, origin=origin
    )
    return truthful(made, rng)


def truthful(s: Sample, rng: random.Random) -> Sample:
    """What issue 22 adds, at random: served from the provider's cache (or told 0 cached tokens), a cold start,
    a canary passed, failed or not asked (and never judged when the request failed)."""
    cached = rng.choice((None, None, 0, 0, 128, 127, 5, 4096))
    verdict = rng.choice((None, True, True, False)) if s.ok else None
    canary = None if verdict is None and rng.random() < 0.5 else "CANARY-7"
    metrics = dataclasses.replace(s.metrics, provider_cached_tokens=cached)
    return dataclasses.replace(s, metrics=metrics, cold=rng.random() < 0.2, canary=canary, canary_ok=verdict)


def test_the_writer_keeps_the_rollup_equal_to_a_rebuild(url: str, store: Store) -> None:
    rng = random.Random(3)
    written = []
    for _ in range(150):
        endpoint = rng.choice((GROQ, CEREBRAS, DEMO, ANTHROPIC))
        at = NOW - timedelta(hours=rng.randrange(80)) + timedelta(seconds=rng.choice((0, 0.5, 1800, 3599.999)))
        written.append(sample(endpoint, at, rng, rng.choice(("1k", "100k"))))
        store.add_sample(written[-1])
    store.flush()
    assert_rollup_right(url, sum(s.published for s in written))
    hours = kept(url)
    assert any(k[6] for k in hours) and any("cancelled" in v[COUNTED] for v in hours.values())
    assert any(k[7] for k in hours) and any(k[8] for k in hours)  # cached and cold rows
    assert sum(v[COUNTED + 1] for v in hours.values()) > sum(v[COUNTED + 2] for v in hours.values()) > 0


@pytest.mark.parametrize("level", rollup.LEVELS, ids=lambda level: level.table)
def test_a_refused_write_counts_once_when_it_goes_in_and_never_when_rescued(
    url: str, store: Store, level: rollup.RollupLevel
) -> None:
    rng = random.Random(4)
    first, second, third = (sample(GROQ, NOW - timedelta(minutes=i), rng) for i in range(3))
    first, second, third = (make_sample("run", GROQ, "1k", s.started_at, s.timeline) for s in (first, second, third))
    store.add_sample(first)
    store.add_sample(first)  # the same id again: refused for its data, rescued, not counted
    with pytest.raises(StoreError, match="rescued"):
        store.flush()
    assert_rollup_right(url, 1)
    raw(url, f"ALTER TABLE {level.table} RENAME TO rows_away")  # the sample goes in, one of its rollup rows cannot
    store.add_sample(second)
    with pytest.raises(StoreError):
        store.flush()
    assert store.unsaved == [second] and len(raw(url, "SELECT id FROM samples")) == 1  # the insert rolled back
    raw(url, f"ALTER TABLE rows_away RENAME TO {level.table}")
    store.add_sample(third)
    store.flush()
    assert store.unsaved == []
    assert_rollup_right(url, 3)


def test_the_migration_builds_the_rollup_from_samples_already_there(url: str) -> None:
    """A database at version 3 (before published/client_bound): migration 4 unpublishes one-shot runs' samples,
    and the rollup, built last, counts only the others; windows read through it equal a recompute."""
    rng = random.Random(5)
    later = (*ORIGIN_COLUMNS, *REGION_COLUMNS, *NETWORK_COLUMNS, *TRUTH_COLUMNS, *LAG_COLUMNS, *RATE_LIMIT_COLUMNS)
    old = [c for c in SAMPLE_COLUMNS if c not in (*later, *COPY_COLUMNS)]
    before = []
    for i in range(60):
        s = sample(rng.choice((GROQ, DEMO)), NOW - timedelta(minutes=37 * i), rng)
        before.append(make_sample(("serve-run", "cli-run")[i % 2], s.endpoint, s.workload, s.started_at, s.timeline))
    statements = [BOOTSTRAP, *(s for _, steps in MIGRATIONS[:3] for s in steps)]
    statements += [f"INSERT INTO schema_migrations VALUES ({v}, 0)" for v, _ in MIGRATIONS[:3]]  # noqa: S608
    run = "INSERT INTO runs (id, started_at, finished_at, command, concurrency, requested, completed, client_bound, "
    run += "tool_version) VALUES ('{}', 0, 0, '{}', 1, 1, 1, 0, 'x')"
    statements += [run.format("serve-run", "tokenpace serve"), run.format("cli-run", "tokenpace run groq")]
    for statement in statements:
        raw(url, str(statement))
    insert = f"INSERT INTO samples ({', '.join(old)}) VALUES ({', '.join('?' * len(old))})"  # noqa: S608
    for s in before:
        values = sample_values(s)
        values |= {"started_at": epoch(s.started_at), "simulated": int(s.endpoint.simulated), "ok": int(s.ok)}
        raw(url, insert, tuple(values[c] for c in old))
    with open_store(url) as store:
        migrated = store.samples()
        assert_rollup_right(url, 30)
        assert_windows_equal_a_recompute(store, [s for s in migrated if s.published], [NOW])


def recompute(samples: Sequence[Sample], window: Window, now: datetime, long: Sequence[str], include: bool) -> Any:
    """What a window should say, from the samples themselves: per key, counts, kinds, times and Figures."""
    found: dict[tuple[str, ...], list[Sample]] = {}
    for s in samples:
        if s.published and epoch(now) - window.span(s.workload, long) < epoch(s.started_at) <= epoch(now):
            e = s.endpoint
            found.setdefault((e.provider, e.plan, e.model, s.workload), []).append(s)
    expected = {}
    for key, group in sorted(found.items()):
        counted = [s for s in group if s.ok and not cached(s)]
        used = [s for s in counted if not s.cold and (include or s.client_bound & ALL != ALL)]  # a figure counts

        def kept(s: Sample, m: str) -> bool:
            return include or not s.client_bound & FIGURE_BOUND[m]

        fresh = [s for s in counted if not s.cold]
        figures = [figure([v for s in fresh if kept(s, m) and (v := metric(s, m)) is not None]) for m in METRICS]
        cold = figure([v for s in counted if s.cold and kept(s, "ttft_ms") and (v := s.metrics.ttft_ms) is not None])
        kinds = Counter(s.error_kind.value for s in group if s.error_kind and not s.ok)
        times = min(s.started_at for s in group), max(s.started_at for s in group)
        truth = (sum(map(cached, group)), sum(s.cold for s in group), cold,
                 sum(s.canary_ok is not None for s in group), sum(s.canary_ok is True for s in group))  # fmt: skip
        expected[key] = (len(group), sum(s.ok for s in group), sum(bool(s.client_bound) for s in group), len(used),
                         sum(s.source == "one-shot" for s in group), dict(kinds), times, figures, truth)  # fmt: skip
    return expected


def cached(s: Sample) -> bool:
    """Served (in part) from the provider's prompt cache: at least CACHED_MIN_TOKENS cached tokens."""
    return (s.metrics.provider_cached_tokens or 0) >= CACHED_MIN_TOKENS


def assert_windows_equal_a_recompute(store: Store, samples: Sequence[Sample], nows: Sequence[datetime]) -> None:
    for now in nows:
        for window, long in ((WINDOWS["24h"], ()), (WINDOWS["72h"], ("100k",)), (WINDOWS["7d"], ("100k",))):
            for include in (False, True):
                rows = endpoint_rows(store, window, now, long, include_client_bound=include)
                got = {
                    (r.provider, r.plan, r.model, r.workload): (
                        r.samples, r.ok, r.client_bound, r.usable, r.one_shot, dict(r.errors),
                        (r.first_at, r.last_at), [r.figure(m) for m in METRICS],
                        (r.cached, r.cold, r.cold_ttft_ms, r.canary_checked, r.canary_passed),
                    )
                    for r in rows
                }  # fmt: skip
                assert got == recompute(samples, window, now, long, include), (now, window.name, include)
                for workload in ("1k", "100k"):  # a board's read: one workload, the span its own
                    one = endpoint_rows(store, window, now, long, workload=workload, include_client_bound=include)
                    assert one == [r for r in rows if r.workload == workload]
            menus = {(s.endpoint.provider, s.endpoint.plan, s.workload, s.region) for s in samples if s.published
                     and epoch(now) - window.span(s.workload, long) < epoch(s.started_at) <= epoch(now)}  # fmt: skip
            assert sorted(present(store, window, now, long)) == sorted(menus)


def write_then_recompute(store: Store, times: list[datetime], rng: random.Random, nows: list[datetime]) -> None:
    """A sample at each time, on three endpoints and two workloads in turn; every window then equals a recompute."""
    written = []
    for i, at in enumerate(times):
        written.append(sample((GROQ, CEREBRAS, DEMO)[i % 3], at, rng, ("1k", "100k")[i % 2]))
        store.add_sample(written[-1])
    store.flush()
    assert_windows_equal_a_recompute(store, written, nows)


def test_windows_whose_edges_cut_hours_equal_a_recompute(store: Store) -> None:
    """Now on the hour and inside one; samples exactly at now - span, at now, after now, on hour boundaries."""
    rng = random.Random(6)
    nows = [NOW, NOW + timedelta(minutes=30, microseconds=250_000), NOW - timedelta(microseconds=1)]
    times = [NOW - timedelta(hours=rng.uniform(0, 15 * 24)) for _ in range(120)]
    for now in nows:
        for span in (timedelta(hours=24), timedelta(hours=72), timedelta(days=7), timedelta(days=14)):
            start = now - span
            on_hour = start.replace(minute=0, second=0, microsecond=0)
            times += [start, start + timedelta(microseconds=1), on_hour, on_hour + timedelta(hours=1)]
        times += [now, now + timedelta(seconds=1), now.replace(minute=0, second=0, microsecond=0)]
    write_then_recompute(store, times, rng, nows)


def test_windows_whose_edges_cut_days_and_hours_equal_a_recompute(store: Store) -> None:
    """Now at midnight, just before and after it, and inside a day; samples on day and hour boundaries around
    both edges of every span, so whole days, the hours at their edges and the raw edges all hold some."""
    rng = random.Random(7)
    midnight = NOW.replace(hour=0)
    nows = [midnight, midnight - timedelta(microseconds=1), midnight + timedelta(hours=1, microseconds=1),
            NOW + timedelta(hours=9, minutes=17)]  # fmt: skip
    times = [NOW - timedelta(hours=rng.uniform(0, 16 * 24)) for _ in range(150)]
    for now in nows:
        for span in (timedelta(hours=24), timedelta(hours=72), timedelta(days=7), timedelta(days=14)):
            start = now - span
            day = start.replace(hour=0, minute=0, second=0, microsecond=0)
            hour = start.replace(minute=0, second=0, microsecond=0)
            for edge in (day, day + timedelta(days=1), hour, hour + timedelta(hours=1), start):
                times += [edge - timedelta(microseconds=1), edge, edge + timedelta(microseconds=1)]
        day = now.replace(hour=0, minute=0, second=0, microsecond=0)
        times += [now, now + timedelta(seconds=1), day, day - timedelta(microseconds=1), day + timedelta(hours=23)]
    write_then_recompute(store, times, rng, nows)


def test_cover_tiles_the_span_with_days_hours_and_two_raw_edges() -> None:
    """Each hour strictly inside (low, now] is read once, from a day or an hour; the raw edges hold the rest."""
    rng = random.Random(8)
    day, hour = rollup.DAY, rollup.HOUR
    spans = [(0.0, 1.0), (0.0, float(day)), (1.0, 3.0 * day), (float(day), 2.0 * day), (5.5, 5.5 + 14 * day)]
    spans += [(low, low + rng.uniform(0, 15 * day)) for low in (rng.uniform(1e9, 2e9) for _ in range(300))]
    for low, now in spans:
        ranges, edges = rollup.cover(low, now)
        hours = Counter(h for level, a, b in ranges for u in range(a, b) for h in range(u * level.seconds // hour,
                        (u + 1) * level.seconds // hour))  # fmt: skip
        h0, h1 = rollup.hour_of(low) + 1, rollup.hour_of(now)
        assert hours == Counter(range(h0, h1)), (low, now)
        assert sum(level is rollup.DAYS for level, _, _ in ranges) <= 1
        assert all(-(-a // 6) * 6 + 6 > b for level, a, b in ranges if level is rollup.HOURS)  # no whole quarter
        assert sum(level is rollup.QUARTERS for level, _, _ in ranges) <= 2  # one each side of the days
        if h0 < h1:
            assert edges == [(">", low, "<", float(h0 * hour)), (">=", float(h1 * hour), "<=", now)]
            whole = [(a, b) for level, a, b in ranges if level is rollup.DAYS]
            assert len(whole) == (-(-h0 // 24) < h1 // 24)  # a day is read whole whenever one fits
        else:
            assert ranges == [] and edges == [(">", low, "<=", now)]


def migrate_to(url: str, version: int) -> None:
    """The history up to ``version`` applied, as a tokenpace of that version left the database."""
    postgres = url.startswith("postgresql://")
    conn: Any = psycopg.connect(url) if postgres else sqlite3.connect(url)
    ph = "%s" if postgres else "?"
    try:
        conn.execute(BOOTSTRAP)
        for v, steps in MIGRATIONS:
            if v <= version:
                for step in steps:
                    step(conn, ph) if callable(step) else conn.execute(step)
                conn.execute(f"INSERT INTO schema_migrations VALUES ({v}, 0)")  # noqa: S608
        conn.commit()
    finally:
        conn.close()


def test_migration_13_keys_the_rollups_by_cache_and_cold_start_and_counts_the_canary(url: str) -> None:
    """A database at version 12 holds migration 10's rollups, whatever the code's shape is now (its history is
    frozen), counted by migration 11's trigger on PostgreSQL; migration 13 remakes them in the current shape from
    samples carrying the truth columns, and windows read through them equal a recompute."""
    rng = random.Random(9)
    migrate_to(url, 12)
    assert [c.lower() for c in columns(url, "sample_hours")] == list(rollup.HOURS.columns_of(SHAPE_10))
    written = insert_before_15(
        url, [sample(rng.choice((GROQ, DEMO)), NOW - timedelta(minutes=53 * i), rng) for i in range(80)]
    )
    assert {r[0] for r in raw(url, "SELECT SUM(samples) FROM sample_days")} == {
        sum(s.published for s in written) if url.startswith("postgresql://") else None
    }  # the old trigger counted them in the old shape; SQLite counts in Python, which raw inserts skip
    with open_store(url) as store:
        assert columns(url, "sample_hours") == list(rollup.HOURS.columns)
        assert_rollup_right(url, sum(s.published for s in written))
        assert_windows_equal_a_recompute(store, [s for s in written if s.published], [NOW])
        assert any(r.cached and r.cold and r.canary_checked > r.canary_passed for r in store_rows(store))


def insert_before_15(url: str, samples: Sequence[Sample]) -> list[Sample]:
    """Insert samples as a database before migration 15 held them (client_bound 0 or 1, no client_lag_ms); the
    samples as migration 15 makes them: one flagged before is flagged for every figure."""
    old = [c for c in SAMPLE_COLUMNS if c not in (*LAG_COLUMNS, *RATE_LIMIT_COLUMNS, *COPY_COLUMNS)]
    insert = f"INSERT INTO samples ({', '.join(old)}) VALUES ({', '.join('?' * len(old))})"  # noqa: S608
    for s in samples:
        values = sample_values(s)
        values |= {"started_at": epoch(s.started_at), "ok": int(s.ok), "client_bound": int(bool(s.client_bound))}
        raw(url, insert, tuple(int(v) if isinstance(v, bool) else v for v in (values[c] for c in old)))
    return [dataclasses.replace(s, client_bound=ALL if s.client_bound else NONE) for s in samples]


def test_migration_15_flags_every_figure_of_a_sample_flagged_before_and_bounds_the_lag(url: str) -> None:
    """Before migration 15 a client-bound sample was left out whole: it becomes one flagged for every figure, in
    samples and in every rollup alike (windows read through them equal a recompute), and the lag bound column
    refuses what no lag can be."""
    rng = random.Random(15)
    migrate_to(url, 13)
    written = insert_before_15(
        url, [sample(rng.choice((GROQ, DEMO)), NOW - timedelta(minutes=41 * i), rng) for i in range(60)]
    )
    assert {r[0] for r in raw(url, "SELECT DISTINCT client_bound FROM samples")} == {0, 1}
    postgres = url.startswith("postgresql://")
    conn: Any = psycopg.connect(url) if postgres else sqlite3.connect(url)
    try:  # the rollups as version 13 kept them (SQLite's writer counts in Python, which raw inserts skip)
        rollup.rebuild(conn, "%s" if postgres else "?", shape=SHAPE_13)
        conn.commit()
    finally:
        conn.close()
    assert {r[0] for r in raw(url, "SELECT DISTINCT client_bound FROM sample_days")} == {0, 1}
    with open_store(url) as store:
        assert {r[0] for r in raw(url, "SELECT DISTINCT client_bound FROM samples")} == {0, int(ALL)}
        assert_rollup_right(url, sum(s.published for s in written))
        assert_windows_equal_a_recompute(store, [s for s in written if s.published], [NOW])
        assert sorted(s.client_bound for s in store.samples()) == sorted(s.client_bound for s in written)
    for bad in (-1.0, float("inf"), float("nan")) if url.startswith("postgresql://") else (-1.0, float("inf")):
        with pytest.raises((sqlite3.IntegrityError, psycopg.errors.CheckViolation)):
            raw(url, "UPDATE samples SET client_lag_ms = ?", (bad,))


def store_rows(store: Store) -> list[Any]:
    return endpoint_rows(store, WINDOWS["7d"], NOW)


def test_rows_are_read_by_the_names_their_select_lists() -> None:
    """The windows read a rollup row and an edge sample by name (store/tally.py): each shape's names are the columns
    its SELECT lists, in its order, so a column added to one in the middle moves no value into another's place."""
    assert HourRow._fields == tuple(c for c in rollup.HOURS.columns if c != rollup.HOURS.unit)
    assert SampleRow._fields == rollup.CURRENT.names
    assert len(rollup.CURRENT.names) == len(rollup.CURRENT.raw.split(", "))
    for name, sql in rollup.DERIVED.items():
        assert rollup.CURRENT.raw.split(", ")[rollup.CURRENT.names.index(name)] == sql.format(row="")
    assert SHAPE_10.names[-4:] == ("output_speed", "ttft_ms", "e2e_ms", "ttft_net_ms")  # no tags, no canary
    assert "canary_ok" not in SHAPE_10.names and "cached" not in SHAPE_6.names
