"""A kept page is gzipped once and handed to the clients that take gzip; the rest get it as rendered."""

from __future__ import annotations

import gzip

import pytest
from starlette.requests import Request
from starlette.responses import Response

from tokenpace.web.gzipped import MIN_BYTES, Answer, accepts_gzip


def _request(accept: str | None) -> Request:
    headers = [] if accept is None else [(b"accept-encoding", accept.encode("latin-1"))]
    return Request({"type": "http", "method": "GET", "path": "/", "headers": headers, "query_string": b""})


@pytest.mark.parametrize(
    ("accept", "takes"),
    [
        ("gzip, deflate, br", True),
        ("br;q=1.0, GZIP;q=0.5", True),
        ("*", True),
        (None, False),
        ("identity", False),
        ("gzip;q=0", False),
        ("gzip; q=0.000", False),
        ("gzip;q=nonsense", False),  # a q-value that does not parse is no consent
        ("deflate," * 40 + "gzip", False),  # only the first 32 codings of a hostile header are read
    ],
)
def test_accept_encoding_is_read_as_rfc_9110_says(accept: str | None, takes: bool) -> None:
    assert accepts_gzip(_request(accept)) is takes


def test_a_large_body_gets_a_gzip_twin_with_its_own_length() -> None:
    body = b"<tr><td>sim-fast/sim</td><td>240 tok/s</td></tr>\n" * 200
    answer = Answer.of(Response(body, media_type="text/html", headers={"X-Kept": "yes"}))
    assert answer.gzipped is not None
    packed = answer.gzipped
    assert gzip.decompress(bytes(packed.body)) == body and len(packed.body) < len(body) / 10
    assert packed.headers["content-encoding"] == "gzip" and packed.headers["content-length"] == str(len(packed.body))
    assert packed.headers["x-kept"] == "yes" and packed.headers["content-type"].startswith("text/html")
    assert answer.plain.headers["vary"] == packed.headers["vary"] == "Accept-Encoding"
    assert answer.to(_request("gzip")) is packed and answer.to(_request(None)) is answer.plain


def test_small_or_already_encoded_bodies_are_left_alone() -> None:
    small = Answer.of(Response(b"x" * (MIN_BYTES - 1)))
    assert small.gzipped is None and small.to(_request("gzip")) is small.plain
    encoded = Answer.of(Response(gzip.compress(b"y" * 5000), headers={"Content-Encoding": "gzip"}))
    assert encoded.gzipped is None
