"""Jobs written straight into the stores and planned, for tests of Plan and of what comes after it (Submit, Poll,
the poll schedule): a job's requests as the create path stores them, without the API."""

from __future__ import annotations

import json

from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import Job, RequestCounts
from batch_gateway.service.layout import requests_key
from batch_gateway.service.workflow.plan import plan_job
from batch_gateway.service.workflow.state import WorkflowState

MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-20250514", "google": "gemini-2.5-flash"}


def neutral_line(caller_id: str, text: str | None = None) -> bytes:
    """A normalised request; without ``text`` it asks its own id, so requests with different ids are different
    requests (identical ones are sent once: in-job dedup, decision 0126)."""
    return json.dumps(
        {
            "id": caller_id,
            "messages": [{"role": "user", "content": caller_id if text is None else text}],
            "system": None,
            "params": {"max_tokens": 16},
        },
        separators=(",", ":"),
    ).encode()


def new_job(services, lines: list[bytes], provider: str = "openai") -> str:
    job_id = new_job_id()
    services.payloads.put_bytes(requests_key(job_id), b"".join(line + b"\n" for line in lines))
    services.jobs.put_new_job(
        Job(
            id=job_id,
            owner="alice",
            provider=provider,
            model=MODELS[provider],
            request_counts=RequestCounts(total=len(lines), processing=len(lines)),
        )
    )
    return job_id


def plan(services, ids: list[str], provider: str = "openai", texts: list[str] | None = None) -> str:
    job_id = new_job(services, [neutral_line(i, t) for i, t in zip(ids, texts or list(ids), strict=True)], provider)
    plan_job(services, WorkflowState(job_id=job_id))
    return job_id
