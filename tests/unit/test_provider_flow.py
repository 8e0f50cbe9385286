"""The flow every provider shares lives in ``BatchProvider``: an adapter that fills in only the provider's own calls
gets the SDK error mapping, the lost-create rule, the cancel-race fallback, duplicate handling after a lost answer
and a lazily built client without writing any of it. Also: the registration table is the one list of providers.

The adapter here is a fake over the Anthropic SDK's exception classes (the mapping is by SDK), with no network.
"""

from __future__ import annotations

import configparser
import json
import subprocess
import sys
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from batch_gateway import providers
from batch_gateway.contract import errors
from batch_gateway.models.requests import PROVIDERS
from batch_gateway.provider_specs import SPECS
from batch_gateway.providers.base import (
    BatchProvider,
    ChunkRef,
    Found,
    ProviderBatch,
    ProviderResult,
)
from batch_gateway_dev.simulators.state import SimulatorState

REPO = Path(__file__).resolve().parents[2]
URL = "https://provider.invalid/v1/batches"
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _request() -> httpx2.Request:
    return httpx2.Request("POST", URL)


def lost_answer() -> Exception:
    return anthropic.APITimeoutError(request=_request())


def refused_connection() -> Exception:
    try:
        raise httpx2.ConnectError("connection refused")
    except httpx2.ConnectError as cause:
        try:
            raise anthropic.APIConnectionError(request=_request()) from cause
        except anthropic.APIConnectionError as exc:
            return exc


def refused(status: int = 400, message: str = "batch already ended") -> Exception:
    response = httpx2.Response(status, request=_request())
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    kind = anthropic.InternalServerError if status >= 500 else anthropic.BadRequestError
    return kind(message, response=response, body=body)


def batch(batch_id: str, *, ended: bool = False, created: int = 0) -> ProviderBatch:
    return ProviderBatch(
        id=batch_id, status="ended" if ended else "in_progress", ended=ended, created_at=T0 + timedelta(seconds=created)
    )


class FakeAdapter(BatchProvider):
    """Only provider-specific calls; each hook does what the test scripted."""

    name = "fake"
    sdk = "anthropic"
    label = "Fake"
    max_requests = 10
    max_bytes = 1000

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(api_key="k", **kwargs)
        self.clients_built = 0
        self.create_raises: Exception | None = None
        self.cancel_raises: Exception | None = None
        self.retrieve_answers: dict[str, ProviderBatch] = {}
        self.found = Found()
        self.staged: list[str] = []
        self.discarded: list[str] = []
        self.canceled: list[str] = []

    def _new_client(self) -> Any:
        self.clients_built += 1
        return object()

    def to_provider(
        self,
        custom_id: str,
        request: dict[str, Any],
        *,
        model: str,
        endpoint: str | None,
        provider_options: dict[str, Any],
    ) -> dict[str, Any]:
        return {"custom_id": custom_id}

    def _stage(self, lines: Iterable[bytes], ref: ChunkRef) -> Any:
        self.staged.append(f"file-{ref.index}")
        return self.staged[-1]

    def _discard(self, staged: Any) -> None:
        self.discarded.append(staged)

    def _create(self, staged: Any, ref: ChunkRef) -> str:
        assert self._client is not None
        if self.create_raises:
            raise self.create_raises
        return f"batch-{ref.index}"

    def _retrieve(self, batch_id: str) -> ProviderBatch:
        return self.retrieve_answers[batch_id]

    def _cancel(self, batch_id: str) -> ProviderBatch:
        if self.cancel_raises:
            raise self.cancel_raises
        self.canceled.append(batch_id)
        return batch(batch_id)

    def _results(self, provider_batch: ProviderBatch) -> Iterator[ProviderResult]:
        yield from ()
        raise refused(500, "overloaded")

    def _reconcile(self, ref: ChunkRef) -> Found:
        return self.found

    def _cleanup(self, provider_batch: ProviderBatch) -> None:
        raise RuntimeError("the provider's file API is down")


REF = ChunkRef(job_id="job_1", index=0, request_count=1, model="m", claimed_at=T0)


# ---- creating a batch


def test_a_lost_create_answer_is_ambiguous_and_keeps_what_the_batch_may_be_using():
    adapter = FakeAdapter()
    adapter.create_raises = lost_answer()
    with pytest.raises(errors.ProviderAmbiguousError):
        adapter.submit(iter([b"{}"]), REF)
    assert adapter.discarded == []


def test_a_refused_connection_on_create_sent_nothing_and_is_not_ambiguous():
    adapter = FakeAdapter()
    adapter.create_raises = refused_connection()
    with pytest.raises(errors.ProviderUnavailableError) as raised:
        adapter.submit(iter([b"{}"]), REF)
    assert not isinstance(raised.value, errors.ProviderAmbiguousError)


def test_a_refused_create_maps_to_our_error_and_discards_what_was_staged_for_it():
    adapter = FakeAdapter()
    adapter.create_raises = refused(400, "too many requests in one batch")
    with pytest.raises(errors.ProviderRequestError, match=r"refused the request \(400 invalid_request_error\)"):
        adapter.submit(iter([b"{}"]), REF)
    assert adapter.discarded == ["file-0"]


def test_an_accepted_create_answers_the_batch_id():
    assert FakeAdapter().submit(iter([b"{}"]), REF) == "batch-0"


# ---- the other calls


