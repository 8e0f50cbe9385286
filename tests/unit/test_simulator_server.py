"""The simulator's HTTP plumbing and control surface, independent of either provider's SDK."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time

import pytest

from batch_gateway_dev.simulators import SimulatorServer
from tests.support.concurrency import Threads
from tests.support.waiting import wait_for


def test_keep_alive_serves_several_requests_on_one_connection_with_content_length():
    with SimulatorServer() as sim:
        conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
        for _ in range(3):
            conn.request("GET", "/v1/messages/batches", headers={"x-api-key": "k"})
            response = conn.getresponse()
            assert response.status == 200 and response.getheader("Content-Length")
            assert json.loads(response.read())["data"] == []
            assert response.getheader("request-id", "").startswith("req_")
        conn.close()


def test_stop_returns_promptly_with_idle_connections_and_a_connection_held_by_a_timeout_fault():
    sim = SimulatorServer().start()
    idle = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
    idle.request("GET", "/_simulator/state")
    idle.getresponse().read()
    sim.add_fault("openai", "list_batches", "timeout_after_accept", seconds=30)
    held = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=10)

    def call() -> str:
        held.request("GET", "/v1/batches", headers={"Authorization": "Bearer k"})
        try:
            held.getresponse()
            return "answered"
        except (ConnectionError, http.client.RemoteDisconnected):
            return "dropped"

    waiter = Threads()
    waiter.start("held", call)
    # the call has reached the server and taken its timeout fault
    wait_for(lambda: not sim.stats()["faults_pending"], timeout=5, what="the held call to reach the simulator")
    sim.stop()
    assert waiter.join(timeout=5) == {"held": "dropped"}  # stop() did not wait for the held call


def test_configure_and_add_fault_reject_unknown_or_malformed_values():
    sim = SimulatorServer()  # validation needs no running server
    with pytest.raises(ValueError, match="unknown settings"):
        sim.configure(processing_second=1)
    with pytest.raises(ValueError, match="batch_outcome"):
        sim.configure(batch_outcome="explode")
    with pytest.raises(ValueError, match="item_outcomes"):
        sim.configure(item_outcomes={"a": "succeeded"})
    with pytest.raises(ValueError, match="kind"):
        sim.add_fault("anthropic", "create_batch", "http_418")
    with pytest.raises(ValueError, match="op"):
        sim.add_fault("openai", "create", "http_500")
    with pytest.raises(ValueError, match="times"):
        sim.add_fault("openai", "create_batch", "http_500", times=0)
    assert sim.configure(max_requests={"openai": 10}, error_every=2)["max_requests"] == {"openai": 10}
    sim.reset()
    assert sim.stats()["settings"]["max_requests"] is None


def test_url_is_only_known_once_started():
    sim = SimulatorServer()
    with pytest.raises(RuntimeError):
        _ = sim.url
    with sim:
        assert sim.url.startswith("http://127.0.0.1:") and sim.openai_base_url == sim.url + "/v1"


def test_module_entry_point_prints_its_urls_and_serves_until_terminated():
    proc = subprocess.Popen(
        [sys.executable, "-m", "batch_gateway_dev.simulators", "--port", "0", "--processing-seconds", "0.1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        announced = json.loads(proc.stdout.readline())
        assert announced["openai_base_url"] == announced["url"] + "/v1"
        host, port = announced["url"].removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=5)
        conn.request("GET", "/_simulator/state")
        state = json.loads(conn.getresponse().read())
        assert state["settings"]["processing_seconds"] == 0.1
        conn.close()
    finally:
        proc.terminate()
        assert proc.wait(timeout=5) == 0


def _admin_state(sim) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
    try:
        conn.request("GET", "/_simulator/state")
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def _call(sim, method: str, path: str, body: dict | None = None, headers: dict | None = None) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
    try:
        conn.request(
            method,
            path,
            body=json.dumps(body) if body is not None else None,
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def test_admin_state_reports_the_items_each_batch_has_finished_so_far_which_anthropic_itself_hides():
    # Anthropic shows every request as `processing` until the whole batch ends, so a test that must act "after some
    # items finished" cannot see that through the API; the admin state says it, for both providers.
    anthropic_key = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
    with SimulatorServer(processing_seconds=2.0) as sim:  # item i of 10 finishes at 0.2 s * (i + 1)
        requests = [
            {
                "custom_id": f"r{i}",
                "params": {
                    "model": "claude-sonnet-4-20250514",
                    "max_tokens": 8,
                    "messages": [{"role": "user", "content": "Hi"}],
                },
            }
            for i in range(10)
        ]
        batch = _call(sim, "POST", "/v1/messages/batches", {"requests": requests}, anthropic_key)
        assert set(_admin_state(sim)["items_finished"]) == {batch["id"]}

        finished = wait_for(
            lambda: _admin_state(sim)["items_finished"][batch["id"]], timeout=5, what="an item to finish"
        )
        assert 1 <= finished < 10
        view = _call(sim, "GET", f"/v1/messages/batches/{batch['id']}", headers=anthropic_key)
        assert view["processing_status"] == "in_progress" and view["request_counts"]["processing"] == 10

        _call(sim, "POST", f"/v1/messages/batches/{batch['id']}/cancel", headers=anthropic_key)
        deadline = time.monotonic() + 5
        while (ended := _call(sim, "GET", f"/v1/messages/batches/{batch['id']}", headers=anthropic_key))[
            "processing_status"
        ] != "ended":
            assert time.monotonic() < deadline, "cancel never ended"
            time.sleep(0.01)
        at_end = _admin_state(sim)["items_finished"][batch["id"]]
        assert at_end == ended["request_counts"]["succeeded"] and at_end >= finished
        assert sim.stats()["items_finished"] == {batch["id"]: at_end}  # the in-process twin says the same

        sim.configure(processing_seconds=0.2)
        line = {
            "custom_id": "a",
            "method": "POST",
            "url": "/v1/embeddings",
            "body": {"model": "text-embedding-3-small", "input": "Hi"},
        }
        conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=5)
        boundary = "simulatorboundary"
        form = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="in.jsonl"\r\n'
            f"Content-Type: application/jsonl\r\n\r\n{json.dumps(line)}\n\r\n--{boundary}--\r\n"
        )
        conn.request(
            "POST",
            "/v1/files",
            body=form.encode(),
            headers={"Authorization": "Bearer k", "Content-Type": f"multipart/form-data; boundary={boundary}"},
        )
        uploaded = json.loads(conn.getresponse().read())
        conn.close()
        openai_key = {"Authorization": "Bearer k"}
        created = _call(
            sim,
            "POST",
            "/v1/batches",
            {"input_file_id": uploaded["id"], "endpoint": "/v1/embeddings", "completion_window": "24h"},
            openai_key,
        )
        deadline = time.monotonic() + 5
        while (done := _call(sim, "GET", f"/v1/batches/{created['id']}", headers=openai_key))["status"] != "completed":
            assert time.monotonic() < deadline, f"batch still {done['status']}"
            time.sleep(0.01)
        assert _admin_state(sim)["items_finished"][created["id"]] == done["request_counts"]["completed"] == 1
        sim.reset()
        assert sim.stats()["items_finished"] == {}
