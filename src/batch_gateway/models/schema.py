"""The schema version of what one release leaves for another: the jobs table's records and the workflow's state
(the upgrade contract, decision 0121).

Every record this release writes whole (a put: a job, a chunk, a budget, an API key, a webhook subscription, a quota
hold) and every state a workflow step returns carries ``schema_version`` = ``SCHEMA_VERSION``. A record or state
without one is version 1: the shapes of release 0.1.0, which wrote none. A partial update leaves the version as it
is: the version is the shape its writer gave the whole record.

A reader accepts every version written before its own (``OLDEST_READABLE`` up; each is brought to this release's
shapes by ``UPGRADES`` in turn), its own, and the next one (``NEWEST_READABLE``): the older ones because a deploy
meets the previous release's jobs in flight and ended jobs are kept for good (a partial update never rewrites their
version), the next one for a rollback of one release while the newer one's jobs run (a release only adds fields,
which an older reader ignores). Anything else is refused by ``readable`` with ``UnreadableSchemaError`` before any
step acts on it, so nothing is written from a record misread.

Plain code, no pydantic: the API functions read job records on every request (decision 0007).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from batch_gateway.contract.errors import UnreadableSchemaError

SCHEMA_FIELD = "schema_version"
SCHEMA_VERSION = 2  # 0.2.0: version 1 plus a chunk's reconcile_after and the version itself
UNVERSIONED = 1  # what a record or state without the field is: release 0.1.0's shapes
# Every version ever written: raised only by a release that has rewritten every older record (a migration), and
# never above SCHEMA_VERSION - 1, the previous release's, whose jobs a deploy meets in flight.
OLDEST_READABLE = UNVERSIONED
NEWEST_READABLE = SCHEMA_VERSION + 1  # one release ahead: a rollback

Data = TypeVar("Data", bound=Mapping[str, Any])

# version -> how a record of that version becomes one of the next (rename, re-type), applied in turn up to
# SCHEMA_VERSION; an entry stays for as long as a record of its version may be stored. Version 1 to 2 only added
# fields, whose defaults read a version 1 record as it was meant; a meaning that needs a step's settings is resolved
# by that step (a chunk 0.1.0 left reconciling: workflow/submit.py).
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def version_of(data: Mapping[str, Any]) -> int:
    """The schema version ``data`` was written in (``UNVERSIONED`` when it says none)."""
    version = data.get(SCHEMA_FIELD, UNVERSIONED)
    return version if isinstance(version, int) and not isinstance(version, bool) else -1


def readable(data: Data, what: str) -> Data:
    """``data`` if this release reads its version (upgraded to this release's shapes where ``UPGRADES`` says how);
    else ``UnreadableSchemaError`` naming ``what`` and the versions, never the data."""
    version = version_of(data)
    if not OLDEST_READABLE <= version <= NEWEST_READABLE:
        said = f"{data[SCHEMA_FIELD]!r}" if SCHEMA_FIELD in data else f"{UNVERSIONED} (it names none)"
        raise UnreadableSchemaError(
            f"{what} has schema version {said}; this release reads versions {OLDEST_READABLE} to {NEWEST_READABLE}"
        )
    while version in UPGRADES and version < SCHEMA_VERSION:
        data = UPGRADES[version](dict(data))  # type: ignore[assignment]  # a mapping in, the same kind out
        version += 1
    return data


def stamped(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as this release writes it whole: with its schema version."""
    return {**data, SCHEMA_FIELD: SCHEMA_VERSION}
