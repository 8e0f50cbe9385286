"""Runtime settings, read from the environment once per cold start by the edge (``wiring``), never by the domain."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from batch_gateway import constants as c


@dataclass(kw_only=True)
class Settings:
    table: str
    bucket: str
    state_machine_arn: str | None = None
    secret_arns: dict[str, str] = field(default_factory=dict)  # provider -> Secrets Manager ARN
    poll_schedule: list[int] = field(default_factory=lambda: _schedule(c.DEFAULT_POLL_SCHEDULE))
    presign_expiry: int = c.DEFAULT_PRESIGN_EXPIRY
    max_chunk_requests: int | None = None
    max_chunk_bytes: int | None = None
    drop_prefix: str = c.DEFAULT_DROP_PREFIX
    drop_owner: str | None = None
    event_bus: str | None = None
    deployment_id: str | None = None  # None: this deployment cannot tell its provider batches from others'
    claim_lease_seconds: int = c.CLAIM_LEASE_SECONDS

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        secrets = {
            name: env[var]
            for name, var in (("anthropic", c.ENV_ANTHROPIC_SECRET_ARN), ("openai", c.ENV_OPENAI_SECRET_ARN))
            if env.get(var)
        }
        return cls(
            table=env.get(c.ENV_JOBS_TABLE, ""),
            bucket=env.get(c.ENV_PAYLOAD_BUCKET, ""),
            state_machine_arn=env.get(c.ENV_STATE_MACHINE_ARN) or None,
            secret_arns=secrets,
            poll_schedule=_schedule(env.get(c.ENV_POLL_SCHEDULE) or c.DEFAULT_POLL_SCHEDULE),
            presign_expiry=int(env.get(c.ENV_PRESIGN_EXPIRY) or c.DEFAULT_PRESIGN_EXPIRY),
            max_chunk_requests=int(env[c.ENV_MAX_CHUNK_REQUESTS]) if env.get(c.ENV_MAX_CHUNK_REQUESTS) else None,
            max_chunk_bytes=int(env[c.ENV_MAX_CHUNK_BYTES]) if env.get(c.ENV_MAX_CHUNK_BYTES) else None,
            drop_prefix=env.get(c.ENV_DROP_PREFIX) or c.DEFAULT_DROP_PREFIX,
            drop_owner=env.get(c.ENV_DROP_OWNER) or None,
            event_bus=env.get(c.ENV_EVENT_BUS_NAME) or None,
            deployment_id=env.get(c.ENV_DEPLOYMENT_ID) or None,
        )

    def wait_after(self, polls: int) -> int:
        """Seconds to wait before poll number ``polls + 1``: short at first, longer later."""
        return self.poll_schedule[min(polls, len(self.poll_schedule) - 1)]


def _schedule(text: str) -> list[int]:
    values = [int(float(v)) for v in text.split(",") if v.strip()]
    return [max(0, v) for v in values] or [30]
