"""The leaderboard's web app: routes, error pages and the app factory; the views live beside it.

Views run on a small pool of threads (limits.py): a view waits on the store's writer thread, and in
``tokenpace serve`` the event loop it would otherwise block is the one timing streams; there each thread only
waits, while a worker process renders (renderer.py). A rendered page, JSON or CSV is kept until the store takes
a new sample (memo.py), so a warm page is a dict lookup on the loop.
A kept page is gzipped once, where it was rendered (gzipped.py), not by a middleware on the loop; the small
static files are gzipped as they are sent.
Query parameters and path parts holding a NUL are refused with one line: PostgreSQL refuses NUL in text, and
the failure would otherwise read as a store outage (503) or cut a CSV short.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Mapping
from datetime import UTC, datetime

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware
from starlette.requests import Request
from starlette.responses import (
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from tokenpace.board import outages
from tokenpace.board.changes import Kept
from tokenpace.board.rules import StaleAfter
from tokenpace.board.rules import rules as board_rules
from tokenpace.board.tracking import IncidentLog
from tokenpace.config.endpoints import Config
from tokenpace.errors import BadRequest, ConfigError, StoreError, WorkerError
from tokenpace.schedule import cadence
from tokenpace.schedule.status import Status
from tokenpace.store.database import Store
from tokenpace.web import (
    agents,
    badges,
    detail,
    incidents,
    leaderboard,
    methodology,
    ops,
    paths,
    prom,
    promptcache,
    render,
    route,
    routing,
)
from tokenpace.web.gzipped import Answer
from tokenpace.web.limits import InFlightLimit, ViewPool
from tokenpace.web.memo import PAGE_REFRESH_S, Memo
from tokenpace.web.render import Page
from tokenpace.web.renderer import RenderCall, Renderer
from tokenpace.web.site import Site

# What any view reads from a query string: a page is cached under these only, so `?x=1` is no new page.
# The routing feed's own (web/route.py): model, by, p, max_price, min_success, format.
READ = ("window", "workload", "provider", "plan", "sort", "order", "min_samples", "client_bound", "region", "model",
        "by", "p", "max_price", "min_success", "format")  # fmt: skip


class _FormatConvertor(Convertor[str]):
    """``{format:format}`` in a route: nothing (the HTML page) or ``.json`` (its twin)."""

    regex = r"(?:\.json)?"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("format", _FormatConvertor())


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _scheduled_jobs(config: Config, status: Callable[[], Status] | None) -> tuple[list[cadence.Job], str | None]:
    """The sampler's jobs (fixed for its life), else the ones the config describes; none, and why, for a config
    the sampler would refuse: it has no cadence to be late for."""
    if status is not None:
        return [j.job for j in status().jobs], None
    try:
        return cadence.jobs(config, config.endpoints), None
    except ConfigError as exc:
        return [], str(exc)


def _no_nul(what: str, value: str) -> str:
    if "\x00" in value:
        raise BadRequest(f"{what}: a NUL character (%00) is not allowed; remove it")
    return value


def _params(request: Request) -> Mapping[str, str]:
    """The query parameters, each checked for NUL."""
    for key, value in request.query_params.multi_items():
        _no_nul(f"parameter {key.replace(chr(0), '')!r}", value + key)
    return request.query_params


def _raw_path(request: Request) -> bytes:
    """The path as sent, still percent-encoded."""
    return bytes(request.scope.get("raw_path") or request.url.path.encode())


def _raw_tail(request: Request, prefix: str) -> str:
    """What follows ``prefix`` in the path as sent, still percent-encoded (paths.py decodes it part by part)."""
    return _raw_path(request).decode("latin-1").split(prefix, 1)[-1]


def _error(request: Request, exc: Exception) -> Response:
    """One line for the user: 400 for a bad parameter, 404, 503 when the store fails; JSON for JSON routes."""
    code = 400 if isinstance(exc, BadRequest) else 503 if isinstance(exc, StoreError | WorkerError) else 500
    message = str(exc)
    if isinstance(exc, HTTPException):
        code, message = exc.status_code, str(exc.detail)
    path = request.url.path
    if paths.format_of(path) == "json" or path == "/health":
        return JSONResponse({"error": message}, code)
    if path.endswith((".csv", ".atom")) or path.startswith("/badge/") or path == "/metrics":
        return PlainTextResponse(message + "\n", code)
    site: Site = request.app.state.site
    return render.html(site.env, Page("error.html", {"status_code": code, "message": message}, {}), site.now(), code)


Handler = Callable[[Request], Awaitable[Response]]


class _Uncached(Exception):  # not an error: a worker's answer that is not a page to keep
    def __init__(self, response: Response) -> None:
        self.response = response


def _rendered(site: Site, renderer: Renderer, request: Request) -> Response:
    """The render process's response to ``request``; one that is not a 200 is answered but not kept."""
    status = None if site.status is None else site.status()
    call = RenderCall(
        request.url.path, _raw_path(request), request.scope.get("query_string", b""), site.store.writes, status
    )
    rendered = renderer.render(call)
    if rendered.status != 200:
        raise _Uncached(rendered.response())
    return rendered.response()


