"""A request's line and headers as they go on the wire, built before the clock starts (HttpRequest.head)."""

from __future__ import annotations


def encode_head(method: str, target: str, authority: str, headers: dict[str, str], length: int | None) -> bytes:
    """The request line and headers, CRLF-terminated; a header the caller set itself is not sent twice."""
    names = {k.lower() for k in headers}
    lines = [f"{method} {target} HTTP/1.1"]
    if "host" not in names:
        lines.append(f"Host: {authority}")
    if length is not None and "content-length" not in names:
        lines.append(f"Content-Length: {length}")
    if "accept-encoding" not in names:
        lines.append("Accept-Encoding: identity")  # compression batches a stream's events: never asked for
    lines += [f"{k}: {v}" for k, v in headers.items()]
    text = "\r\n".join(lines) + "\r\n\r\n"
    if "\0" in text or "\r\n\r\n" in text[:-4]:
        raise ValueError("a header holds a line break or NUL")  # a header must not end the head early
    return text.encode("latin-1")
