"""`tokenpace --help` loads no heavy library: what the help path imports, not how long it takes (issue 9 item 16).

The time itself is a bench figure (about 0.1 s against 1.2 s before, on the development machine); what a test
can check on any machine is the cause: which modules the help path leaves unloaded.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("aiohttp", "tiktoken", "psycopg", "pydantic", "rich", "uvicorn", "starlette", "PIL", "tokenpace.sim")

PROBE = """
import json, sys
from tokenpace.cli import main
try:
    main(ARGS, prog_name="tokenpace")
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["serve", "--help"], ["--version"]])
def test_help_imports_no_heavy_library(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.replace("ARGS", repr(args))], capture_output=True, text=True, check=True
    )
    assert "Usage" in done.stdout or "version" in done.stdout
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    heavy = [m for m in loaded if m.split(".")[0] in HEAVY or m.startswith(HEAVY)]
    assert not heavy, f"the help path loads {heavy[:10]}"


def test_the_package_still_gives_its_api() -> None:
    import tokenpace

    assert tokenpace.RunOptions().requests == 10 and tokenpace.ErrorKind.CANCELLED.value == "cancelled"
    assert set(tokenpace.__all__) - {"__version__"} <= set(dir(tokenpace)) | set(tokenpace._HOME)
    with pytest.raises(AttributeError):
        tokenpace.nothing_here  # noqa: B018 (the access is the test)


def test_default_workload_is_the_workload_modules() -> None:
    from tokenpace.cli.options import DEFAULT_WORKLOAD
    from tokenpace.config.workloads import DEFAULT

    assert DEFAULT.name == DEFAULT_WORKLOAD
