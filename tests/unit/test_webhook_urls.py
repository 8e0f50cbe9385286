"""Webhook URL safety (decision 0071): the URL at create, every resolved address at delivery."""

from __future__ import annotations

import logging

import pytest

from batch_gateway.constants import METRIC_WEBHOOK_FAILURES
from batch_gateway.service.events.webhook_urls import UnsafeWebhookUrlError, check_url, resolve_checked
from batch_gateway_dev.fakes.webhooks import FixedResolver
from tests.support.webhook_delivering import SCHEDULE, Delivering

REFUSED = [
    ("http://example.com/hook", "must use https"),
    ("ftp://example.com/hook", "must use https"),
    ("file:///etc/passwd", "must use https"),
    ("gopher://example.com/", "must use https"),
    ("https://user:pass@example.com/hook", "user name or password"),
    ("https://user@example.com/hook", "user name or password"),
    ("https://10.0.0.5/hook", "private"),
    ("https://172.16.3.4/hook", "private"),
    ("https://192.168.1.1/hook", "private"),
    ("https://100.64.0.1/hook", "carrier-grade NAT"),
    ("https://169.254.169.254/latest/meta-data/", "metadata"),
    ("https://[fd00:ec2::254]/", "metadata"),
    ("https://169.254.10.1/hook", "link-local"),
    ("https://[fe80::1]/hook", "link-local"),
    ("https://[fc00::1]/hook", "private"),
    ("https://127.0.0.1/hook", "loopback"),
    ("https://[::1]/hook", "loopback"),
    ("https://localhost/hook", "loopback"),
    ("https://0.0.0.0/hook", "unspecified"),
    ("https://[::]/hook", "unspecified"),
    ("https://224.0.0.1/hook", "multicast"),
    ("https://[ff02::1]/hook", "multicast"),
    ("https://[::ffff:10.0.0.1]/hook", "private"),
    ("https://[::ffff:169.254.169.254]/", "metadata"),
    ("https://[64:ff9b::a9fe:a9fe]/", "metadata"),
    ("https://2130706433/hook", "canonical IP"),
    ("https://0x7f.0.0.1/hook", "canonical IP"),
    ("https://240.0.0.1/hook", "240.0.0.1 is a"),  # reserved: Python counts it private
    ("https://exa mple.com/", "spaces"),
    ("https:///hook", "must name a host"),
    ("", "must be an https URL"),
    (None, "must be an https URL"),
    ("https://" + ".".join(["a" * 63] * 4) + "/", "not a valid DNS name"),  # 255 characters: over DNS's 253
    ("https://" + ".".join(["a" * 63] * 4) + "./", "not a valid DNS name"),
]
LONGEST_NAME = ".".join(["a" * 63] * 3 + ["a" * 61])  # 253 characters: DNS's longest, written without its root dot


@pytest.mark.parametrize(("url", "why"), REFUSED)
def test_unsafe_urls_are_refused_with_the_reason(url, why):
    with pytest.raises(UnsafeWebhookUrlError) as refused:
        check_url(url, allow_loopback_http=False)
    assert why in refused.value.message
    assert refused.value.http_status == 400


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/hook",
        "https://hooks.example.com:8443/a/b?c=d",
        "https://93.184.216.34/x",
        "https://[2606:4700::1]/",
        f"https://{LONGEST_NAME}/",
        f"https://{LONGEST_NAME}./",  # the same name, fully qualified: the root's dot is no character of the name
    ],
)
def test_public_https_urls_are_allowed(url):
    assert check_url(url, allow_loopback_http=False).url == url


def test_plain_http_is_allowed_only_to_loopback_and_only_when_the_deployment_enables_it():
    assert check_url("http://127.0.0.1:8080/hook", allow_loopback_http=True).scheme == "http"
    assert check_url("http://localhost:8080/hook", allow_loopback_http=True).host == "localhost"
    for url in ("http://example.com/hook", "http://10.0.0.1/hook", "http://169.254.169.254/"):
        with pytest.raises(UnsafeWebhookUrlError):
            check_url(url, allow_loopback_http=True)
    with pytest.raises(UnsafeWebhookUrlError, match="loopback"):
        check_url("http://127.0.0.1:8080/hook", allow_loopback_http=False)


def _resolver(*answers):
    return FixedResolver(*answers)


@pytest.mark.parametrize(
    ("answers", "why"),
    [
        (["10.1.2.3"], "private"),
        (["93.184.216.34", "192.168.0.9"], "private"),  # one bad answer among good ones refuses
        (["169.254.169.254"], "metadata"),
        (["fd00:ec2::254"], "metadata"),
        (["127.0.0.1"], "loopback"),
        (["::ffff:127.0.0.1"], "loopback"),
        ([], "does not resolve"),
    ],
)
def test_a_hostname_that_resolves_to_a_refused_address_is_refused_at_delivery(answers, why):
    url = check_url("https://hooks.example.com/x", allow_loopback_http=False)
    with pytest.raises(UnsafeWebhookUrlError) as refused:
        resolve_checked(url, allow_loopback_http=False, resolver=_resolver(*answers))
    assert why in refused.value.message


def test_delivery_connects_to_the_checked_public_address():
    url = check_url("https://hooks.example.com/x", allow_loopback_http=False)
    assert [str(a) for a in resolve_checked(url, allow_loopback_http=False, resolver=_resolver("93.184.216.34"))] == [
        "93.184.216.34"
    ]


def test_a_loopback_http_url_must_still_resolve_to_loopback():
    url = check_url("http://localhost:9/x", allow_loopback_http=True)
    with pytest.raises(UnsafeWebhookUrlError, match="https"):
        resolve_checked(url, allow_loopback_http=True, resolver=_resolver("93.184.216.34"))
    assert [str(a) for a in resolve_checked(url, allow_loopback_http=True, resolver=_resolver("127.0.0.1"))] == [
        "127.0.0.1"
    ]


class _Exploding:
    """A sender that fails in a way no delivery expects, with tenant data in its message."""

    def send(self, url, addresses, body, headers, *, until):
        raise UnicodeEncodeError("ascii", url.url, 0, 1, f"cannot send {url.url}")


def test_an_unexpected_error_is_one_failed_attempt_on_the_schedule_logged_without_a_traceback(monkeypatch, caplog):
    caplog.set_level(logging.INFO)
    delivering = Delivering(monkeypatch, resolver=FixedResolver("127.0.0.1"), sender=_Exploding())
    target = delivering.subscribe("http://tenant-secret-path.localhost:9/private-token-123")
    failed = delivering.deliver_once(target)
    assert failed == [{"itemIdentifier": "m1"}]  # stays on the queue
    assert delivering.later == [("rh-1", SCHEDULE[0])]  # on the schedule, not the queue's visibility timeout
    assert delivering.counted == [METRIC_WEBHOOK_FAILURES]
    failures = [r for r in caplog.records if r.getMessage() == "webhook delivery failed"]
    assert [r.reason for r in failures] == ["unexpected error (UnicodeEncodeError)"]
    assert all(r.exc_info is None for r in caplog.records)  # no traceback
    assert "private-token-123" not in " ".join(str(vars(r)) for r in caplog.records)
