"""The PostgreSQL rights of a region agent's own role: its region's jobs, inserting samples and heartbeats.

An agent runs far from the board, often on a machine run by someone else; its database role should let it do
its work and nothing more. It may read the schema's version, insert samples (never update or delete them) and
count them in the rollups in the same transaction, write its runs and its row in ``agents``, and work its
region's procrastinate queue: a row-level security policy hides every other region's jobs from it. Created
tables get no rights on their own: apply these after ``tokenpace serve`` has created the schema and the
queues, and again after an upgrade that adds tables. Connect agents with ``sslmode=verify-full`` (README).
"""

from __future__ import annotations

import re

from tokenpace.errors import StoreError
from tokenpace.store.dialects import hide_password, say
from tokenpace.store.queue import queue_name

ROLE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")  # quoted as given: no case folding, no injection
ROLLUPS = ("sample_hours", "sample_quarters", "sample_days")
QUEUE_TABLES = ("procrastinate_jobs", "procrastinate_workers", "procrastinate_events", "procrastinate_periodic_defers")
SEQUENCES = ("procrastinate_jobs_id_seq", "procrastinate_workers_id_seq", "procrastinate_events_id_seq")


def for_agent(role: str, region: str, schema: str = "public") -> list[str]:
    """The statements, in order; ValueError for a role name that is not a plain lower-case identifier."""
    if not ROLE.fullmatch(role):
        rule = "use lower-case letters, digits and '_', at most 63, not starting with a digit"
        raise ValueError(f"role {role[:70]!r}: {rule}")
    who = f'"{role}"'
    policy = f'"tokenpace_{role}_queue"'
    return [
        f"GRANT USAGE ON SCHEMA {_quoted(schema)} TO {who}",
        f"GRANT SELECT ON schema_migrations TO {who}",
        f"GRANT INSERT, SELECT (job_id, job_seq) ON samples TO {who}",  # the second for ON CONFLICT's check
        f"GRANT SELECT, INSERT, UPDATE ON runs, agents, {', '.join(ROLLUPS)} TO {who}",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON {', '.join(QUEUE_TABLES)} TO {who}",
        f"GRANT USAGE, SELECT ON SEQUENCE {', '.join(SEQUENCES)} TO {who}",
        "ALTER TABLE procrastinate_jobs ENABLE ROW LEVEL SECURITY",
        f"DROP POLICY IF EXISTS {policy} ON procrastinate_jobs",
        f"CREATE POLICY {policy} ON procrastinate_jobs TO {who} "
        f"USING (queue_name = '{queue_name(region)}') WITH CHECK (queue_name = '{queue_name(region)}')",
    ]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def apply(url: str, role: str, region: str) -> list[str]:
    """Grant ``role`` an agent's rights on the PostgreSQL store at ``url`` (its schema), in one transaction."""
    import psycopg

    shown, secrets = hide_password(url)
    try:
        with psycopg.connect(url) as conn:
            ((schema,),) = conn.execute("SELECT current_schema()").fetchall()
            statements = for_agent(role, region, schema)
            for statement in statements:
                conn.execute(statement.encode())
            return statements
    except (psycopg.Error, OSError) as exc:
        raise StoreError(say(shown, exc, secrets)) from None
