"""A provider simulator per test module, reset before each test that asks for ``sim``."""

import pytest

from batch_gateway_dev.simulators import SimulatorServer


@pytest.fixture(scope="module")
def server():
    with SimulatorServer(processing_seconds=0.2) as sim:
        yield sim


@pytest.fixture
def sim(server):
    server.reset()
    return server