def test_errors_of_every_call_are_mapped_to_our_tree():
    adapter = FakeAdapter()
    with pytest.raises(errors.ProviderUnavailableError, match="Fake is unavailable"):
        list(adapter.results(batch("b1", ended=True)))


def test_a_cancel_that_lost_the_race_to_the_end_answers_the_ended_batch():
    adapter = FakeAdapter()
    adapter.cancel_raises = refused(400, "batch already ended")
    adapter.retrieve_answers["b1"] = batch("b1", ended=True)
    assert adapter.cancel("b1").ended


def test_a_refused_cancel_of_a_batch_still_running_is_an_error():
    adapter = FakeAdapter()
    adapter.cancel_raises = refused(400, "no")
    adapter.retrieve_answers["b1"] = batch("b1")
    with pytest.raises(errors.ProviderRequestError):
        adapter.cancel("b1")


def test_after_a_lost_answer_the_first_batch_proven_ours_is_adopted_and_running_duplicates_canceled():
    adapter = FakeAdapter()
    adapter.found = Found(
        ours=(batch("late", created=9), batch("first", created=1), batch("ended", ended=True, created=5))
    )
    assert adapter.find_submitted(REF) == "first"
    assert adapter.canceled == ["late"]  # an ended duplicate costs nothing more


def test_after_a_lost_answer_the_chunks_batch_refused_for_quota_is_never_adopted_and_the_one_sent_again_kept():
    """The chunk was sent, refused for quota (failed, no results) and sent again; that create's answer was lost. The
    lookup finds both (same metadata or name): the one sent again is adopted, whatever each adapter's window."""
    adapter = FakeAdapter()
    adapter.found = Found(
        ours=(batch("refused", ended=True, created=1), batch("again", created=9)), pending=("refused",)
    )
    ref = ChunkRef(job_id="job_1", index=0, request_count=2, model="m", refused=("refused",))
    found = adapter.reconcile(ref)
    assert (found.adopted, found.pending, adapter.canceled) == ("again", (), [])


def test_after_a_lost_answer_batches_that_may_be_ours_stay_pending_and_are_never_canceled():
    adapter = FakeAdapter()
    adapter.found = Found(pending=("maybe",))
    found = adapter.reconcile(REF)
    assert found.adopted is None and found.pending == ("maybe",)
    assert adapter.canceled == []


def test_cleanup_never_fails_the_caller():
    FakeAdapter().cleanup(batch("b1", ended=True))


def test_an_adapter_without_metadata_owns_no_open_batches():
    assert list(FakeAdapter().owned_open_batches()) == []


def test_the_client_is_built_on_first_use_once():
    adapter = FakeAdapter()
    assert adapter.clients_built == 0
    adapter.submit(iter([b"{}"]), REF)
    adapter.submit(iter([b"{}"]), REF)
    assert adapter.clients_built == 1


def test_an_adapter_that_overrides_the_shared_flow_is_refused_when_defined():
    with pytest.raises(TypeError, match="cancel"):

        class Rogue(FakeAdapter):
            def cancel(self, batch_id: str) -> ProviderBatch:
                return batch(batch_id)


# ---- registration


def test_every_provider_spec_builds_its_adapter_and_the_adapter_takes_its_name_and_limits_from_the_spec():
    assert tuple(spec.name for spec in SPECS) == PROVIDERS
    for spec in SPECS:
        adapter = providers.make_provider(spec.name, api_key="k", deployment_id="d1")
        assert isinstance(adapter, BatchProvider) and adapter.spec is spec
        assert (adapter.name, adapter.label, adapter.sdk) == (spec.name, spec.label, spec.sdk)
        assert (type(adapter).max_requests, type(adapter).max_bytes) == (spec.max_requests, spec.max_bytes)


def test_every_provider_spec_names_its_simulator_and_the_simulator_state_holds_one_per_spec():
    state = SimulatorState()
    assert list(state.simulators) == list(PROVIDERS)
    for spec in SPECS:
        module, _, cls = spec.simulator.partition(":")
        assert module.startswith("batch_gateway_dev.simulators.")
        simulator = state.simulators[spec.name]
        assert type(simulator).__name__ == cls and simulator.provider == spec.name


def test_the_provider_specs_load_nothing_heavy_and_each_sdk_is_forbidden_outside_its_adapter():
    """The specs are on the API functions' cold path and in the CDK app: standard library and constants only. Each
    SDK is one of the provider-sdks contract's forbidden modules (botocore: the service-no-aws-sdk contract's)."""
    code = "import sys, json, batch_gateway.provider_specs; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in json.loads(done.stdout)}
    assert not loaded & {"anthropic", "openai", "google", "boto3", "botocore", "pydantic", "aws_lambda_powertools"}
    assert {name for name in json.loads(done.stdout) if name.startswith("batch_gateway")} == {
        "batch_gateway",
        "batch_gateway.constants",
        "batch_gateway.provider_specs",
    }
    contracts = configparser.ConfigParser()
    contracts.read(REPO / ".importlinter")
    forbidden = contracts["importlinter:contract:provider-sdks"]["forbidden_modules"].split()
    service = contracts["importlinter:contract:service-no-aws-sdk"]["forbidden_modules"].split()
    for spec in SPECS:
        assert spec.sdk.split(".")[0] in (service if spec.sdk == "botocore" else forbidden), spec.name


def test_an_unknown_provider_is_refused():
    with pytest.raises(errors.InvalidRequestError, match="unknown provider 'gemini'"):
        providers.make_provider("gemini", api_key="k")
