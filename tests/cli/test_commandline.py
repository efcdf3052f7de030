"""The command line a run stores (`run`'s and `bench`'s): header values and the database password masked."""

from __future__ import annotations


def test_stored_command_line_masks_header_values_and_db_password() -> None:
    from tokenpace.cli.commandline import safe_command

    args = ["run", "--header", "Authorization: Bearer sk-1", "--db", "postgresql://u:pw@h/db", "--header=X-Key: k2"]
    shown = safe_command(args, "postgresql://u:***@h/db")
    assert shown == ("tokenpace run --header Authorization: *** --db postgresql://u:***@h/db --header=X-Key: ***")
    assert "sk-1" not in shown and "pw" not in shown and "k2" not in shown
