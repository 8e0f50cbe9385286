"""A request's canonical hash: what makes two requests the same request (decision 0126).

Two requests are the same when they would send the same thing to the same model: the provider, the model, the
endpoint, the job's hyperparameters and provider options, and the normalised request without the caller's ``id``
(the only field that names rather than describes it). The JSON is canonical (sorted keys, no spaces;
``jsonlines.dumps_sorted``), so the order a caller wrote the keys in does not matter. The job's part is written once
per job (``RequestHasher``), each request's after it. In-job dedup (Plan) uses it, and result reuse keys on it too:
one definition, so the two never disagree about what "the same" means.
"""

from __future__ import annotations

import hashlib
from typing import Any

from batch_gateway.jsonlines import dumps_sorted
from batch_gateway.models.jobs import Job

HASH_BYTES = 16  # 128 bits: no collision among any number of requests a deployment will hold
CALLER_ONLY = "id"  # the field of a normalised request that names it and changes nothing sent
PERSON = b"bgw-request"


def job_part(job: Job) -> bytes:
    """What every request of ``job`` is sent with, canonical: the part of a request's hash that is the job's (and of
    the whole-job fingerprint, ``reuse.job_fingerprint``: one definition for both)."""
    where = {
        "provider": job.provider,
        "model": job.model,
        "endpoint": job.endpoint,
        "hyperparameters": job.hyperparameters,
        "provider_options": job.provider_options,
    }
    return dumps_sorted(where) + b"\n"


class RequestHasher:
    """``request_hash`` for the requests of one job: the job's part hashed once, then each request's after it."""

    def __init__(self, job: Job) -> None:
        self._job_part = hashlib.blake2b(digest_size=HASH_BYTES, person=PERSON)
        self._job_part.update(job_part(job))

    def __call__(self, request: dict[str, Any]) -> bytes:
        sent = dict(request)
        sent.pop(CALLER_ONLY, None)
        digest = self._job_part.copy()
        digest.update(dumps_sorted(sent))
        return digest.digest()


def request_hash(job: Job, request: dict[str, Any]) -> bytes:
    """The canonical hash of ``request`` (normalised, as Plan reads it) sent in ``job``."""
    return RequestHasher(job)(request)
