"""Which region a board shows: the ``region`` URL parameter, its default, its check and how pages name it.

Probe agents store samples tagged with the region they measured from ('' for the storing process itself, issue
11). A board shows one region's rows, every region pooled into one row per endpoint, or each region its own row.
In a URL (and in the JSON and CSV, so a reader can pass a value back) they are spelt:

- a region's name: that region's samples;
- ``all``: every region pooled (the only view of a database without agents, which shows no region menu);
- ``local``: the storing process's own samples (region '');
- ``*``: one row per (endpoint, region), each row saying its region.

``all`` and ``local`` are refused as region names (config/regions.py), so no name reads as one of them. The
default is the first region the config declares, else ``all``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from tokenpace.config.endpoints import Config
from tokenpace.config.regions import NAME, RESERVED
from tokenpace.config.windows import EACH
from tokenpace.errors import BadRequest

ALL, LOCAL = RESERVED  # every region pooled; the storing process's own samples


def default(config: Config) -> str:
    """The view a board opens on: the first declared region, else every region pooled."""
    return config.regions[0].name if config.regions else ALL


def check(value: str) -> str:
    """A well-formed value (one BadRequest line otherwise); whether the region exists is :func:`check_known`'s."""
    if value in (ALL, LOCAL, EACH) or NAME.fullmatch(value):
        return value
    shown = value if len(value) <= 40 else value[:40] + "..."
    raise BadRequest(f"region {shown!r}: use a region's name, {ALL} (pooled), {LOCAL} or * (one row per region)")


def check_known(value: str, present: Collection[str], config: Config) -> str:
    """The value when it names a region the data holds or the config declares, or a view of every region."""
    known = offered(present, config)
    if value in (ALL, LOCAL, EACH) or value in known:
        return value
    raise BadRequest(f"region {value!r}: use one of {', '.join([*known, ALL, LOCAL, '*'])}")


def store_filter(value: str) -> str | None:
    """What the windows read for a value (store/windows.endpoint_rows' ``region``): None pools every region."""
    return None if value == ALL else "" if value == LOCAL else value


def token(region: str | None) -> str:
    """A row's region as a URL value: its name, ``local`` for '' and ``all`` for a pooled row."""
    return ALL if region is None else region or LOCAL


def offered(present: Collection[str], config: Config) -> list[str]:
    """The named regions: declared ones in the config's order, then the others the data holds, A to Z."""
    declared = [r.name for r in config.regions]
    return declared + sorted({r for r in present if r and r not in declared})


def wanted(present: Collection[str], config: Config) -> bool:
    """Whether a page shows region choices: only where some sample came from an agent, or regions are declared."""
    return bool(offered(present, config))


def one(value: str | None, present: Collection[str], config: Config) -> str:
    """A page of one endpoint or model: a region, ``local`` or ``all`` (the default: every region pooled, as its
    links from a pooled board expect); each region apart is the board's and the model page's grid's."""
    value = check(value or ALL)
    if value == EACH:
        raise BadRequest(f"region *: this page shows one region or {ALL} (pooled); the board shows each apart")
    return check_known(value, present, config)


def url_suffix(region: str | None) -> str:
    """A link's ``?region=`` for a row of one region ('' this process itself); none for a pooled row."""
    return "" if region is None else f"?region={token(region)}"


def name(region: str, config: Config) -> str:
    """How a page names a region: ``eu-west (Frankfurt)`` with a declared label, else the name."""
    for r in config.regions:
        if r.name == region:
            return r.shown
    return region


def caption(value: str, config: Config) -> str:
    """The sentence saying what a board shows."""
    if value == ALL:
        return "All regions pooled"
    if value == EACH:
        return "Each region apart: one row per endpoint and region"
    if value == LOCAL:
        return "Measured from this server itself (no probe agent)"
    return f"Measured from {name(value, config)}"


def menu(selected: str, present: Sequence[str], config: Config, each: bool = True) -> dict[str, object]:
    """The region menu, as the page's other filter menus are given; ``each``: offering each region apart."""
    options = [(r, name(r, config)) for r in offered(present, config)]
    if "" in present:
        options.append((LOCAL, "this server (no agent)"))
    options += [(ALL, "all regions pooled"), *([(EACH, "each region apart")] if each else [])]
    return {"name": "region", "label": "Region", "selected": selected, "options": options}
