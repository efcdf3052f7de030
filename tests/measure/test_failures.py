"""The failure taxonomy: every kind is documented in the module's table, and only those."""

from __future__ import annotations

import re

from tokenpace.measure import failures
from tokenpace.measure.failures import ErrorKind


def test_the_table_documents_every_kind_and_only_those() -> None:
    header, *documented = re.findall(r"^([a-z_]+)\s{2,}\S", failures.__doc__ or "", re.M)
    assert header == "kind" and documented == [k.value for k in ErrorKind]


def test_a_kind_is_its_stored_text() -> None:
    assert all(ErrorKind(k.value) is k and str(k) == k.value for k in ErrorKind)
