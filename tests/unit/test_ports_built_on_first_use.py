"""``wiring.services()`` makes no AWS client: each port makes its own when it is first used (decision 0107), so a
function pays at its first request only for the clients it calls. The authorizer (every API request's cold path)
never makes an S3 client; Status never makes a quota store's."""

from __future__ import annotations

import pytest

from batch_gateway import constants, wiring
from batch_gateway.store import aws


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The AWS clients made, by service name (none is: a stand-in object is handed out)."""
    made: list[str] = []

    class Session:
        def client(self, service: str, **options: object) -> object:
            made.append(service)
            return object()

    monkeypatch.setattr(aws, "_session", Session)
    monkeypatch.setenv(constants.ENV_JOBS_TABLE, "jobs")
    monkeypatch.setenv(constants.ENV_PAYLOAD_BUCKET, "payloads")
    wiring.reset()
    yield made
    wiring.reset()


def test_building_the_services_makes_no_client(made):
    wiring.services()
    assert made == []


def test_each_port_makes_its_client_when_first_used_and_only_then(made):
    services = wiring.services()
    services.jobs.get_job  # noqa: B018 (the first use: an attribute of the store)
    assert made == ["dynamodb"]
    services.payloads.get_bytes  # noqa: B018
    services.jobs.get_chunks  # noqa: B018 (built once)
    assert made == ["dynamodb", "s3"]
