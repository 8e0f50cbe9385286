"""A request's canonical hash: what makes two requests the same request (decision 0126).

Two requests are the same when they would send the same thing to the same model: the provider, the model, the
endpoint, the job's hyperparameters and provider options, and the normalised request without the caller's ``id``
(the only field that names rather than describes it). The JSON is canonical (sorted keys, no spaces), so the order
a caller wrote the keys in does not matter. In-job dedup (Plan) uses it, and result reuse is meant to key on it too:
one definition, so the two never disagree about what "the same" means.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from batch_gateway.models.jobs import Job

HASH_BYTES = 16  # 128 bits: no collision among any number of requests a deployment will hold
CALLER_ONLY = ("id",)  # fields of a normalised request that name it and change nothing sent


def request_hash(job: Job, request: dict[str, Any]) -> bytes:
    """The canonical hash of ``request`` (normalised, as Plan reads it) sent in ``job``."""
    canonical = {
        "provider": job.provider,
        "model": job.model,
        "endpoint": job.endpoint,
        "hyperparameters": job.hyperparameters,
        "provider_options": job.provider_options,
        "request": {k: v for k, v in request.items() if k not in CALLER_ONLY},
    }
    text = json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.blake2b(text.encode(), digest_size=HASH_BYTES, person=b"bgw-request").digest()
