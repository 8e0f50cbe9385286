"""The sweeper cancels orphaned provider batches of every enabled provider, Bedrock included: Bedrock has no API key,
so it is enabled by its service role (``BEDROCK_ROLE_ARN``), not by a secret."""

from __future__ import annotations

from batch_gateway.service.workflow.sweep import sweep
from batch_gateway.settings import BedrockSettings, Settings
from tests.support.services import memory_services

ORPHAN = "arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/abcdefghijkl"


class FakeBedrock:
    def __init__(self) -> None:
        self.canceled: list[str] = []

    def owned_open_batches(self, go_on=lambda: True) -> list[tuple[str, str, int]]:
        return [(ORPHAN, "job_gone", 0)]  # its job no longer exists: nothing owns the Bedrock job

    def cancel(self, batch_id: str) -> None:
        self.canceled.append(batch_id)


def test_the_sweeper_stops_an_orphaned_bedrock_job():
    bedrock = FakeBedrock()
    services = memory_services(
        settings=Settings(table="jobs", bucket="payloads", bedrock=BedrockSettings(role_arn="arn:aws:iam::1:role/b")),
        provider_for=lambda name: {"bedrock": bedrock}[name],  # type: ignore[return-value]
    )
    report = sweep(services)
    assert report.orphans_canceled == [ORPHAN] and bedrock.canceled == [ORPHAN]


def test_without_a_bedrock_role_the_sweeper_does_not_ask_bedrock():
    services = memory_services(settings=Settings(table="jobs", bucket="payloads"))  # provider_for: not expected
    assert sweep(services).orphans_canceled == []


def test_a_cancel_that_fails_does_not_stop_the_orphan_pass_at_that_batch():
    # Review R4: an already-stopping job whose cancel raises aborted the pass there at every sweep, until it ended.
    from batch_gateway.contract.errors import ProviderError

    stopping, other = ORPHAN, ORPHAN.replace("abcdefghijkl", "mnopqrstuvwx")

    class StoppingBedrock(FakeBedrock):
        def owned_open_batches(self, go_on=lambda: True) -> list[tuple[str, str, int]]:
            return [(stopping, "job_gone", 0), (other, "job_gone", 1)]

        def cancel(self, batch_id: str) -> None:
            if batch_id == stopping:
                raise ProviderError("the job is already stopping")
            super().cancel(batch_id)

    bedrock = StoppingBedrock()
    services = memory_services(
        settings=Settings(table="jobs", bucket="payloads", bedrock=BedrockSettings(role_arn="arn:aws:iam::1:role/b")),
        provider_for=lambda name: {"bedrock": bedrock}[name],  # type: ignore[return-value]
    )
    report = sweep(services)
    assert report.orphans_canceled == [other] and bedrock.canceled == [other]


def test_the_orphan_listing_stops_before_the_invocations_time_runs_out():
    """A provider's listing of its open batches can run to many pages (a shared key's): the pass hands the sweep's
    budget to it, so one invocation lists only while its time lasts (the next sweep looks again)."""
    from batch_gateway.service.step_budget import StepBudget

    left = {"ms": 60_000}

    class ListingBedrock(FakeBedrock):
        pages = 0

        def owned_open_batches(self, go_on=lambda: True) -> list[tuple[str, str, int]]:
            while self.pages < 1_000 and go_on():  # a page of someone else's jobs a second
                self.pages += 1
                left["ms"] -= 1_000
            return []

    bedrock = ListingBedrock()
    services = memory_services(
        settings=Settings(table="jobs", bucket="payloads", bedrock=BedrockSettings(role_arn="arn:aws:iam::1:role/b")),
        provider_for=lambda name: {"bedrock": bedrock}[name],  # type: ignore[return-value]
    )
    report = sweep(services, budget=StepBudget(lambda: left["ms"], margin_ms=5_000))
    assert report.orphans_canceled == []
    assert 1 <= bedrock.pages <= 55 and left["ms"] > 0


def test_an_orphan_on_the_first_page_is_canceled_though_the_listing_then_runs_out_of_time():
    """Each orphan is canceled as its page is read: a listing stopped by the budget has not kept its finds back (the
    pass would cancel nothing, and the next sweep would start again from the first page)."""
    from batch_gateway.service.step_budget import StepBudget

    left = {"ms": 60_000}

    class LongListing(FakeBedrock):
        pages = 0

        def owned_open_batches(self, go_on=lambda: True):
            yield ORPHAN, "job_gone", 0  # on the first page
            while self.pages < 1_000 and go_on():  # then a page of someone else's jobs a second
                self.pages += 1
                left["ms"] -= 1_000

    bedrock = LongListing()
    services = memory_services(
        settings=Settings(table="jobs", bucket="payloads", bedrock=BedrockSettings(role_arn="arn:aws:iam::1:role/b")),
        provider_for=lambda name: {"bedrock": bedrock}[name],  # type: ignore[return-value]
    )
    report = sweep(services, budget=StepBudget(lambda: left["ms"], margin_ms=5_000))
    assert report.orphans_canceled == [ORPHAN] and bedrock.canceled == [ORPHAN]
    assert bedrock.pages <= 55
