"""docs/events.md's webhook receiver (the block after ``<!-- webhook-receiver -->``) runs as printed: it verifies a
signed delivery with the SDK's verify_webhook, answers 204 and prints the event; a forged one gets 400 and nothing."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import requests

from batch_gateway.models.webhooks import new_secret
from batch_gateway.service.events.webhook_delivery import signature_headers

EVENTS_DOC = Path(__file__).resolve().parents[2] / "docs" / "events.md"


def _receiver_code() -> str:
    text = EVENTS_DOC.read_text()
    block = text.split("<!-- webhook-receiver -->", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    return block


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_readme_receiver_verifies_a_delivery_and_refuses_a_forged_one(tmp_path):
    code = _receiver_code()
    assert len([line for line in code.splitlines() if line.strip()]) <= 14
    script = tmp_path / "receiver.py"
    script.write_text(code)
    secret, port = new_secret(), _free_port()
    env = {"WEBHOOK_SECRET": secret, "PORT": str(port), "PATH": "/usr/bin:/bin"}
    process = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        body = json.dumps({"type": "batch.finished", "timestamp": "t", "data": {"job_id": "job_1"}})
        headers = signature_headers("msg_evt_1_job", body, [secret], datetime.now(UTC))
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 20
        while True:
            try:
                answer = requests.post(url, data=body.encode(), headers=headers, timeout=5)
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline, "the receiver did not start"
                time.sleep(0.1)
        assert answer.status_code == 204
        forged = requests.post(url, data=body.replace("job_1", "job_2").encode(), headers=headers, timeout=5)
        assert forged.status_code == 400
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=10)
    assert out.decode().splitlines() == ["batch.finished job_1 msg_evt_1_job"]
