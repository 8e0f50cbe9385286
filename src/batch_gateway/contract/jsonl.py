"""The one JSONL input format, shared by the CLI (``batch-gateway submit``) and the S3 drop folder.

::

    {"batch_gateway": {"provider": "anthropic", "model": "claude-sonnet-4-20250514", "hyperparameters": {...}}}
    {"id": "request_A", "request": "Name an animal that starts with the letter 'A'"}
    {"id": "r2", "request": {"messages": [{"role": "user", "content": "Hi"}], "system": "Be brief"}}

The header line is optional and, when present, must be the first non-blank line. Every other non-blank line is one
request: ``id`` is the caller's id (a non-empty string, unique in the file), ``request`` is a request in any form the
HTTP API accepts (a prompt string, a list of messages, or an object with ``messages``). Blank lines are ignored.

The parser reads every line before it answers and reports all problems at once, each with its 1-based line number,
so a user fixes a file in one pass. Pure Python: no AWS imports.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from batch_gateway.contract.errors import InvalidRequestError

HEADER_KEY = "batch_gateway"
HEADER_FIELDS: dict[str, tuple[type, ...]] = {
    "provider": (str,),
    "model": (str,),
    "hyperparameters": (dict,),
    "endpoint": (str,),
    "metadata": (dict,),
    "provider_options": (dict,),
    "prompt_cache": (str,),  # "auto" | "off" (decision 0128)
    "guardrails": (dict,),  # {"pii": mode} (decision 0124)
    "provider_headers": (dict,),  # {header name: value}, allow-listed by the deployment (decision 0129)
    "reuse": (dict,),  # {"scope": "owner", "max_age_seconds": n} (decision 0127)
    # deadlines and lanes (decision 0142): their values are checked as the create body's
    "deadline": (str,),  # RFC 3339 with an offset
    "deadline_seconds": (int,),
    "lanes": (list,),
    "max_cost_usd": (int, float),
}
LINE_FIELDS = frozenset({"id", "request"})
MAX_DETAILS = 100

_TYPE_NAMES: dict[type, str] = {str: "a string", dict: "an object", int: "a number", list: "a list"}


@dataclass(frozen=True)
class ParsedFile:
    """A parsed input file: the header's job options (or ``None``) and the requests keyed by caller id, in file
    order."""

    header: dict[str, Any] | None
    requests: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)  # caller id -> its 1-based line number


class _Problems:
    """Collects line problems; keeps the first ``MAX_DETAILS`` and counts the rest."""

    def __init__(self) -> None:
        self.details: list[dict[str, Any]] = []
        self.total = 0

    def add(self, line: int, message: str) -> None:
        self.total += 1
        if len(self.details) < MAX_DETAILS:
            self.details.append({"line": line, "message": message})

    def raise_if_any(self) -> None:
        if not self.total:
            return
        first = self.details[0]
        noun = "problem" if self.total == 1 else "problems"
        more = f" (first {MAX_DETAILS} listed)" if self.total > len(self.details) else ""
        raise InvalidRequestError(
            f"invalid JSONL input: {self.total} {noun}{more}; line {first['line']}: {first['message']}",
            details=self.details,
        )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_TWO_TO_63 = float(2**63)  # orjson reads integers up to 2**64 - 1 exactly; a larger one becomes a float above this


def _load_line(text: str) -> Any:
    """One line's JSON value, as ``json.loads`` reads it (the same value or the same error), several times faster:
    orjson reads the lines it reads exactly as the standard library does. Not a line holding an integer beyond 64 bits
    (orjson turns it into a float); what orjson refuses (NaN, lone surrogate escapes,
    ``1e400``, bad JSON) goes to the standard library, which gives its own answer or error."""
    fast = sys.modules.get("orjson")  # loaded by every server function; the SDK and CLI never load it (decision 24)
    if fast is not None:
        try:
            value = fast.loads(text)
        except fast.JSONDecodeError:
            return json.loads(text, parse_constant=_reject_constant)
        # An integer beyond 64 bits comes back as a float, a whole one of at least 2**63: a line holding such a float
        # (or a float literal that large) is read again by the standard library. Walking the parsed value costs far
        # less than scanning a long prompt's text for digits.
        if not _holds_huge_whole_float(value):
            return value
    return json.loads(text, parse_constant=_reject_constant)


def _holds_huge_whole_float(value: Any) -> bool:
    """Whether a parsed value holds, anywhere, a whole float of magnitude 2**63 or more (walked without recursion)."""
    stack = [value]
    pop, extend = stack.pop, stack.extend
    while stack:
        item = pop()
        kind = type(item)  # parsed JSON: exactly dict, list, str, int, float, bool or None
        if kind is dict:
            extend(item.values())
        elif kind is list:
            extend(item)
        elif kind is float and abs(item) >= _TWO_TO_63 and item.is_integer():
            return True
    return False


def _decode(raw: bytes | str, line_no: int, problems: _Problems) -> str | None:
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.add(line_no, f"invalid UTF-8 at byte {exc.start + 1}")
            return None
    else:
        text = raw
    if line_no == 1:
        text = text.removeprefix("\ufeff")  # editors on Windows write a byte order mark
    return text


def _check_header(header: Any, line_no: int, problems: _Problems) -> dict[str, Any] | None:
    if not isinstance(header, dict):
        problems.add(line_no, f'"{HEADER_KEY}" header must be an object')
        return None
    ok = True
    for key, value in header.items():
        expected = HEADER_FIELDS.get(key)
        if expected is None:
            allowed = ", ".join(HEADER_FIELDS)
            problems.add(line_no, f'unknown header field "{key}" (allowed: {allowed})')
            ok = False
        elif not isinstance(value, expected):
            problems.add(line_no, f'header field "{key}" must be {_TYPE_NAMES[expected[0]]}')
            ok = False
    return header if ok else None


_REQUEST_TYPES = (str, list, dict)


def _check_request_line(obj: dict[str, Any], line_no: int, problems: _Problems) -> tuple[str, Any] | None:
    caller_id = obj.get("id")
    request = obj.get("request")
    if len(obj) == 2 and type(caller_id) is str and type(request) in _REQUEST_TYPES and caller_id.strip():
        return caller_id, request  # the usual line: {"id", "request"} and nothing else (both present: not None)
    ok = True
    if "id" not in obj:
        hint = ' (this looks like a provider batch line; use {"id": ..., "request": ...})' if "custom_id" in obj else ""
        problems.add(line_no, f'missing "id"{hint}')
        ok = False
    elif not isinstance(caller_id, str):
        problems.add(line_no, '"id" must be a string')
        ok = False
    elif not caller_id.strip():
        problems.add(line_no, '"id" must not be empty')
        ok = False

    if request is None:
        problems.add(line_no, 'missing "request"')
        ok = False
    elif not isinstance(request, str | list | dict):
        problems.add(line_no, '"request" must be a prompt string, a list of messages or an object')
        ok = False

    for key in sorted(obj.keys() - LINE_FIELDS):
        problems.add(line_no, f'unknown field "{key}" (a request line has only "id" and "request")')
        ok = False
    if not ok or not isinstance(caller_id, str):
        return None
    return caller_id, request


def parse_jsonl(lines: Iterable[bytes | str]) -> ParsedFile:
    """Parse an input file given as lines (bytes or text, with or without line endings).

    Raises ``InvalidRequestError`` listing every problem as ``{"line": n, "message": ...}`` (at most
    ``MAX_DETAILS``); nothing is returned for a file with any problem.
    """
    problems = _Problems()
    header: dict[str, Any] | None = None
    requests: dict[str, Any] = {}
    first_line_of: dict[str, int] = {}
    seen_content = False
    request_lines = 0

    for line_no, raw in enumerate(lines, start=1):
        text = _decode(raw, line_no, problems)
        if text is None:
            seen_content = True
            request_lines += 1
            continue
        if not text.strip():
            continue
        is_first = not seen_content
        seen_content = True
        try:
            obj = _load_line(text)
        except ValueError as exc:
            problems.add(line_no, f"invalid JSON: {exc}")
            request_lines += 1
            continue
        if not isinstance(obj, dict):
            problems.add(line_no, f"expected a JSON object, got {type(obj).__name__}")
            request_lines += 1
            continue

        if HEADER_KEY in obj:
            if not is_first:
                problems.add(line_no, f'the "{HEADER_KEY}" header must be on the first line')
            elif len(obj) > 1:
                extra = ", ".join(sorted(k for k in obj if k != HEADER_KEY))
                problems.add(line_no, f'the header line holds only "{HEADER_KEY}" (found also: {extra})')
            else:
                header = _check_header(obj[HEADER_KEY], line_no, problems)
            continue

        request_lines += 1
        parsed = _check_request_line(obj, line_no, problems)
        if parsed is None:
            continue
        caller_id, request = parsed
        if caller_id in first_line_of:
            problems.add(line_no, f'duplicate id "{caller_id}" (first on line {first_line_of[caller_id]})')
            continue
        first_line_of[caller_id] = line_no
        requests[caller_id] = request

    if request_lines == 0:
        problems.add(1, "the file has no requests")
    problems.raise_if_any()
    return ParsedFile(header=header, requests=requests, lines=first_line_of)


def iter_jsonl_lines(stream: BinaryIO | Iterable[bytes], chunk_size: int = 1 << 16) -> Iterator[bytes]:
    """Split a binary stream (a file, an S3 ``StreamingBody``) or an iterable of byte chunks into lines, in
    constant memory.

    Splits on ``\\n`` only, so line numbers agree with what editors show even when a line holds other Unicode line
    separators inside a JSON string.
    """
    read = getattr(stream, "read", None)
    chunks: Iterable[bytes] = iter(lambda: read(chunk_size), b"") if read else stream
    for line in split_lines(chunks):
        yield line.removesuffix(b"\r")


def split_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Byte chunks -> lines without their ``\\n``, in work linear in the bytes however long a line is: only the new
    chunk is searched for a newline, and the pieces of an unfinished line are joined once, when it ends (adding
    each chunk to the line so far would copy and rescan it each time: quadratic)."""
    pieces: list[bytes] = []
    for chunk in chunks:
        if b"\n" not in chunk:
            if chunk:
                pieces.append(chunk)
            continue
        *complete, rest = chunk.split(b"\n")
        if pieces:
            pieces.append(complete[0])
            complete[0] = b"".join(pieces)
            pieces = []
        yield from complete
        if rest:
            pieces.append(rest)
    if pieces:
        yield b"".join(pieces)


