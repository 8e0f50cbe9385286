"""The Gemini adapter's promises, checked adversarially against the Gemini simulator through google-genai: the create
is sent once while the other calls keep the SDK's retries, a lost create answer is reconciled by the exact display
name over every page of the list, the key and the prompts stay out of our errors and logs, and the one private SDK
call the adapter makes (``client._api_client.request``) still has the shape it relies on."""

from __future__ import annotations

import inspect
import json
import logging
import traceback
from datetime import UTC, datetime

import pytest

from batch_gateway.contract import errors
from batch_gateway.providers import gemini, make_provider
from batch_gateway.providers.base import ChunkRef
from batch_gateway.providers.gemini import GeminiBatchProvider, display_name

MODEL = "gemini-2.5-flash"
KEY = "AIzaSy-test-secret-key-0123456789"  # Google's key shape; must never surface
PROMPT = "my private prompt about the merger"


@pytest.fixture
def provider(sim) -> GeminiBatchProvider:
    adapter = make_provider("google", api_key=KEY, base_url=sim.gemini_base_url, deployment_id="dep-1")
    assert isinstance(adapter, GeminiBatchProvider)
    return adapter


def ref(index: int = 0, job: str = "job_promise1", model: str = MODEL) -> ChunkRef:
    return ChunkRef(job_id=job, index=index, request_count=1, model=model, claimed_at=datetime.now(UTC))


def lines(provider: GeminiBatchProvider, text: str = "Hi", rid: str = "r1") -> list[bytes]:
    req = {"id": rid, "messages": [{"role": "user", "content": text}], "params": {}}
    return [json.dumps(provider.to_provider(rid, req, model=MODEL, endpoint=None, provider_options={})).encode()]


def created(sim) -> int:
    return int(sim.stats()["google"]["batches_created"])


# ---- sent once, retried elsewhere


@pytest.mark.parametrize("kind", ["http_500", "http_503"])
def test_the_create_is_sent_once_even_though_google_genai_would_retry_it(provider, sim, kind):
    """The client retries (HttpRetryOptions(attempts=3) covers 500/503); the create's own options say 1 attempt.
    Were the create retried, the second attempt would find no fault and make a batch."""
    sim.add_fault("google", "create_batch", kind, times=1)
    with pytest.raises(errors.ProviderUnavailableError):
        provider.submit(iter(lines(provider)), ref())
    assert created(sim) == 0
    assert sim.stats()["google"]["files"] == 0  # the refused create's upload is deleted again


def test_an_upload_and_a_status_that_fail_once_are_retried_by_the_sdk(provider, sim):
    sim.add_fault("google", "upload_file", "http_503", times=1)
    batch_id = provider.submit(iter(lines(provider)), ref())
    assert created(sim) == 1
    sim.add_fault("google", "get_batch", "http_500", times=1)
    assert provider.status(batch_id).id == batch_id


# ---- a lost create answer


def test_reconcile_reads_every_page_and_adopts_only_the_exact_display_name(provider, sim, monkeypatch):
    monkeypatch.setattr(gemini, "LIST_PAGE_SIZE", 1)  # each batch on a page of its own
    ids = {index: provider.submit(iter(lines(provider)), ref(index)) for index in (0, 1, 10)}
    for index, batch_id in ids.items():
        assert provider.find_submitted(ref(index)) == batch_id
    assert provider.find_submitted(ref(2)) is None  # "...-1" and "...-10" are not "...-2" nor each other
    other = make_provider("google", api_key=KEY, base_url=sim.gemini_base_url, deployment_id="dep-2")
    assert other.find_submitted(ref(0)) is None  # another deployment on the same key: never ours


# ---- the key and the prompts stay ours


def _chain(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


def test_neither_the_key_nor_the_prompt_appears_in_errors_or_logs(provider, sim, caplog):
    caplog.set_level(logging.DEBUG)
    provider.inline_max_requests = 0  # as files: the cleanup below has files to fail to delete
    failures: list[BaseException] = []
    sim.add_fault("google", "create_batch", "http_429")
    with pytest.raises(errors.ProviderRateLimitedError) as limited:
        provider.submit(iter(lines(provider, PROMPT)), ref(0))
    failures.append(limited.value)
    with pytest.raises(errors.ProviderNotFoundError) as unknown:  # Google answers 404 for an unknown model
        provider.submit(iter(lines(provider, PROMPT)), ref(1, model="gemma-unknown"))
    failures.append(unknown.value)
    sim.add_fault("google", "create_batch", "drop_after_accept")
    with pytest.raises(errors.ProviderAmbiguousError) as lost:
        provider.submit(iter(lines(provider, PROMPT)), ref(2))
    failures.append(lost.value)
    sim.add_fault("google", "delete", "http_500", times=6)  # cleanup logs its failure with the traceback
    batch = provider.status(provider.find_submitted(ref(2)) or "")
    provider.cleanup(batch)
    for text in [*map(_chain, failures), caplog.text]:
        assert KEY not in text
        assert PROMPT not in text
    assert "could not delete a file at Google" in caplog.text  # the log was seen


# ---- the private SDK call, pinned


def test_the_private_sdk_call_the_adapter_relies_on_keeps_its_shape(provider, sim):
    """``client._api_client.request(method, path, request_dict, http_options)`` answering an object whose ``body``
    is the JSON text: if google-genai renames or reshapes it, this fails here, by name, before a poll does."""
    from google.genai import _api_client

    client = provider._client
    assert isinstance(client._api_client, _api_client.BaseApiClient), "google-genai moved Client._api_client"
    params = list(inspect.signature(client._api_client.request).parameters)
    assert params[:4] == ["http_method", "path", "request_dict", "http_options"], f"request() is now {params}"
    batch_id = provider.submit(iter(lines(provider)), ref())
    answer = client._api_client.request("get", batch_id, {}, None)
    assert isinstance(answer.body, str), f"request() now answers {type(answer.body)} bodies"
    raw = json.loads(answer.body)
    assert raw["name"] == batch_id and raw["metadata"]["displayName"] == display_name(ref(), "dep-1")


# ---- Google's "deadline exceeded" on a create


def _google_error(code: int, status: str):
    from google.genai import errors as google

    return google.APIError.raise_error(code, {"error": {"code": code, "message": "Deadline", "status": status}}, None)


@pytest.mark.parametrize(("code", "status"), [(504, "DEADLINE_EXCEEDED"), (504, ""), (500, "DEADLINE_EXCEEDED")])
def test_a_create_that_exceeded_its_deadline_at_google_may_have_been_accepted(code, status):
    """google.rpc DEADLINE_EXCEEDED: "for operations that change the state of the system, this error may be returned
    even if the operation has completed successfully" - and the create asks Google for a 120 s server deadline
    (X-Server-Timeout). After it, a resend without reconciling could make a second batch."""
    from batch_gateway.providers.sdk_errors import mapped_errors

    with pytest.raises(errors.ProviderAmbiguousError), mapped_errors("google.genai", "Google Gemini", creating=True):
        _google_error(code, status)
    with pytest.raises(errors.ProviderUnavailableError), mapped_errors("google.genai", "Google Gemini"):
        _google_error(code, status)  # anywhere else it is only unavailable