def _cached(view: Callable[[Site, Request], Response]) -> Handler:
    """A route whose response is kept per path and parameters read until the store changes (memo.py).

    A warm one is answered on the loop. A cold one is computed once per key on the view pool, or by the
    worker process when there is one: meanwhile every request, the one that started it included, gets the
    previous response if it is recent (two page refreshes), else waits for the same computation (so a flood
    queues no second copy of it behind the first).
    """
    pending: dict[Hashable, asyncio.Future[Answer]] = {}

    def compute(site: Site, request: Request) -> Answer:
        if site.renderer is not None:
            return Answer.of(_rendered(site, site.renderer, request))
        return Answer.of(view(site, request))

    def done(key: Hashable, computed: asyncio.Future[Answer]) -> None:
        pending.pop(key, None)
        if not computed.cancelled():
            computed.exception()  # retrieved: a failure nobody waited for is not an asyncio warning

    async def handle(request: Request) -> Response:
        site: Site = request.app.state.site
        key = (
            _raw_path(request),
            tuple(sorted((k, v) for k, v in request.query_params.multi_items() if k in READ and v)),
        )
        answer: Answer | None = site.pages.peek(key)
        if answer is not None:
            return answer.to(request)
        computing = pending.get(key)
        if computing is None:
            computing = pending[key] = asyncio.ensure_future(
                site.pool.run(lambda: site.pages.get(key, lambda: compute(site, request)))
            )
            computing.add_done_callback(lambda computed: done(key, computed))
        last: Answer | None = site.pages.peek(key, stale=True)  # the last answer, while the next is computed
        if last is not None:
            return last.to(request)
        try:
            return (await asyncio.shield(computing)).to(request)
        except _Uncached as answered:
            return answered.response

    return handle


def _page(view: Callable[[Site, Request], Page]) -> Handler:
    """One route for a page and its JSON twin: the same view, the path's ending (paths.py) picks the format."""

    def respond(site: Site, request: Request) -> Response:
        page = view(site, request)
        if paths.format_of(request.url.path) == "json":
            return render.json(page)
        return render.html(site.env, page, site.now())

    return _cached(respond)


def _fresh(view: Callable[[Site, Request], Page]) -> Handler:
    """A page and its JSON twin rendered on every request, on the view pool: for what the memo cannot see."""

    async def handle(request: Request) -> Response:
        site: Site = request.app.state.site

        def respond() -> Response:
            page = view(site, request)
            if paths.format_of(request.url.path) == "json":
                return render.json(page)
            return render.html(site.env, page, site.now())

        return await site.pool.run(respond)

    return handle


def _endpoint(site: Site, request: Request) -> Page:
    found = paths.parse_endpoint(_raw_tail(request, "/endpoint/"))
    if found is None:
        raise HTTPException(404, "an endpoint page is /endpoint/PROVIDER/PLAN/MODEL")
    provider, plan, model, _ = (_no_nul("the endpoint's path", part) for part in found)
    return detail.endpoint_page(site, provider, plan, model, _params(request))


def _model(site: Site, request: Request) -> Page:
    found = paths.parse_model(_raw_tail(request, "/model/"))
    if found is None:
        raise HTTPException(404, "a model page is /model/MODEL")
    return detail.model_page(site, _no_nul("the model's path", found[0]), _params(request))


def _status(site: Site, request: Request) -> Page:
    found = paths.parse_status(_raw_tail(request, "/status/"))
    if found is None:
        raise HTTPException(404, "a status page is /status/PROVIDER")
    return incidents.status_page(site, _no_nul("the provider's path", found[0]), _params(request))


def _badge(site: Site, request: Request) -> Response:
    return badges.badge_response(site, _raw_tail(request, "/badge/"))


def _leaderboard_csv(site: Site, request: Request) -> Response:
    text = leaderboard.csv_text(site, _params(request))
    return Response(text, media_type="text/csv; charset=utf-8", headers={"Content-Disposition": "inline"})


def _samples_csv(request: Request) -> Response:
    site: Site = request.app.state.site
    lines = ops.samples_csv(site.store, site.config, _params(request))
    return StreamingResponse(lines, media_type="text/csv; charset=utf-8")


def _health(request: Request) -> Response:
    site: Site = request.app.state.site
    scheduler = None
    if site.status is not None:
        st = site.status()
        jobs = {"jobs": len(st.jobs), "jobs_running": sum(j.running for j in st.jobs)}
        # failures: exceptions the sampler caught, logged and survived (a bug or a store read): worth a look.
        scheduler = {"running": True, "started_at": st.started_at.isoformat(), **jobs, "failures": st.failures}
    ok, facts = ops.health(site.store, scheduler, site.now())
    return JSONResponse(facts, 200 if ok else 503)


