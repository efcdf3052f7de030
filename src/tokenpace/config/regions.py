"""The ``[regions]`` table: the places probe agents measure from (issue 11)::

    [regions.eu-west]
    label = "Frankfurt"        # optional: how pages name it
    [regions.us-east]

With regions declared and a PostgreSQL store, ``tokenpace serve`` measures nothing itself: it queues one job per
due (endpoint, workload, region) and ``tokenpace agent --region NAME`` processes take them. The board shows the
first region declared unless asked for another. Without the table nothing changes: serve measures in-process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pydantic

MAX_REGIONS = 50  # each is a queue and a column of the model page's grid
NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")  # a queue name, a URL parameter and a label at once
NAME_RULE = "lower-case letters, digits and '-', at most 40, starting with a letter or digit"
# Views of the board's region parameter (board/regions.py): every region pooled, and samples taken with no agent.
RESERVED = ("all", "local")


def check_name(name: str) -> str:
    """A region's name as given (ValueError naming the rule otherwise)."""
    if not NAME.fullmatch(name):
        raise ValueError(f"region {name[:60]!r}: use {NAME_RULE}")
    if name in RESERVED:
        raise ValueError(f"region {name!r}: {' and '.join(RESERVED)} name views of the board; choose another name")
    return name


class _Region(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
    label: str | None = pydantic.Field(default=None, min_length=1, max_length=60, pattern=r"^[^\x00-\x1f\x7f]+$")


class RegionsTable(pydantic.RootModel[dict[str, _Region]]):
    """The ``[regions]`` table as written: a sub-table per region."""

    root: dict[str, _Region] = pydantic.Field(default={}, max_length=MAX_REGIONS)

    @pydantic.field_validator("root")
    @classmethod
    def _names(cls, root: dict[str, _Region]) -> dict[str, _Region]:
        for name in root:
            check_name(name)
        return root


@dataclass(frozen=True, slots=True)
class Region:
    name: str
    label: str | None = None

    @property
    def shown(self) -> str:
        """How pages name it: ``eu-west (Frankfurt)``, or the name alone."""
        return self.name if self.label is None else f"{self.name} ({self.label})"


def regions(table: RegionsTable) -> tuple[Region, ...]:
    """The declared regions, in the file's order (the first is the board's default)."""
    return tuple(Region(name, r.label) for name, r in table.root.items())
