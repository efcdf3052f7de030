"""The PostgreSQL rights of a region agent's own role: its region's jobs, its own samples, runs and heartbeat.

An agent runs far from the board, often on a machine run by someone else; its database role should let it do
its work and nothing more, so that a stolen or misused agent login cannot forge what the board shows. The
statements revoke everything the role had on the schema's tables and sequences, then grant the least, each
table's rows narrowed by a row-level security policy of this role's own (the tables' owner, the central role,
is not subject to them):

- ``samples``: insert only (never read, update or delete), and only a sample of its region tied to a job
  ordered in its region's queue, of that job's endpoint and workload, its request index within the job's
  count: no invented endpoint, region or request; and measured by one of its own agents (the ``agent`` named is
  a row of ``agents`` this role wrote), never another's name. The database counts it in the rollups itself (a trigger
  running as the owner, ``counting.py``): the role has no right on the rollups;
- ``agents``: its own rows (written by this role, of its region; an older row of its region without a role
  becomes its own on its next beat); ``runs``: the runs it wrote;
- procrastinate's tables: its region's jobs (read, and the columns a worker moves: status, worker, attempts,
  abort flag; never their orders), the workers it registered (``procrastinate_workers.role``, added here) and
  no event but those its own jobs' triggers insert (it reads none).

Created tables get no rights on their own: apply these after ``tokenpace serve`` has created the schema and the
queues, and again after an upgrade that adds tables. Connect agents with ``sslmode=verify-full`` (README).
"""

from __future__ import annotations

import hashlib
import re

from tokenpace.errors import StoreError
from tokenpace.store.dialects import hide_password, say
from tokenpace.store.queue import queue_name

ROLE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")  # quoted as given: no case folding, no injection
JOB_COLUMNS = ("status", "worker_id", "attempts", "abort_requested")  # what procrastinate's worker functions set
# An order's endpoint, as Endpoint.name spells it: provider, or provider:plan for any plan but the default.
ENDPOINT = "samples.provider || CASE WHEN samples.plan = 'default' THEN '' ELSE ':' || samples.plan END"
JOB_ID = "CASE WHEN samples.job_id ~ '^[0-9]{1,18}$' THEN samples.job_id::bigint END"  # a number, or no job


def _policies(region: str) -> dict[str, tuple[str, str | None, str | None]]:
    """Each table's policy for the role: (command, USING, WITH CHECK); the region is a checked plain name."""
    queue = f"queue_name = '{queue_name(region)}'"
    own_job = (  # no input in it: a region is a checked plain name
        f"EXISTS (SELECT 1 FROM procrastinate_jobs j WHERE j.id = {JOB_ID} AND j.{queue}"  # noqa: S608
        f" AND j.args->>'region' = '{region}' AND j.args->>'endpoint' = {ENDPOINT} || '/' || samples.model"
        " AND j.args->>'workload' = samples.workload"
        " AND samples.job_seq >= 0 AND samples.job_seq < (j.args->>'requests')::integer)"
    )
    own = "role = current_user"
    # Measured by an agent of its own: one whose row this role wrote (it beats before it takes a job).
    own_agent = (
        "EXISTS (SELECT 1 FROM agents a WHERE a.name = samples.agent AND a.role = current_user"  # noqa: S608
        f" AND a.region = '{region}')"
    )
    return {
        "samples": ("INSERT", None, f"region = '{region}' AND {own_job} AND {own_agent}"),
        # ON CONFLICT's check reads (job_id, job_seq), which applies the SELECT policies to the new row too.
        "samples_read": ("SELECT", f"region = '{region}'", None),
        "agents": ("ALL", f"{own} OR (role IS NULL AND region = '{region}')", f"{own} AND region = '{region}'"),
        "runs": ("ALL", own, own),
        "procrastinate_jobs": ("ALL", queue, queue),
        "procrastinate_workers": ("ALL", own, own),
        # Events its own jobs' triggers insert: the jobs it can see are its region's (the policy above).
        "procrastinate_events": (
            "INSERT",
            None,
            "EXISTS (SELECT 1 FROM procrastinate_jobs j WHERE j.id = procrastinate_events.job_id)",
        ),
    }


def policy_name(role: str, table: str) -> str:
    """``tp_ROLE_TABLE``, within PostgreSQL's 63 characters and distinct per role (a hash when it is long)."""
    short = table.removeprefix("procrastinate_")
    name = f"tp_{role}_{short}"
    if len(name) > 63:
        name = f"tp_{role[:40]}_{hashlib.sha256(role.encode()).hexdigest()[:8]}_{short}"
    return f'"{name}"'


def for_agent(role: str, region: str, schema: str = "public") -> list[str]:
    """The statements, in order; ValueError for a role name that is not a plain lower-case identifier."""
    if not ROLE.fullmatch(role):
        rule = "use lower-case letters, digits and '_', at most 63, not starting with a digit"
        raise ValueError(f"role {role[:70]!r}: {rule}")
    who, where = f'"{role}"', _quoted(schema)
    statements = [
        f"GRANT USAGE ON SCHEMA {where} TO {who}",
        f"REVOKE CREATE ON SCHEMA {where} FROM {who}",
        f"REVOKE ALL ON ALL TABLES IN SCHEMA {where} FROM {who}",  # whatever an older version granted
        f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA {where} FROM {who}",
        f"GRANT SELECT ON schema_migrations TO {who}",
        f"GRANT INSERT, SELECT (job_id, job_seq) ON samples TO {who}",  # the second for ON CONFLICT's check
        f"GRANT SELECT, INSERT, UPDATE ON runs, agents TO {who}",
        f"GRANT SELECT, UPDATE ({', '.join(JOB_COLUMNS)}) ON procrastinate_jobs TO {who}",
        f"GRANT SELECT, INSERT, UPDATE (last_heartbeat), DELETE ON procrastinate_workers TO {who}",
        f"GRANT INSERT ON procrastinate_events TO {who}",
        f"GRANT USAGE ON SEQUENCE procrastinate_workers_id_seq, procrastinate_events_id_seq TO {who}",
        # Which role registered a worker: procrastinate's table has no such column.
        "ALTER TABLE procrastinate_workers ADD COLUMN IF NOT EXISTS role TEXT DEFAULT current_user",
        f'DROP POLICY IF EXISTS "tokenpace_{role}_queue" ON procrastinate_jobs',  # an older version's
    ]
    for kind, (command, using, check) in _policies(region).items():
        table, name = kind.removesuffix("_read"), policy_name(role, kind)
        policy = f"CREATE POLICY {name} ON {table} FOR {command} TO {who}"
        policy += "" if using is None else f" USING ({using})"
        policy += "" if check is None else f" WITH CHECK ({check})"
        if kind == table:
            statements.append(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        statements += [f"DROP POLICY IF EXISTS {name} ON {table}", policy]
    return statements


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def grant_agent(url: str, role: str, region: str) -> list[str]:
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
