"""`tokenpace db grant-agent`: the statements for one region's role, and one line for each mistake."""

from __future__ import annotations

import pytest

from tests.cli.test_input import assert_one_line, invoke


def test_grant_agent_prints_the_statements_for_one_region() -> None:
    result = invoke("db", "grant-agent", "agent_eu", "--region", "eu")
    assert result.exit_code == 0, result.output
    assert 'GRANT INSERT, SELECT (job_id, job_seq) ON samples TO "agent_eu";' in result.stdout
    assert "USING (queue_name = 'tokenpace-eu')" in result.stdout
    assert "DELETE ON samples" not in result.stdout and "UPDATE ON samples" not in result.stdout
    assert result.stdout.index("REVOKE ALL ON ALL TABLES") < result.stdout.index("GRANT INSERT")
    assert "sample_hours" not in result.stdout and "sample_days" not in result.stdout  # the trigger counts


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("db", "grant-agent", "Agent-EU", "--region", "eu"), "role 'Agent-EU': use lower-case letters"),
        (("db", "grant-agent", "agent_eu", "--region", "EU West"), "region 'EU West': use lower-case letters"),
    ],
)
def test_mistakes_are_one_line(args: tuple[str, ...], message: str) -> None:
    assert_one_line(invoke(*args), message)
