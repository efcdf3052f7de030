"""How a view's result becomes a response: one :class:`Page` is both the HTML page and its JSON twin.

A view computes a Page once: the template's context and the JSON-able data. The HTML route renders the
template, the ``.json`` route returns the data, so the two never disagree (datasette's pattern). Templates
autoescape everything; charts arrive as SVG that pygal built with ElementTree, which escapes every name.
Every value a template prints is also cleaned of control characters (``finalize``): a name or a server's
message holding ESC is shown as "␛", never written raw into the page (or the bench report, from the same
environment).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import jinja2
import markupsafe
from starlette.responses import HTMLResponse, JSONResponse, Response

from tokenpace.board import numbers, regions, sufficiency
from tokenpace.config.endpoints import plan_name
from tokenpace.measure import catalogue
from tokenpace.version import __version__
from tokenpace.web.paths import endpoint_path, model_path, status_path


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


def _visible(value: Any) -> Any:
    """A value as a template prints it, its control characters made visible (Markup stays Markup)."""
    if isinstance(value, markupsafe.Markup):
        return markupsafe.Markup(numbers.printable(str(value)))  # noqa: S704 (was safe; no control picture is markup)
    return numbers.printable(value) if isinstance(value, str) else value


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        finalize=_visible,
        loader=jinja2.PackageLoader("tokenpace.web", "templates"),
        autoescape=True,  # every template is HTML
        undefined=jinja2.StrictUndefined,  # a misspelt name fails a test rather than rendering empty
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(fmt=numbers.figure_text, pct=numbers.percent, when=numbers.when, dollars=numbers.dollars)
    env.filters.update(rate=numbers.rate, cut=numbers.cut, withheld=sufficiency.tails_withheld)
    env.filters.update(percentile=numbers.percentile_name)
    env.globals.update(
        version=__version__,
        # a row of one region links to its endpoint's page of that region
        endpoint_url=lambda r: (
            endpoint_path(r.provider, r.plan, r.model) + regions.url_suffix(getattr(r, "region", None))
        ),
        model_url=model_path,
        status_url=status_path,  # a provider's status page: its incidents as tokenpace saw them
        plan_name=plan_name,
        tails_need=sufficiency.samples_needed(0.95),  # P5's and P95's, by symmetry
        figure=catalogue.metric,  # a figure's label, header and definition, as the catalogue spells them
    )
    return env


def html(env: jinja2.Environment, page: Page, now: datetime, status_code: int = 200) -> HTMLResponse:
    context = {"json_url": page.json_url, "generated_at": now, "ago": lambda t: numbers.ago(now, t), **page.context}
    body = env.get_template(page.template).render(context)
    return HTMLResponse(body, status_code, headers=dict(page.headers))


def json(page: Page) -> Response:
    return JSONResponse(jsonable(page.data), headers=dict(page.headers))
