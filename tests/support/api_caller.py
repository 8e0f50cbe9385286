"""A SigV4-signing caller of the Batch Gateway API (any signing HTTP client would do), and a sample create body:
what the e2e tests use to talk to the local stack."""

from __future__ import annotations

import json
import time
from typing import Any

import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from batch_gateway_dev.local.stack import CallerCredentials

TERMINAL = {"finished", "canceled", "expired", "failed"}


class Caller:
    """Signs every request with SigV4 for ``execute-api`` as the given access key."""

    def __init__(self, base_url: str, credentials: CallerCredentials) -> None:
        self.base_url = base_url
        self.principal = credentials.principal
        self.credentials = Credentials(credentials.access_key, credentials.secret_key)
        self.http = requests.Session()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
        sign: bool = True,
    ) -> requests.Response:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        request = AWSRequest(method=method, url=self.base_url + path, data=data, headers=all_headers)
        if sign:
            SigV4Auth(self.credentials, "execute-api", "us-east-1").add_auth(request)
        return self.http.request(method, self.base_url + path, data=data, headers=dict(request.headers), timeout=60)

    def create(self, body: dict[str, Any]) -> dict[str, Any]:
        response = self.request("POST", "/batches", body)
        assert response.status_code == 202, response.text
        return response.json()

    def wait(self, job_id: str, timeout: float = 60, until=TERMINAL) -> dict[str, Any]:
        """Poll the job until its status is in ``until``; fails after ``timeout`` s (one last look included)."""
        deadline = time.monotonic() + timeout
        pause = 0.1
        while True:
            response = self.request("GET", f"/batches/{job_id}")
            assert response.status_code == 200, f"GET /batches/{job_id}: {response.status_code} {response.text}"
            job = response.json()
            if job["status"] in until:
                return job
            assert time.monotonic() < deadline, f"job {job_id} still {job['status']} after {timeout} s"
            time.sleep(pause)  # each look is an API call through the local stack: less often as the wait goes on
            pause = min(pause * 1.5, 0.5)

    def all_results(self, job_id: str, limit: int = 1000) -> dict[str, Any]:
        results: dict[str, Any] = {}
        token = None
        while True:
            query = f"?limit={limit}" + (f"&next_token={token}" if token else "")
            page = self.request("GET", f"/batches/{job_id}/results{query}")
            assert page.status_code == 200, page.text
            body = page.json()
            results.update(body["results"])
            token = body["next_token"]
            if not token:
                return results


def seed_body(**changes: Any) -> dict[str, Any]:
    return {
        "provider": "anthropic",
        "model": "claude-sonnet-4-20250514",
        "requests": {f"request_{c}": f"Name an animal that starts with the letter '{c}'" for c in "ABCDE"},
        **changes,
    }
