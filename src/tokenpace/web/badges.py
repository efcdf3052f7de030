"""Badges on the web: ``/badge/endpoint/PROVIDER/PLAN/MODEL/METRIC.svg`` and ``/badge/model/MODEL/METRIC.svg``.

The figures and colours are board/badges.py's; here they become an SVG 20 px high. No font file is read: each
text's width is estimated from its character count (:func:`text_width`), and the SVG tells the browser to draw
the text at exactly that width (``textLength``), so the width the svg element states is the width it renders at,
whatever font the reader has. The template is autoescaped like every page. A badge is kept like a page (memo.py)
and sent with ``Cache-Control: public, max-age=300`` (READMEs' image proxies fetch it again after that) and a
strong ETag, a hash of its bytes; ``If-None-Match`` with it is answered 304 with no body.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable

import markupsafe
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from tokenpace.board import badges
from tokenpace.config.endpoints import endpoint_name
from tokenpace.errors import BadRequest
from tokenpace.web import paths
from tokenpace.web.site import Site

HEIGHT = 20
CHAR_PX = 7  # Verdana at 11 px: digits and most lowercase letters are 6-7 px wide
PAD_PX = 6  # each side of each half
CACHE_CONTROL = "public, max-age=300"
MAX_ENTITY_TAGS = 32  # entity tags read from one If-None-Match: a hostile header is long
SVG_TYPE = "image/svg+xml"
# Opened on its own, an SVG is a document: it may run nothing and load nothing.
BADGE_HEADERS = {
    "Cache-Control": CACHE_CONTROL,
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'",
    "X-Content-Type-Options": "nosniff",
}


def text_width(text: str) -> int:
    """Pixels a badge gives a text: CHAR_PX per character."""
    return CHAR_PX * len(text)


def badge_svg(site: Site, badge: badges.Badge) -> str:
    """The badge as SVG: a grey label half and a coloured value half, each its text's width plus PAD_PX a side."""
    left_text, right_text = text_width(badge.label), text_width(badge.value)
    left, right = left_text + 2 * PAD_PX, right_text + 2 * PAD_PX
    geometry = {"width": left + right, "height": HEIGHT, "left": left, "right": right}
    texts = {"left_text": left_text, "right_text": right_text}
    return site.env.get_template("badge.svg").render(
        label=badge.label, value=badge.value, colour=badge.colour, title=badge.title, **geometry, **texts
    )


def entity_tag(body: bytes) -> str:
    """A strong ETag: the first 128 bits of the body's SHA-256, quoted."""
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def badge_response(site: Site, raw_tail: str) -> Response:
    """The badge the path after ``/badge/`` names; 404 for an unknown shape, metric or endpoint."""
    found = paths.parse_badge(raw_tail)
    if found is None:
        raise HTTPException(
            404, "a badge is /badge/endpoint/PROVIDER/PLAN/MODEL/METRIC.svg or /badge/model/MODEL/METRIC.svg"
        )
    kind, names, metric = found
    if "\x00" in "".join(names):
        raise BadRequest("the badge's path: a NUL character (%00) is not allowed; remove it")
    known = badges.ENDPOINT_BADGES if kind == "endpoint" else badges.MODEL_BADGES
    if metric not in known:
        raise HTTPException(404, f"no {kind} badge of that name: use one of {', '.join(known)}")
    if kind == "endpoint":
        provider, plan, model = names
        badge = badges.endpoint_badge(site, provider, plan, model, metric)
        missing = f"no endpoint {endpoint_name(*names)} has samples or is configured"
    else:
        badge = badges.model_badge(site, names[0], metric)
        missing = f"no endpoint serving model {names[0]} has samples or is configured"
    if badge is None:
        raise HTTPException(404, missing)
    body = badge_svg(site, badge).encode()
    return Response(body, media_type=SVG_TYPE, headers={**BADGE_HEADERS, "ETag": entity_tag(body)})


def _matches(if_none_match: str, tag: str) -> bool:
    """Whether If-None-Match names ``tag`` or is ``*`` (weak comparison, as RFC 9110 asks of this header)."""
    if if_none_match.strip() == "*":
        return True
    return any(t.strip().removeprefix("W/") == tag for t in if_none_match.split(",")[:MAX_ENTITY_TAGS])


def conditional(
    handler: Callable[[Request], Awaitable[Response]],
) -> Callable[[Request], Awaitable[Response]]:
    """``handler``, its 200 answered 304 (no body) where the request's If-None-Match names its ETag."""

    async def handle(request: Request) -> Response:
        response = await handler(request)
        tag = response.headers.get("etag")
        if response.status_code == 200 and tag and _matches(request.headers.get("if-none-match", ""), tag):
            return Response(status_code=304, headers={"ETag": tag, "Cache-Control": CACHE_CONTROL})
        return response

    return handle


def snippets(provider: str, plan: str, model: str) -> list[dict[str, str]]:
    """Each of an endpoint's badges: its URL, and Markdown and HTML that embed it linked to the endpoint's page.
    The URLs are this server's paths: a page cannot know the address its readers reach it by (a Host header is
    the client's to say), so app.js puts the page's own origin in front of them where scripts run."""
    page = paths.endpoint_path(provider, plan, model)
    out = []
    for metric in badges.ENDPOINT_BADGES:
        url = paths.badge_path(provider, plan, model, metric)
        label = badges.badge_label(metric)
        alt = markupsafe.escape(f"{endpoint_name(provider, plan, model)} {label}")
        out.append({
            "metric": metric, "url": url, "markdown": f"[![{label}]({url})]({page})",
            "html": f'<a href="{page}"><img src="{url}" alt="{alt}" height="{HEIGHT}"></a>',
        })  # fmt: skip
    return out
