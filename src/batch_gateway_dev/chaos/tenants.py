"""A tenant of the local stack as a chaos run drives it: SigV4-signed calls of the HTTP API with its own IAM keys
(botocore signs, requests sends), and a create retried the way the SDK retries one (same ``Idempotency-Key``)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any
from urllib.parse import quote

import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from batch_gateway_dev.local.stack import REGION, CallerCredentials

CREATE_ATTEMPTS = 4
RETRIED_STATUSES = frozenset({409, 429, 500, 502, 503, 504})  # 409: the same key is still being handled


class Tenant:
    def __init__(self, name: str, api_url: str, credentials: CallerCredentials) -> None:
        self.name = name
        self.principal = credentials.principal
        self._base = api_url
        self._credentials = Credentials(credentials.access_key, credentials.secret_key)
        self._http = requests.Session()

    def call(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> requests.Response:
        data = json.dumps(body).encode() if body is not None else None
        request = AWSRequest(
            method=method,
            url=self._base + path,
            data=data,
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        SigV4Auth(self._credentials, "execute-api", REGION).add_auth(request)
        return self._http.request(method, self._base + path, data=data, headers=dict(request.headers), timeout=60)

    def create(self, body: dict[str, Any]) -> requests.Response:
        """``POST /batches``, again with the same idempotency key after a 409, 429, 5xx or a lost connection."""
        key = str(uuid.uuid4())
        answer: requests.Response | None = None
        for attempt in range(CREATE_ATTEMPTS):
            try:
                answer = self.call("POST", "/batches", body, {"Idempotency-Key": key})
            except requests.ConnectionError:
                answer = None
            if answer is not None and answer.status_code not in RETRIED_STATUSES:
                return answer
            time.sleep(0.5 * 2**attempt)  # backoff between attempts, as the SDK's
        if answer is None:
            raise ConnectionError(f"POST /batches failed {CREATE_ATTEMPTS} times without an answer")
        return answer

    def jobs(self) -> dict[str, str]:
        """Every job the tenant lists: id -> status."""
        found: dict[str, str] = {}
        token: str | None = None
        while True:
            answer = self.call("GET", "/batches?limit=100" + (f"&next_token={quote(token)}" if token else ""))
            answer.raise_for_status()
            page = answer.json()
            found.update({job["id"]: job["status"] for job in page["batches"]})
            token = page.get("next_token")
            if not token:
                return found

    def results(self, job_id: str) -> list[dict[str, Any]] | None:
        """Every line of the job's results file (through its presigned URL, so a repeated line shows), or None when
        the job has none."""
        answer = self.call("GET", f"/batches/{job_id}/results?format=jsonl")
        if answer.status_code != 200:
            return None
        content = requests.get(answer.json()["url"], timeout=60).content
        return [json.loads(line) for line in content.splitlines() if line.strip()]