def _metrics(site: Site, request: Request) -> Response:
    return Response(generate_latest(request.app.state.registry), media_type=CONTENT_TYPE_LATEST)


def create_app(
    store: Store,
    config: Config,
    *,
    status: Callable[[], Status] | None = None,
    now: Callable[[], datetime] = _utcnow,
    stale_after: StaleAfter | None = None,
    page_refresh_s: float = PAGE_REFRESH_S,
    render_store: str | None = None,
) -> Starlette:
    """The leaderboard app over a store; ``status`` is the running sampler's, when there is one.

    Staleness follows the sampler's jobs, or without a sampler the jobs the config describes; ``stale_after``
    replaces that rule. A rendered page stands for ``page_refresh_s`` whatever is stored meanwhile, then
    until the next sample is stored (a minute at most); until it is twice that old it is still answered while
    the next one is rendered. With ``render_store`` (the store's URL, password included) pages are rendered by
    a worker process over that store (renderer.py), and ``now`` and ``stale_after`` must be left as they are:
    the worker uses the clock and the jobs' own rules.
    """
    if render_store is not None and (now is not _utcnow or stale_after is not None):
        raise ValueError("a worker renders with the clock and the jobs' rules: pass neither now nor stale_after")
    jobs, jobs_problem = _scheduled_jobs(config, status)
    rules = board_rules(config, jobs)
    home = _page(lambda site, request: leaderboard.leaderboard_page(site, _params(request)))
    routes = [
        Route("/", home),  # the site's home; its twin is /leaderboard.json
        Route("/leaderboard{format:format}", home),
        Route("/leaderboard.csv", _cached(_leaderboard_csv)),
        Route("/endpoint/{rest:path}", _page(_endpoint)),
        Route("/model/{rest:path}", _page(_model)),
        # Not kept until the next sample: agents beat without storing one (agents.py reads afresh).
        Route("/agents{format:format}", _fresh(lambda s, r: agents.agents_page(s, _params(r)))),
        Route("/methodology{format:format}", _page(lambda s, r: methodology.methodology_page(s, _params(r)))),
        Route("/prompt-cache{format:format}", _page(lambda s, r: promptcache.prompt_cache_page(s, _params(r)))),
        Route("/route{format:format}", _page(lambda s, r: route.route_page(s, _params(r)))),
        Route("/incidents{format:format}", _page(lambda s, r: incidents.incidents_page(s, _params(r)))),
        Route("/routing{format:format}", _page(lambda s, r: routing.routing_page(s, _params(r)))),
        Route("/incidents.atom", _cached(lambda s, r: incidents.atom(s))),
        Route("/status/{rest:path}", _page(_status)),
        Route("/badge/{rest:path}", badges.conditional(_cached(_badge))),
        Route("/samples.csv", _samples_csv),
        Route("/health", _health),
        Route("/metrics", _cached(_metrics)),
        # Asked for by browsers and feed readers that never read the page's <link rel="icon">.
        Route("/favicon.ico", lambda _: RedirectResponse("/static/favicon.svg", 301)),
        Mount("/static", GZipMiddleware(StaticFiles(packages=[("tokenpace.web", "static")])), name="static"),
    ]
    handlers = {exc: _error for exc in (BadRequest, StoreError, WorkerError, HTTPException)}
    app = Starlette(routes=routes, exception_handlers=handlers, middleware=[Middleware(InFlightLimit)])
    app.state.site = Site(
        store=store,
        config=config,
        status=status,
        now=now,
        stale_after=stale_after or rules.stale_after,
        long_workloads=rules.long_workloads,
        min_samples=rules.min_samples,
        default_workload=rules.workload,
        jobs=tuple(jobs),
        jobs_problem=jobs_problem,
        env=render.environment(),
        memo=Memo(store),
        changes=Kept(store),
        pages=Memo(
            store, min_age_s=page_refresh_s, stale_s=2 * page_refresh_s
        ),  # apart from memo: pages come and go, the rows they share stay
        pool=ViewPool(),
        incidents=Memo(store, min_age_s=incidents.INCIDENTS_REFRESH_S),
        incident_log=IncidentLog(store, config.incidents, outages.SPAN_DAYS),
        secrets=tuple(ops.secrets(config)),
        renderer=None if render_store is None else Renderer(create_app, render_store, config, status and status()),
    )
    site = app.state.site
    collector = prom.LeaderboardCollector(
        store, now, status, rules.long_workloads, site.memo, site.changes, lambda: incidents.site_incidents(site).found
    )
    app.state.registry = prom.registry(collector)
    return app
