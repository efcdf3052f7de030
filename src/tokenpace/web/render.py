"""How a view's result becomes a response: one :class:`Page` is both the HTML page and its JSON twin.

A view computes a Page once: the template's context and the JSON-able data. The HTML route renders the
template, the ``.json`` route returns the data, so the two never disagree (datasette's pattern). Templates
autoescape everything; figures reach JavaScript only through Jinja's ``tojson``, which escapes ``<``, ``>``,
``&`` and ``'`` so a name holding ``</script>`` cannot end the embedding ``<script>`` block.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import jinja2
from starlette.responses import HTMLResponse, JSONResponse, Response

from tokenpace.config.endpoints import plan_name
from tokenpace.version import __version__
from tokenpace.web.paths import endpoint_path, model_path

DASH = "—"


@dataclass(frozen=True, slots=True)
class Page:
    """What one view found: a template and its context for people, the same facts as JSON for programs."""

    template: str
    context: Mapping[str, Any]
    data: Mapping[str, Any]
    json_url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


def jsonable(value: Any) -> Any:
    """Dataclasses, tuples and datetimes as JSON types (datetimes as ISO 8601); anything else unchanged."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def fmt(value: float | None, kind: str = "num") -> str:
    """A figure for a table cell: tok/s with one decimal below 100, ms whole, ``s`` converts ms to seconds."""
    if value is None:
        return DASH
    if kind in ("ms", "int"):
        return f"{value:,.0f}"
    if kind == "s":
        return f"{value / 1000:,.2f}"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"


def pct(value: float | None) -> str:
    return DASH if value is None else f"{value:.0%}" if value in (0, 1) else f"{value:.1%}"


def when(value: datetime | None) -> str:
    return DASH if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


UNITS = (("d", 86400), ("h", 3600), ("min", 60))  # seconds in each unit shown, largest first


def ago(now: datetime, then: datetime) -> str:
    """How long before ``now`` a time was, in the largest unit that keeps the number small."""
    s = max(0.0, (now - then).total_seconds())
    for unit, size in UNITS:
        if s >= size * (2 if unit != "min" else 1):
            return f"{s / size:.0f} {unit} ago"
    return f"{s:.0f} s ago"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("tokenpace.web", "templates"),
        autoescape=True,  # every template is HTML
        undefined=jinja2.StrictUndefined,  # a misspelt name fails a test rather than rendering empty
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(fmt=fmt, pct=pct, when=when)
    env.globals.update(
        version=__version__,
        endpoint_url=lambda r: endpoint_path(r.provider, r.plan, r.model),
        model_url=model_path,
        plan_name=plan_name,
    )
    return env


def html(env: jinja2.Environment, page: Page, now: datetime, status_code: int = 200) -> HTMLResponse:
    context = {"json_url": page.json_url, "generated_at": now, "ago": lambda t: ago(now, t), **page.context}
    body = env.get_template(page.template).render(context)
    return HTMLResponse(body, status_code, headers=dict(page.headers))


def json(page: Page) -> Response:
    return JSONResponse(jsonable(page.data), headers=dict(page.headers))
