"""The input guardrails' personal-data screen (decision 0124), run on every normalised request as it is written, in
the one writer every way in goes through (``intake.requests.write_requests``): before a line is stored for
submission, so a redacted value never reaches the bucket or the provider.

The request text is every string the provider reads: each message's content (a string or its text parts) and the
system prompt; never the model, an id or a hyperparameter. Under ``flag`` the screen only counts; under ``redact``
it writes each value's type in its place (``[EMAIL]``) and counts; under ``reject`` it names the requests and their
entity types, and the create stores nothing. A value is never logged, kept or put in an error.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.jobs import Guardrails
from batch_gateway.models.pii import PLACEHOLDERS, placeholder
from batch_gateway.models.requests import MAX_ERROR_DETAILS
from batch_gateway.ports import PiiDetector
from batch_gateway.service.context import Services

OFF, FLAG, REDACT, REJECT = "off", "flag", "redact", "reject"


class Screen:
    """One create's screen: ``item`` screens (and under redact rewrites) each normalised request; ``result`` is the
    job's ``Guardrails``; ``refuse`` raises the 400 of a rejected create."""

    def __init__(self, mode: str, detector: PiiDetector) -> None:
        self.mode = mode
        self.detector = detector
        self.flagged: Counter[str] = Counter()
        self.refused: list[tuple[str, list[str]]] = []  # (request id, its entity types) under reject
        self.refused_count = 0
        self._find: Callable[[str], list[tuple[str, int, int]]] | None = None  # the detector's, read at first use

    @property
    def active(self) -> bool:
        return self.mode != OFF

    def item(self, item: dict[str, Any]) -> dict[str, Any]:
        """The request as it may be written (redacted under redact); counts what it holds. The common case, nothing
        found, returns the request as it came without building anything (bench step ``guardrails``): a call of the
        detector's ``find`` per text and nothing else, the method read once (``services.pii`` is a proxy that builds
        the detector on first use, and each attribute read through it is a Python call)."""
        find = self._find
        if find is None:
            find = self._find = self.detector.find
        hits: list[tuple[int, int, list[tuple[str, int, int]]]] | None = None  # (message or -1, part or -1, spans)
        system = item.get("system")
        if system and (spans := find(system)):
            hits = [(-1, -1, spans)]
        for index, message in enumerate(item["messages"]):
            content = message["content"]
            if isinstance(content, str):
                if spans := find(content):
                    hits = [*hits, (index, -1, spans)] if hits else [(index, -1, spans)]
            else:
                for part_index, part in enumerate(content):
                    if spans := find(part["text"]):
                        hits = [*hits, (index, part_index, spans)] if hits else [(index, part_index, spans)]
        if hits is None:
            return item
        return self._found(item, hits)

    def _found(self, item: dict[str, Any], hits: list[tuple[int, int, list[tuple[str, int, int]]]]) -> dict[str, Any]:
        """Count what ``hits`` hold; under reject note the request, under redact the request with each span
        replaced by its type."""
        flagged = self.flagged
        for _, _, spans in hits:
            for kind, _, _ in spans:
                flagged[kind] += 1
        if self.mode == REJECT:
            self.refused_count += 1
            if len(self.refused) < MAX_ERROR_DETAILS:
                self.refused.append((item["id"], sorted({kind for _, _, spans in hits for kind, _, _ in spans})))
        if self.mode != REDACT:
            return item
        item = {**item, "messages": list(item["messages"])}
        for index, part_index, spans in hits:
            if index < 0:
                item["system"] = _redacted(item["system"], spans)
                continue
            message = item["messages"][index]
            if part_index < 0:
                item["messages"][index] = {**message, "content": _redacted(message["content"], spans)}
            else:
                parts = list(message["content"])
                parts[part_index] = {**parts[part_index], "text": _redacted(parts[part_index]["text"], spans)}
                item["messages"][index] = {**message, "content": parts}
        return item

    def refuse(self) -> None:
        """Under reject, any request holding personal data refuses the whole create: 400 naming the requests and
        their entity types, never a value."""
        if not self.refused:
            return
        details = [
            {"field": f"requests.{rid[:100]}", "message": "holds personal data: " + ", ".join(kinds)}
            for rid, kinds in self.refused
        ]
        first_id, first_kinds = self.refused[0]
        raise InvalidRequestError(
            f"{self.refused_count} request(s) hold personal data and guardrails.pii is reject; first: "
            f"requests.{first_id[:100]}: {', '.join(first_kinds)}",
            details=details,
        )

    def result(self) -> Guardrails:
        flagged = dict(sorted(self.flagged.items()))
        return Guardrails(pii=self.mode, flagged=flagged, redacted=flagged if self.mode == REDACT else {})


def _redacted(text: str, spans: list[tuple[str, int, int]]) -> str:
    """``text`` with each span replaced by its type (``[EMAIL]``)."""
    pieces: list[str] = []
    at = 0
    for kind, start, end in spans:
        pieces += (text[at:start], PLACEHOLDERS.get(kind) or placeholder(kind))
        at = end
    pieces.append(text[at:])
    return "".join(pieces)


def screen_for(services: Services, mode: str) -> Screen:
    """The screen of a job screened under ``mode``; the detector is built only for a mode that screens."""
    return Screen(mode, services.pii if mode != OFF else _NOTHING)


class _Nothing:
    def find(self, text: str) -> list[tuple[str, int, int]]:
        return []


_NOTHING = _Nothing()
