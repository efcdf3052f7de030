"""The command line as stored with a run (`run`'s and `bench`'s): header values and the database password masked."""

from __future__ import annotations

from collections.abc import Sequence

SECRET_OPTIONS = ("--header", "--db")


def safe_command(args: Sequence[str], store_url: str) -> str:
    """``tokenpace`` and ``args``, each value of a secret option masked (--db's is the store's masked URL)."""

    def masked(option: str, value: str) -> str:
        return store_url if option == "--db" else value.partition(":")[0] + ": ***"

    out, pending = ["tokenpace"], ""
    for arg in args:
        name, eq, value = arg.partition("=")
        if pending:
            out.append(masked(pending, arg))
            pending = ""
        elif eq and name in SECRET_OPTIONS:
            out.append(f"{name}={masked(name, value)}")
        else:
            out.append(arg)
            pending = arg if arg in SECRET_OPTIONS else ""
    return " ".join(out)
