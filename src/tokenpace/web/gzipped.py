"""A kept response and its gzip twin, compressed once when the page is rendered rather than for every reader.

A board with its charts is a few hundred kilobytes of HTML and SVG, which gzip shrinks several times over. A
compression middleware would deflate it again for each request on the event loop that also times streams;
a page kept in the memo (memo.py) is compressed once, on the thread that rendered it.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

MIN_BYTES = 1024  # below this, gzip's header and a round trip of decoding save nothing worth having
LEVEL = 6  # zlib's default: most of level 9's saving at a third of its time
_VARY = (b"vary", b"Accept-Encoding")


def _refused(weights: list[str]) -> bool:
    """Whether a coding's q-value says no: q=0, or one that does not parse (a client's typo means no)."""
    try:
        return bool(weights) and float(weights[0]) <= 0
    except ValueError:
        return True


def accepts_gzip(request: Request) -> bool:
    """Whether Accept-Encoding lists gzip (or ``*``) without q=0."""
    for item in request.headers.get("accept-encoding", "").lower().split(",")[:32]:  # a hostile header is long
        coding, *params = (part.strip() for part in item.split(";"))
        if coding in ("gzip", "*") and not _refused([p[2:] for p in params if p.startswith("q=")]):
            return True
    return False


def _gzip_tag(tag: bytes) -> bytes:
    """The gzip twin's ETag: a strong tag names one representation's bytes, and the twin's are others."""
    return tag[:-1] + b'-gzip"' if tag.endswith(b'"') else tag


@dataclass(frozen=True, slots=True)
class Answer:
    """A response as rendered, and gzipped where that is worth it: what the page memo keeps."""

    plain: Response
    gzipped: Response | None = None

    @classmethod
    def of(cls, response: Response) -> Answer:
        """The response and, for a body of MIN_BYTES or more not yet encoded, its gzip twin."""
        body = bytes(response.body)
        headers = [(k, v) for k, v in response.raw_headers if k not in (b"content-length", b"vary")]
        if len(body) < MIN_BYTES or any(k == b"content-encoding" for k, _ in headers):
            return cls(response)
        response.raw_headers = [*response.raw_headers, _VARY]  # a cache must not hand this one to a gzip reader
        packed = gzip.compress(body, LEVEL, mtime=0)
        twin = Response(packed, response.status_code)
        headers = [(k, _gzip_tag(v) if k == b"etag" else v) for k, v in headers]
        twin.raw_headers = [*headers, (b"content-encoding", b"gzip"), (b"content-length", b"%d" % len(packed)), _VARY]
        return cls(response, twin)

    def to(self, request: Request) -> Response:
        """The gzip twin for a client that takes gzip, else the response as rendered."""
        return self.gzipped if self.gzipped is not None and accepts_gzip(request) else self.plain
