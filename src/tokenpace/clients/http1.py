"""One HTTP/1.1 connection: a request written, its response read and parsed as the bytes come.

The timed path is as short as the socket allows: the request's bytes were built before the clock started and go
out in one ``sendmsg``; each read is one ``recvmsg`` whose kernel receive stamp (clients/stamps.py) becomes the
arrival time of every body piece in it, then llhttp (``httptools``, the parser uvicorn uses) frames it; a
piece of a 2xx body costs one list append and the caps' two counters. Nothing runs on the loop between reads.

Bounded like everything a server sends: the response head at MAX_HEAD bytes, one header at MAX_HEADER_LINE, a
body at its caps (body.py), counted after ``Content-Encoding`` is undone in bounded steps, so a gzip bomb costs
about the cap; an error body is kept up to what the caller asks. Failures are WireErrors (clients/wire.py).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import time
import zlib
from collections.abc import Callable
from typing import Protocol

import httptools

from tokenpace.clients import stamps
from tokenpace.clients.body import Limits, Response, size
from tokenpace.clients.connect import RECV_BYTES, Link
from tokenpace.clients.wire import BadResponse, Disconnected, IdleTimedOut, WireError
from tokenpace.measure.failures import ErrorKind, Failure
from tokenpace.measure.timing import Recording

MAX_HEAD = 2**20  # the status line and every header: MAX_RESPONSE_HEADERS of the longest a proxy would pass
MAX_HEADER_LINE = 8190  # one header's name and value, as aiohttp and nginx allow
MAX_RESPONSE_HEADERS = 128  # as aiohttp allows
_SEGMENTS_IN = struct.Struct("=I")  # struct tcp_info's tcpi_data_segs_in (Linux 4.6+): data packets received
_SEGMENTS_AT = 152
_INFO_BYTES = _SEGMENTS_AT + _SEGMENTS_IN.size
_CODINGS = {"gzip": 47, "x-gzip": 47, "deflate": 47}  # wbits 32 + 15: zlib or gzip, told by the header bytes


class Reads(Protocol):
    """Who is told how late the loop read what arrived (load/lag.py's LoopLag)."""

    def read(self, now_ns: int, late_ns: int, doubt_ns: int) -> None:
        """A read at ``now_ns`` whose first bytes came up to ``late_ns`` before, stamped exact to ``doubt_ns``."""

    def busy(self, since_ns: int) -> int | None:
        """At most how long the loop could have been kept from reading since ``since_ns``, ns; None: unknown."""


class HttpConnection:
    """One kept-alive connection; one request on it at a time (``send``), read in the loop's reader callback."""

    def __init__(self, link: Link, reads: Reads | None = None) -> None:
        self.link, self.sock = link, link.sock
        self.loop = asyncio.get_running_loop()
        self.kernel = stamps.enable(self.sock)
        self.closed = False
        self._reads = reads
        self._anc = stamps.ANCILLARY_BYTES if self.kernel else 0
        self._segments = 0  # data packets received so far, as of the last count
        self._skipped = 0  # reads since then that were not counted (see _readable)
        self._last_read_ns = 0
        self._ex: _Exchange | None = None
        self._pending = memoryview(b"")
        self.loop.add_reader(self.sock.fileno(), self._readable)

    def send(
        self, data: list[bytes], rec: Recording, limits: Limits, stream: bool, keep: int, cap: int, idle_s: float,
        on_sent: Callable[[Recording], None] | None,
    ) -> asyncio.Future[Response]:  # fmt: skip
        """Write the request; the future ends with the response once it is read (a 2xx body streamed into
        ``rec`` when ``stream``, any other kept up to ``keep`` bytes and read up to ``cap``) or a WireError."""
        ex = self._ex = _Exchange(self, rec, limits, stream, keep, cap, idle_s)
        rec.t_sent_ns = ex.floor_ns = time.perf_counter_ns()
        self._write(data)
        if on_sent is not None:
            on_sent(rec)
        return ex.done

    @property
    def reusable(self) -> bool:
        """Open, and no response left half read on it."""
        return not self.closed and self._ex is None

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.loop.remove_reader(self.sock.fileno())
        self.loop.remove_writer(self.sock.fileno())
        self.sock.close()
        if self._ex is not None:
            self._ex.stop()

    # --- writing ---------------------------------------------------------------------------------------

    def _write(self, data: list[bytes]) -> None:
        if self.link.tls is not None and self.link.outgoing is not None:
            for part in data:
                self.link.tls.write(part)
            data = [self.link.outgoing.read()]
        try:
            sent = self.sock.sendmsg(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            self._fail(Disconnected(f"the connection failed while writing ({exc.strerror})", written=False))
            return
        whole = b"".join(data) if len(data) > 1 else data[0]
        if sent < len(whole):
            self._pending = memoryview(whole)[sent:]
            self.loop.add_writer(self.sock.fileno(), self._writable)
        elif self._ex is not None:
            self._ex.written = True

    def _writable(self) -> None:
        try:
            sent = self.sock.send(self._pending)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._fail(Disconnected(f"the connection failed while writing ({exc.strerror})", written=False))
            return
        self._pending = self._pending[sent:]
        if not self._pending:
            self.loop.remove_writer(self.sock.fileno())
            if self._ex is not None:
                self._ex.written = True

    # --- reading ---------------------------------------------------------------------------------------

    def _readable(self) -> None:
        try:
            data, ancillary, _, _ = self.sock.recvmsg(RECV_BYTES, self._anc)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lost(f"the connection failed ({exc.strerror or type(exc).__name__})")
            return
        now, real = time.perf_counter_ns(), time.time_ns()
        ex = self._ex
        t = stamps.arrival(ancillary, now, real, ex.floor_ns) if ancillary and ex is not None else now
        previous, self._last_read_ns = self._last_read_ns, now
        if not data:
            self._eof()
            return
        if self.link.tls is not None:
            data = self._decrypt(data)
            if not data:
                return
        if ex is None:  # bytes nobody asked for, on an idle connection: it cannot be trusted with a request
            self.close()
            return
        ex.last_read_ns = now
        ex.feed(t, data)
        if self._ex is not ex:  # the response ended in this read
            ex.let_go()
        if not ancillary:
            return
        earlier = 0
        if ex.one_record:  # the last byte completed the one event it holds: the stamp is exact for it
            self._skipped += 1
        elif self._packets() > 1:  # its first bytes came after the previous read, and after the loop last could read
            since = max(previous, ex.floor_ns)
            busy = self._reads.busy(since) if self._reads is not None else None
            earlier = max(0, min(t - since, t - since if busy is None else busy))
            if earlier:
                ex.rec.doubt[t] = earlier
        if self._reads is not None:
            self._reads.read(now, now - t + earlier, earlier)

    def _packets(self) -> int:
        """Data packets received since the last read (one more than this read took, at worst: never fewer)."""
        try:
            info = self.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _INFO_BYTES)
        except (OSError, AttributeError):
            return 2  # unknown: judged as a read of several
        if len(info) < _INFO_BYTES:
            return 2
        total = int(_SEGMENTS_IN.unpack_from(info, _SEGMENTS_AT)[0])
        # Reads of one record were not counted: each took a packet at least (more would only count as several here).
        n, self._segments, self._skipped = total - self._segments - self._skipped, total, 0
        return n

    def _decrypt(self, data: bytes) -> bytes:
        assert self.link.tls is not None and self.link.incoming is not None
        self.link.incoming.write(data)
        out = []
        try:
            while True:
                out.append(self.link.tls.read(RECV_BYTES))
                if not out[-1]:  # the server's TLS close_notify: the connection is over
                    self._eof()
                    break
        except ssl.SSLWantReadError:
            pass
        except OSError as exc:  # ssl.SSLError: a broken record
            self._fail(BadResponse(f"bad response: TLS failed ({getattr(exc, 'reason', None) or exc.strerror})"))
            return b""
        return b"".join(out)

    def _eof(self) -> None:
        ex = self._ex
        if ex is not None and ex.head_done and ex.until_close:
            ex.complete()
        elif ex is not None and ex.head_done:
            self._lost("the server closed the connection before the response ended")
        elif ex is not None:
            self._fail(Disconnected("the server closed the connection without answering", written=ex.written))
        if ex is not None:
            ex.let_go()
        self.close()

    def _lost(self, why: str) -> None:
        ex = self._ex
        self._fail(Disconnected(why, written=ex is not None and ex.written))

    def _fail(self, error: WireError) -> None:
        ex = self._ex
        if ex is not None and not ex.done.done():
            ex.done.set_exception(error)
        self.close()

    def _finished(self, reusable: bool) -> None:
        self._ex = None
        if not reusable:
            self.close()


class _Exchange:
    """One request's response as it is parsed; llhttp calls the ``on_*`` methods during ``feed``."""

    def __init__(
        self, conn: HttpConnection, rec: Recording, limits: Limits, stream: bool, keep: int, cap: int, idle_s: float
    ) -> None:
        self.conn, self.rec, self.limits, self.stream, self.keep, self.cap = conn, rec, limits, stream, keep, cap
        self.done: asyncio.Future[Response] = conn.loop.create_future()
        self.response = Response()
        # The parser holds this exchange's callbacks: a reference cycle, broken once the exchange is over (let_go),
        # or its recording, every chunk in it, would wait for the garbage collector (30 ms pauses at 256 streams).
        self.parser: httptools.HttpResponseParser | None = httptools.HttpResponseParser(self)
        self.floor_ns = 0
        self.written = False
        self.head_done = self.until_close = False
        self.head_bytes = self.total = self.line = 0
        self.t = 0  # the arrival time of the read being parsed
        self.pieces, self.piece = 0, b""  # the body pieces the read being parsed gave, and the last of them
        self.max_total, self.max_line = limits.response_bytes, limits.line_bytes
        self.inflate: zlib._Decompress | None = None
        self.error: WireError | None = None
        self.stopped = False  # a cap was passed: the rest of the response is not read
        self.idle_ns = round(idle_s * 1e9)
        self.last_read_ns = time.perf_counter_ns()
        self.idle = conn.loop.call_later(idle_s, self.check_idle)

    @property
    def one_record(self) -> bool:
        """The last read brought no body, or one piece of it holding one whole event (SSE) or line (NDJSON) that
        ends it."""
        if self.pieces != 1:
            return self.pieces == 0
        body = self.piece
        return body.endswith(b"\n") and (body.count(b"\n\n") if b"\n\n" in body else body.count(b"\n")) == 1

    def check_idle(self) -> None:
        quiet = time.perf_counter_ns() - self.last_read_ns
        if quiet < self.idle_ns:
            self.idle = self.conn.loop.call_later((self.idle_ns - quiet) / 1e9, self.check_idle)
        elif not self.done.done():
            self.conn._fail(IdleTimedOut(f"no byte for {self.idle_ns / 1e9:g} s"))

    def let_go(self) -> None:
        """The exchange is over: the parser goes (never while it is parsing: it is running these callbacks)."""
        self.parser = None

    def stop(self) -> None:
        self.let_go()
        self.idle.cancel()
        if not self.done.done():
            self.done.set_exception(Disconnected("the connection was closed by the client", written=self.written))

    def feed(self, t: int, data: bytes) -> None:
        self.t = t
        self.pieces = 0
        if not self.head_done:
            room = MAX_HEAD - self.head_bytes
            self.head_bytes += len(data)
            if len(data) > room:
                self._parse(data[:room])
                if not self.head_done and self.error is None:
                    self.error = BadResponse(f"bad response: the response's headers are over {size(MAX_HEAD)}")
                elif self.error is None and not self.stopped:
                    self._parse(data[room:])
                self._settle()
                return
        self._parse(data)
        self._settle()

    def _parse(self, data: bytes) -> None:
        if self.error is not None or self.stopped or self.done.done() or self.parser is None:
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self.error = BadResponse("bad response: the server switched protocols")
        except httptools.HttpParserError as exc:
            if self.error is None:  # the reason, never the bytes
                why = str(exc).split(":")[0][:80] or type(exc).__name__
                what = "invalid HTTP framing" if self.head_done else "not valid HTTP"
                self.error = BadResponse(f"bad response: {what} ({why})")

    def _settle(self) -> None:
        if self.error is not None:
            self.conn._fail(self.error)
        elif self.stopped:
            self.complete(reusable=False)

    def complete(self, reusable: bool = False) -> None:
        self.idle.cancel()
        if not self.done.done():
            self.done.set_result(self.response)
        self.conn._finished(reusable)

    # --- llhttp's callbacks ------------------------------------------------------------------------------

    def on_header(self, name: bytes, value: bytes) -> None:
        if len(name) + len(value) > MAX_HEADER_LINE:
            self.error = self.error or BadResponse(
                f"bad response: a response header line is over {MAX_HEADER_LINE} bytes"
            )
        elif len(self.response.headers) >= MAX_RESPONSE_HEADERS:
            self.error = self.error or BadResponse(f"bad response: more than {MAX_RESPONSE_HEADERS} headers")
        else:
            self.response.headers.append((name.decode("latin-1").lower(), value.decode("latin-1").strip()))

    def on_headers_complete(self) -> None:
        assert self.parser is not None  # it is the parser calling
        status = self.parser.get_status_code()
        if status < 200:  # an interim answer (100, 103): its headers are not the response's
            self.response.headers.clear()
            return
        r, rec = self.response, self.rec
        r.status, self.head_done = status, True
        rec.t_headers_ns, rec.http_status, rec.request_id = self.t, status, r.header("x-request-id")
        coding = (r.header("content-encoding") or "identity").lower()
        if coding in _CODINGS:
            self.inflate = zlib.decompressobj(_CODINGS[coding])
        elif coding != "identity":
            self.error = self.error or BadResponse("bad response: a Content-Encoding tokenpace does not read")
        length, chunked = r.header("content-length"), "chunked" in (r.header("transfer-encoding") or "").lower()
        self.until_close = length is None and not chunked and status not in (204, 304)
        self.stream = self.stream and status < 300

    def on_body(self, body: bytes) -> None:
        if self.inflate is not None:
            try:
                body = self.inflate.decompress(body, max(self.limits.response_bytes - self.total, self.cap) + 1)
            except zlib.error:
                self.error = self.error or BadResponse("bad response: a compressed body that does not inflate")
                return
        if not self.stream:
            if len(self.response.body) < self.keep:
                self.response.body += body[: self.keep - len(self.response.body)]
            self.total += len(body)
            if self.total >= self.cap:
                self.stopped = True
            return
        self.rec.chunks.append((self.t, body))
        self.pieces += 1
        self.piece = body
        n = len(body)
        self.total += n
        end = body.rfind(b"\n")
        if end < 0:
            end = body.rfind(b"\r")
        self.line = self.line + n if end < 0 else n - end - 1
        if self.total <= self.max_total and self.line <= self.max_line:
            return
        if self.total > self.max_total:
            why = f"response passed its {size(self.limits.response_bytes)} cap (--max-response-bytes); reading stopped"
        else:
            why = f"a line of the response passed its {size(self.limits.line_bytes)} cap; reading stopped"
        self.rec.failure = Failure(ErrorKind.RESPONSE_TOO_LARGE, why)
        self.stopped = True

    def on_message_complete(self) -> None:
        if not self.head_done or self.error is not None:  # an interim answer's end, or a response that failed
            return
        assert self.parser is not None  # it is the parser calling
        self.complete(reusable=self.parser.should_keep_alive() and self.written and not self.stopped)
