"""Transport-neutral request/reply values and the small wire formats the simulators need (JSON, multipart).

Handlers take a `Request` and return a `Reply`; only `server.py` touches sockets. A reply either carries a
complete body (sent with Content-Length) or a byte-chunk iterator (sent with chunked transfer encoding), which is
how 100,000-line result files are streamed without being built in memory.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def dumps(obj: Any) -> str:
    """Compact JSON, the way the providers send it."""
    return _encode(obj)


quote = json.encoder.encode_basestring  # a JSON string literal, C-accelerated


def json_template(shape: Any) -> str:
    """Compact JSON of `shape` with every "<<name>>" string turned into a `%(name)s` slot.

    Result files are written line by line, 100,000 lines at a time; filling a template is several times faster
    than `json.dumps` of a fresh dict, while the shape stays readable as a literal. Fill string slots with
    `quote(value)` and number slots with the number.
    """
    return re.sub(r'"<<(\w+)>>"', r"%(\1)s", _encode(shape).replace("%", "%%"))


@dataclass
class Reply:
    """An HTTP answer: status, headers and either `body` or a `stream` of byte chunks."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    stream: Iterable[bytes] | None = None
    # Run once the call is complete: its answer has left, or was dropped after the call was performed. A synchronous
    # model call's prompt-cache writes become readable then, not while the call is still on the wire.
    completed: Callable[[], None] | None = None


def json_reply(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, _encode(obj).encode(), "application/json", dict(headers or {}))


class Headers(Protocol):
    """Request headers as handlers read them: http.server's case-insensitive ``Message``, or a plain mapping."""

    def get(self, name: str, /) -> str | None: ...

    def items(self) -> Iterable[tuple[str, str]]: ...


@dataclass
class Request:
    """What a handler sees of an HTTP request."""

    method: str
    path: str
    query: dict[str, str]
    headers: Headers
    body: bytes
    base_url: str  # scheme://host:port as the client addressed us, for absolute URLs such as results_url

    def header(self, name: str) -> str | None:
        return self.headers.get(name)


@dataclass(frozen=True)
class Route:
    """One endpoint: method, path template such as "/v1/batches/{id}", fault/stats op name, handler."""

    method: str
    template: str
    op: str
    handler: Callable[..., Reply]

    @property
    def pattern(self) -> re.Pattern[str]:
        return _compiled(self.template)


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _compiled(template: str) -> re.Pattern[str]:
    pattern = _PATTERNS.get(template)
    if pattern is None:
        pattern = re.compile(r"\A" + re.sub(r"\\{(\w+)\\}", r"(?P<\1>[^/]+)", re.escape(template)) + r"\Z")
        _PATTERNS[template] = pattern
    return pattern


class BadBody(ValueError):
    """The request body is not what the endpoint accepts (bad JSON, bad multipart)."""


def parse_json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadBody(f"request body is not valid JSON: {exc}") from None


_BOUNDARY = re.compile(r'boundary="?([^";]+)"?', re.I)
_DISPOSITION_PARAM = re.compile(r'(name|filename)="((?:[^"\\]|\\.)*)"', re.I)


def parse_multipart(body: bytes, content_type: str) -> dict[str, tuple[str | None, bytes]]:
    """Fields of a multipart/form-data body as {name: (filename or None, data)}.

    A find-based scan rather than the `email` package: it copies each part once, which matters for 200 MB uploads.
    """
    match = _BOUNDARY.search(content_type or "")
    if not match or not content_type.lower().startswith("multipart/form-data"):
        raise BadBody("expected a multipart/form-data body with a boundary")
    delimiter = b"--" + match.group(1).encode("latin-1")
    fields: dict[str, tuple[str | None, bytes]] = {}
    pos = body.find(delimiter)
    if pos < 0:
        raise BadBody("multipart body has no parts")
    while True:
        pos += len(delimiter)
        if body[pos : pos + 2] == b"--":
            break
        header_end = body.find(b"\r\n\r\n", pos)
        if header_end < 0:
            raise BadBody("multipart part without headers")
        headers = body[pos:header_end].decode("utf-8", "replace")
        data_start = header_end + 4
        next_delimiter = body.find(b"\r\n" + delimiter, data_start)
        if next_delimiter < 0:
            raise BadBody("unterminated multipart body")
        name = filename = None
        for line in headers.split("\r\n"):
            if line.lower().startswith("content-disposition:"):
                for key, value in _DISPOSITION_PARAM.findall(line):
                    if key.lower() == "name":
                        name = value
                    else:
                        filename = value
        if name is not None:
            fields[name] = (filename, body[data_start:next_delimiter])
        pos = next_delimiter + 2
    return fields