def parse_jsonl_file(path: str) -> ParsedFile:
    """Parse the file at ``path`` (see ``parse_jsonl``)."""
    with open(path, "rb") as stream:
        return parse_jsonl(iter_jsonl_lines(stream))


def dumps_line(obj: Any) -> str:
    """One JSONL line (with its newline): compact, UTF-8 kept readable."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"


def dump_jsonl(requests: Mapping[str, Any], header: Mapping[str, Any] | None = None) -> Iterator[str]:
    """The inverse of ``parse_jsonl``: lines of an input file for ``requests`` (and an optional header)."""
    if header:
        yield dumps_line({HEADER_KEY: dict(header)})
    for caller_id, request in requests.items():
        yield dumps_line({"id": caller_id, "request": request})


class RequestFile:
    """An input file read as a stream, for the drop folder: the header first, then ``(id, request, line)`` for each
    good request line, one at a time, so a file of any size is never held in memory (only a 64-bit hash per id,
    to find duplicates). Problems go to ``problems`` as ``{"line", "message"}``; the caller raises them at the end.
    """

    def __init__(self, lines: Iterable[bytes | str], problems: list[dict[str, Any]]) -> None:
        self._lines = enumerate(lines, start=1)
        self._problems = _Problems()
        self._problems.details = problems
        self.problems = problems
        self.header: dict[str, Any] | None = None
        self._first: tuple[int, dict[str, Any]] | None = None
        self._request_lines = 0
        self._read_header()

    def _next_object(self) -> tuple[int, dict[str, Any]] | None:
        """The next non-blank line as an object; bad lines are recorded and skipped."""
        for line_no, raw in self._lines:
            text = _decode(raw, line_no, self._problems)
            if text is None:
                self._request_lines += 1
                continue
            if not text.strip():
                continue
            try:
                obj = _load_line(text)
            except ValueError as exc:
                self._problems.add(line_no, f"invalid JSON: {exc}")
                self._request_lines += 1
                continue
            if not isinstance(obj, dict):
                self._problems.add(line_no, f"expected a JSON object, got {type(obj).__name__}")
                self._request_lines += 1
                continue
            return line_no, obj
        return None

    @property
    def empty(self) -> bool:
        """Nothing but blank lines."""
        return self.header is None and self._first is None and self._request_lines == 0 and not self.problems

    def _read_header(self) -> None:
        first = self._next_object()
        if first is None:
            return
        line_no, obj = first
        if HEADER_KEY in obj:
            if len(obj) > 1:
                extra = ", ".join(sorted(k for k in obj if k != HEADER_KEY))
                self._problems.add(line_no, f'the header line holds only "{HEADER_KEY}" (found also: {extra})')
            else:
                self.header = _check_header(obj[HEADER_KEY], line_no, self._problems)
        else:
            self._first = first

    def requests(self) -> Iterator[tuple[str, Any, int]]:
        first_line_of: dict[int, int] = {}  # by the id's 64-bit hash: its 8 bytes, not the id
        pending = self._first
        while True:
            current = pending or self._next_object()
            pending = None
            if current is None:
                break
            line_no, obj = current
            if HEADER_KEY in obj:
                self._problems.add(line_no, f'the "{HEADER_KEY}" header must be on the first line')
                continue
            self._request_lines += 1
            parsed = _check_request_line(obj, line_no, self._problems)
            if parsed is None:
                continue
            caller_id, request = parsed
            first = first_line_of.setdefault(hash(caller_id), line_no)
            if first != line_no:
                self._problems.add(line_no, f'duplicate id "{caller_id[:100]}" (first on line {first})')
                continue
            yield caller_id, request, line_no
        if self._request_lines == 0:
            self._problems.add(1, "the file has no requests")
