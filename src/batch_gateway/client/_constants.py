"""The SDK's defaults, named once (the sync client, the async client and the transport all read them here)."""

ENDPOINT_ENV = "BATCH_GATEWAY_ENDPOINT"
"""Where ``GatewayLMInvoker`` and the CLI find the API's URL when none is given."""

SIGNING_SERVICE = "execute-api"
DEFAULT_REGION = "us-east-1"

DEFAULT_TIMEOUT = 30.0
"""Seconds to connect, and seconds to wait for each read, per attempt."""
DEFAULT_MAX_ATTEMPTS = 5
"""Attempts in all for a retryable answer (429, 5xx, a connection error)."""
DEFAULT_BACKOFF_BASE = 0.5
DEFAULT_BACKOFF_CAP = 20.0
"""Full-jitter backoff: attempt n waits up to ``min(cap, base * 2 ** (n - 1))`` seconds."""
DEFAULT_MAX_RETRY_AFTER = 60.0
"""A server's ``Retry-After`` is honoured up to this many seconds."""

DEFAULT_STATUS_CHECK_INTERVAL = 5.0
"""Seconds between status checks while ``wait``/``invoke`` wait for a job to end."""

POOL_SIZE = 10
"""Connections kept per host (a thread pool of this size shares one client without waiting for a connection)."""
