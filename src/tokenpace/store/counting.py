"""On PostgreSQL the database itself counts each published sample in the rollups: a trigger on ``samples``.

Region agents insert samples with roles of their own, and such a role must not write the rollups the board
reads (it could then rewrite every region's figures). So on PostgreSQL the rollups are kept by an ``AFTER
INSERT`` trigger whose function is ``SECURITY DEFINER``: it runs as the role that migrated the schema (the
central one, the tables' owner), with its ``search_path`` fixed to the schema so that an agent cannot slip in
tables of its own, and an agent's role needs no right on the rollups at all. It computes exactly what
:func:`rollup.add` does in Python (hours, quarters and days by :func:`rollup.hour_of`'s rule, values as
``float8send``'s IEEE 754 bits big-endian, which is :func:`rollup.encode`), so a rebuild still equals what was
kept. A row skipped by ``ON CONFLICT DO NOTHING`` fires no trigger: a retried job is counted once. It refuses a
sample whose figures no measurement can produce (measure/bounds.py), as the samples' own CHECK does since
migration 14, so no such value ever reaches the rollups.

SQLite has one writer, the central process, and keeps counting in Python (``Store._write``).
"""

from __future__ import annotations

from typing import Any

from tokenpace.measure.bounds import bounds_of
from tokenpace.store import rollup

FUNCTION = "tokenpace_count_sample"
TRIGGER = "tokenpace_count_sample"
COUNTED = ("samples", "ok", "one_shot", "first_at", "last_at", "protocol", "simulated", "failures")


def _new(name: str) -> str:
    """A metric of the new row, as SQL (rollup.DERIVED's over its columns)."""
    return rollup.DERIVED[name].format(row="NEW.") if name in rollup.DERIVED else f"NEW.{name}"


def _metric(name: str) -> str:
    """A metric's text for an ok sample: its value's bits as 16 hex digits, or '' for NULL (as rollup.add skips)."""
    value = _new(name)
    return f"CASE WHEN NEW.ok = 0 THEN '' ELSE coalesce(encode(float8send({value}), 'hex'), '') END"


# The canary's counts of one sample: its verdict known, and passed (canary_ok is 0/1 or NULL).
_CHECKS = {"canary_checked": "(NEW.canary_ok IS NOT NULL)::integer", "canary_passed": "coalesce(NEW.canary_ok, 0)"}


def _new_row_tag(name: str) -> str:
    """A key tag of one sample: rollup.TAGS' SQL over the new row's columns."""
    return rollup.TAGS[name].format(row="NEW.")


def _valid(shape: rollup.Shape) -> str:
    """True when every figure the rollups keep is NULL or within its bounds (measure/bounds.py; NaN never is)."""
    figures = []
    for name in shape.metrics:
        least, greatest = bounds_of(name)
        figures.append(f"coalesce(({_new(name)}) BETWEEN {least!r} AND {greatest!r}, true)")
    return " AND ".join(figures)


def _upsert(level: rollup.RollupLevel, shape: rollup.Shape) -> str:
    """The level's upsert of one sample, in PL/pgSQL; ``h`` holds the sample's hour."""
    per = level.seconds // rollup.HOUR
    unit = "h" if per == 1 else f"floor(h / {per}.0)::bigint"  # Python's h // per, for negative h too
    ident = [f"NEW.{c}" for c in shape.ident]
    counts = [
        "1", "NEW.ok", "(NEW.source = 'one-shot')::integer", "NEW.started_at", "NEW.started_at", "NEW.protocol",
        "NEW.simulated", f"CASE WHEN NEW.ok = 0 THEN ' ' || coalesce(NEW.error_kind, '{rollup.UNKNOWN}') ELSE '' END",
    ]  # fmt: skip
    tags = [_new_row_tag(t) for t in shape.tags]
    checks = [_CHECKS[c] for c in shape.checks]
    values = [*ident, unit, "NEW.client_bound", *tags, *counts, *checks, *(_metric(m) for m in shape.metrics)]
    columns = level.columns_of(shape)
    assert len(values) == len(columns)
    conflict = f"ON CONFLICT ({', '.join(level.key_of(shape))}) DO UPDATE SET {rollup.upsert_set(level.table, shape)}"
    return f"INSERT INTO {level.table} ({', '.join(columns)}) VALUES ({', '.join(values)}) {conflict};"  # noqa: S608


def function_sql(schema: str, shape: rollup.Shape) -> str:
    """The trigger's function, its search_path fixed to ``schema`` (quoted) and pg_temp last."""
    body = "\n    ".join(_upsert(level, shape) for level in rollup.LEVELS)
    return f"""CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {schema}, pg_temp AS $$
DECLARE
    h bigint;
BEGIN
    IF NOT ({_valid(shape)}) THEN  -- the samples' CHECK refuses these too (migration 14): never counted
        RAISE EXCEPTION 'a figure no measurement can produce' USING ERRCODE = 'check_violation';
    END IF;
    h := floor(NEW.started_at / {rollup.HOUR});
    WHILE h * {rollup.HOUR} > NEW.started_at LOOP h := h - 1; END LOOP;
    WHILE (h + 1) * {rollup.HOUR} <= NEW.started_at LOOP h := h + 1; END LOOP;
    {body}
    RETURN NULL;
END
$$"""


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def install(conn: Any, ph: str, *, shape: rollup.Shape) -> None:
    """On PostgreSQL (nothing on SQLite): the counting trigger writing a shape, the ``role`` columns' default,
    and no role but the owner left able to write the rollups (an agent of an older version then fails its
    writes, kept and retried, instead of counting its samples twice beside the trigger). Each migration that
    changes the rollups' shape installs it again for the shape it made."""
    if ph == "?":  # SQLite: one writer, counting in Python
        return
    ((schema,),) = conn.execute("SELECT current_schema()").fetchall()
    conn.execute(function_sql(quoted(schema), shape))
    conn.execute(f"REVOKE ALL ON FUNCTION {FUNCTION}() FROM PUBLIC")
    conn.execute(f"DROP TRIGGER IF EXISTS {TRIGGER} ON samples")
    conn.execute(
        f"CREATE TRIGGER {TRIGGER} AFTER INSERT ON samples FOR EACH ROW WHEN (NEW.published = 1) "
        f"EXECUTE FUNCTION {FUNCTION}()"
    )
    for table in ("agents", "runs"):  # who wrote the row: its own role's policy (grants.py) reads it
        conn.execute(f"ALTER TABLE {table} ALTER COLUMN role SET DEFAULT current_user")
    names = [level.table for level in rollup.LEVELS]
    writers = conn.execute(
        "SELECT DISTINCT grantee FROM information_schema.table_privileges WHERE table_schema = current_schema()"
        " AND table_name = ANY(%s) AND privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')"
        " AND grantee <> current_user",
        (names,),
    ).fetchall()
    for (grantee,) in writers:
        who = "PUBLIC" if grantee == "PUBLIC" else quoted(grantee)
        conn.execute(f"REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON {', '.join(names)} FROM {who}")
