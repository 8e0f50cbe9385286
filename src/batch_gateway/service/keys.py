"""Where each payload lives in the bucket: everything of a job under `jobs/<job id>/`, a chunk's files under its
`chunks/<index>/`; uploaded input files under `uploads/`. The one place that names these keys."""

import hashlib

from batch_gateway.constants import UPLOADS_PREFIX


def requests_key(job_id: str) -> str:
    return f"jobs/{job_id}/requests.jsonl"


def results_key(job_id: str) -> str:
    return f"jobs/{job_id}/results.jsonl"


def chunk_prefix(job_id: str, index: int) -> str:
    return f"jobs/{job_id}/chunks/{index:05d}/"


def chunk_input_key(job_id: str, index: int) -> str:
    """The provider lines exactly as sent."""
    return chunk_prefix(job_id, index) + "input.jsonl"


def chunk_ids_key(job_id: str, index: int) -> str:
    """One custom_id per line, in input order: what collect must find in the output."""
    return chunk_prefix(job_id, index) + "custom_ids.txt"


def chunk_id_hashes_key(job_id: str, index: int) -> str:
    """The chunk's custom_ids as sorted 64-bit hashes (8 bytes each), for constant-size bookkeeping in collect."""
    return chunk_prefix(job_id, index) + "custom_ids.hashes"


def chunk_idmap_key(job_id: str, index: int) -> str:
    """custom_id -> caller id, only for ids that could not be sent as they were."""
    return chunk_prefix(job_id, index) + "idmap.json"


def chunk_results_key(job_id: str, index: int) -> str:
    """Normalised results of the chunk, keyed by the caller's ids."""
    return chunk_prefix(job_id, index) + "results.jsonl"


def upload_key(owner: str, upload_id: str) -> str:
    """A caller's uploaded input file (``POST /uploads``): under a digest of its owner, so another caller's upload
    id names a key that does not exist (404) without any lookup."""
    digest = hashlib.sha256(owner.encode()).hexdigest()[:32]
    return f"{UPLOADS_PREFIX}{digest}/{upload_id}.jsonl"
