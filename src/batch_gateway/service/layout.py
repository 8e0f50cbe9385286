"""Where each payload lives in the bucket, the one place that names these keys: everything of a job under
`jobs/<job id>/`, a chunk's files under its `chunks/<index>/`; uploaded input files under `uploads/`; the OpenAI
door's files under `doors/openai/<owner digest>/`, the Anthropic door's results under `doors/anthropic/`; the drop
folder's receipts and results under `outbox/`."""

import hashlib

from batch_gateway.constants import OPENAI_DOOR_PREFIX, OUTBOX_PREFIX, UPLOADS_PREFIX


def owner_digest(owner: str) -> str:
    """An owner's key segment: another caller's object id names a key that does not exist (404 without a lookup)."""
    return hashlib.sha256(owner.encode()).hexdigest()[:32]


def requests_key(job_id: str) -> str:
    return f"jobs/{job_id}/requests.jsonl"


def results_key(job_id: str) -> str:
    return f"jobs/{job_id}/results.jsonl"


def dataset_input_key(job_id: str, fmt: str) -> str:
    """A dataset job's table as it came (decision 0136): ``input.csv``, or ``input.jsonl`` for records."""
    return f"jobs/{job_id}/dataset/input.{fmt}"


def dataset_results_key(job_id: str) -> str:
    """A dataset job's table with the result columns appended, written by Finalize (decision 0136)."""
    return f"jobs/{job_id}/dataset/results.csv"


def cache_primer_key(job_id: str, group: int) -> str:
    """The provider line Plan chose as cache group ``group``'s primer (decision 0128), sent by Submit."""
    return f"jobs/{job_id}/cache/primer-{group}.json"


def cache_order_key(job_id: str) -> str:
    """The pass of each request of a job with cache groups, so that a group's requests are chunked together
    (decision 0128's addendum), written by Plan before its first chunk."""
    return f"jobs/{job_id}/cache/order.bin"


def reused_key(job_id: str) -> str:
    """The result items Plan answered from the owner's stored results (decision 0127), under the chunks' prefix:
    the join adds them after the chunks' results."""
    return f"jobs/{job_id}/chunks/reused.jsonl"


def reused_positions_key(job_id: str) -> str:
    """Which requests ``reused.jsonl`` answers, a bit each by position in requests.jsonl (decision 0127's
    addendum): a Plan that goes on from a recorded chunk skips them without holding their ids."""
    return f"jobs/{job_id}/chunks/reused.positions"


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


def chunk_duplicates_key(job_id: str, index: int) -> str:
    """Caller id -> the caller id of the earlier identical request whose result it gets (decision 0126), for the
    duplicates Plan met while it filled this chunk; only for a chunk that met any."""
    return chunk_prefix(job_id, index) + "duplicates.json"


def chunk_idmap_key(job_id: str, index: int) -> str:
    """custom_id -> caller id, only for ids that could not be sent as they were."""
    return chunk_prefix(job_id, index) + "idmap.json"


def chunk_results_key(job_id: str, index: int) -> str:
    """Normalised results of the chunk, keyed by the caller's ids."""
    return chunk_prefix(job_id, index) + "results.jsonl"


def attempts_key(job_id: str, index: int) -> str:
    """A retry chunk's items' earlier attempts: one ``{"id", "attempts"}`` line each."""
    return chunk_prefix(job_id, index) + "attempts.jsonl"


def retryable_key(job_id: str, index: int) -> str:
    """The chunk's items that may run again, as ``{"id", "status", "attempts"}`` lines (written by collect)."""
    return chunk_prefix(job_id, index) + "retryable.jsonl"


def upload_key(owner: str, upload_id: str) -> str:
    """A caller's uploaded input file (``POST /uploads``): under a digest of its owner, so another caller's upload
    id names a key that does not exist (404) without any lookup."""
    return f"{UPLOADS_PREFIX}{owner_digest(owner)}/{upload_id}.jsonl"


def upload_declaration_key(owner: str, upload_id: str) -> str:
    """What ``POST /uploads`` was told of the file (its size, decision 0113), beside it; the upload's URLs name the
    file's key only, so its holder cannot change this."""
    return f"{UPLOADS_PREFIX}{owner_digest(owner)}/{upload_id}.declared.json"


def owner_prefix(owner: str) -> str:
    """The OpenAI door's objects of one owner."""
    return OPENAI_DOOR_PREFIX + owner_digest(owner) + "/"


def file_meta_key(owner: str, file_id: str) -> str:
    return f"{owner_prefix(owner)}files/{file_id}.json"


def file_content_key(owner: str, file_id: str) -> str:
    return f"{owner_prefix(owner)}files/{file_id}.jsonl"


def anthropic_results_key(job_id: str) -> str:
    """The batch's results in Anthropic's format, written by the workflow when the job ends (``outputs.doors``)."""
    return f"doors/anthropic/{job_id}/results.jsonl"


def outbox_key(drop_name: str, suffix: str) -> str:
    """A dropped file's receipt, results or errors under ``outbox/``."""
    return f"{OUTBOX_PREFIX}{drop_name}.{suffix}"
