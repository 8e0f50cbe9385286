"""custom_id mapping, status rules, result items and cost estimates."""

from batch_gateway.models.ids import CUSTOM_ID_RE, custom_id_for, is_mapped, new_job_id
from batch_gateway.models.jobs import Chunk, ItemStatus, Job, JobStatus, RequestCounts, Usage
from batch_gateway.models.pricing import estimate_cost
from batch_gateway.models.results import result_item


def test_safe_caller_ids_are_sent_unchanged():
    assert custom_id_for("request_A", 0) == "request_A"
    assert not is_mapped("request_A")


def test_unsafe_or_reserved_ids_get_a_unique_provider_safe_id():
    ids = [custom_id_for(cid, n) for n, cid in enumerate(["has space", "ü", "x" * 65, "bgw-3", "a/b"])]
    assert all(CUSTOM_ID_RE.fullmatch(i) and is_mapped(i) for i in ids)
    assert len(set(ids)) == len(ids)


def test_reserved_prefix_cannot_collide_with_a_mapped_id():
    # caller id "bgw-1" at position 0 must not become "bgw-1", which position 1 would get
    assert custom_id_for("bgw-1", 0) != custom_id_for("other id", 1)


def test_job_ids_are_unique_and_prefixed():
    ids = {new_job_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(i.startswith("job_") for i in ids)


def test_terminal_statuses():
    assert {s for s in JobStatus if s.terminal} == {
        JobStatus.FINISHED,
        JobStatus.CANCELED,
        JobStatus.EXPIRED,
        JobStatus.FAILED,
    }


def test_public_job_has_the_documented_shape():
    job = Job(id="job_1", owner="o", provider="anthropic", model="claude-x")
    chunk = Chunk(
        job_id="job_1", index=0, request_count=3, provider_batch_id="msgbatch_1", provider_status="in_progress"
    )
    view = job.public([chunk], zero_cost={"currency": "USD", "total": None, "reason": "no price"})
    assert set(view) >= {
        "id",
        "status",
        "provider",
        "model",
        "request_counts",
        "chunks",
        "usage",
        "metadata",
        "created_at",
        "updated_at",
        "ended_at",
        "error",
    }
    assert view["created_at"].endswith("Z")
    assert view["chunks"][0]["provider_batch_id"] == "msgbatch_1"
    assert "owner" not in view


def test_failed_item_carries_error_details_and_no_text():
    item = result_item("a", ItemStatus.ERRORED, code="invalid_request_error", message="bad")
    assert item["text"] is None
    assert item["finish_details"] == {"type": "error", "code": "invalid_request_error", "message": "bad"}


def test_succeeded_item_text_is_first_text_output():
    item = result_item(
        "a", ItemStatus.SUCCEEDED, outputs=[{"type": "text", "text": "Alligator."}], input_tokens=18, output_tokens=4
    )
    assert item["text"] == "Alligator."
    assert item["token_usage"] == {
        "input_tokens": 18,
        "output_tokens": 4,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "reasoning_tokens": 0,
    }


def test_counts_add_up():
    total = RequestCounts(total=2, succeeded=2).add(RequestCounts(total=1, errored=1))
    assert (total.total, total.succeeded, total.errored) == (3, 2, 1)


def test_batch_cost_is_half_the_list_price_and_unknown_models_have_none():
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert estimate_cost("anthropic", "claude-sonnet-4-20250514", usage) == 9.0
    assert estimate_cost("openai", "gpt-4o-mini", usage) == 0.375
    assert estimate_cost("openai", "my-finetune", usage) is None


def test_an_id_ending_in_a_newline_is_mapped_not_sent_as_is():
    assert custom_id_for("request_A\n", 7) == "bgw-7"
    assert not CUSTOM_ID_RE.fullmatch("request_A\n")
