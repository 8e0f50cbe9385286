"""Webhook URL safety (decision 0071): the URL at create, every resolved address at delivery."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batch_gateway.constants import METRIC_WEBHOOK_FAILURES
from batch_gateway.service.api import webhooks
from batch_gateway.service.events.webhook_urls import UnsafeWebhookUrlError, check_url, resolve_checked
from batch_gateway_dev.fakes.webhooks import FixedResolver
from tests.support.services import memory_services
from tests.support.webhook_delivering import ALICE, SCHEDULE, Delivering
from tests.support.webhook_receiver import WebhookReceiver

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


# What the tenant typed, and what the receiver gets in the request line: RFC 3986 percent-encoding (UTF-8) of every
# character a path or query may not hold; escapes already there and the characters a URI may hold are left as they are.
AS_SENT = [
    ("/café", "/caf%C3%A9"),
    ("/über/straße?name=naïve&city=Zürich", "/%C3%BCber/stra%C3%9Fe?name=na%C3%AFve&city=Z%C3%BCrich"),
    ("/日本?q=東京", "/%E6%97%A5%E6%9C%AC?q=%E6%9D%B1%E4%BA%AC"),
    ("/caf%C3%A9?q=%41", "/caf%C3%A9?q=%41"),  # already encoded: not encoded twice
    ("/100%?x=50%", "/100%25?x=50%25"),  # a % that starts no escape is one
    ('/a{b}|c^"<>`\\', "/a%7Bb%7D%7Cc%5E%22%3C%3E%60%5C"),
    ("/a-b_c.d~e!$&'()*+,;=:@/?k=v/?", "/a-b_c.d~e!$&'()*+,;=:@/?k=v/?"),
]


@pytest.mark.parametrize(("typed", "sent"), AS_SENT)
def test_a_url_with_non_ascii_path_or_query_is_taken_and_delivered_percent_encoded(monkeypatch, typed, sent):
    delivering = Delivering(monkeypatch)
    with WebhookReceiver([204]) as receiver:
        target = delivering.subscribe(f"http://127.0.0.1:{receiver.port}{typed}")  # taken at create
        failed = delivering.deliver_once(target)
        seen = receiver.seen()
    assert [r.path for r in seen] == [sent]
    assert failed == [] and delivering.later == []  # delivered once: nothing retried, nothing dead-lettered
    stored = delivering.services.webhooks.get_subscription(ALICE, target)
    assert stored is not None and stored.url.endswith(typed)  # the URL as the tenant gave it


def test_an_internationalised_host_name_is_delivered_to_its_idna_name(monkeypatch):
    resolver = FixedResolver("127.0.0.1")
    delivering = Delivering(monkeypatch, resolver=resolver)
    with WebhookReceiver([204]) as receiver:
        target = delivering.subscribe(f"http://bücher.localhost:{receiver.port}/café")
        failed = delivering.deliver_once(target)
        seen = receiver.seen()
    assert [(r.headers["host"], r.path) for r in seen] == [(f"xn--bcher-kva.localhost:{receiver.port}", "/caf%C3%A9")]
    assert failed == [] and resolver.asked == ["xn--bcher-kva.localhost"]


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://bücher.example/", "xn--bcher-kva.example"),
        ("https://BÜCHER.Example/", "xn--bcher-kva.example"),
        ("https://xn--bcher-kva.example/", "xn--bcher-kva.example"),
        ("https://例え.テスト/", "xn--r8jz45g.xn--zckzah"),
    ],
)
def test_an_internationalised_host_name_is_checked_as_its_idna_name(url, host):
    assert check_url(url, allow_loopback_http=False).host == host


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://example.com/a\x80b", "control characters"),  # C1 control
        ("https://example.com/a\x9fb", "control characters"),
        ("https://example.com/a\u00a0b", "spaces"),  # no-break space
        ("https://example.com/a\u2028b", "spaces"),  # line separator
        ("https://example.com/\ud800", "unpaired surrogate"),  # JSON can carry one; no UTF-8 can
        ("https://１２７.０.０.１/hook", "loopback"),  # fullwidth digits: IDNA makes them 127.0.0.1
        ("https://ｌｏｃａｌｈｏｓｔ/hook", "loopback"),
        ("https://exa..mple.com/", "not a valid DNS name"),
        ("https://bü" + "c" * 70 + ".example/", "not a valid DNS name"),  # a label over 63 in its IDNA form
    ],
)
def test_urls_that_can_never_be_delivered_are_refused_at_create(url, why):
    with pytest.raises(UnsafeWebhookUrlError) as refused:
        check_url(url, allow_loopback_http=False)
    assert why in refused.value.message and refused.value.http_status == 400


def test_a_url_refused_at_create_is_a_400_and_nothing_is_stored():
    services = memory_services()
    for url in ("https://example.com/a b", "https://example.com/a\x80b", "https://example.com/\ud800"):
        with pytest.raises(UnsafeWebhookUrlError) as refused:
            webhooks.create_subscription(services, ALICE, {"url": url, "events": ["batch.ended"]})
        assert refused.value.http_status == 400 and refused.value.details[0]["field"] == "url"
        with pytest.raises(UnsafeWebhookUrlError):
            webhooks.job_webhook({"url": url}, allow_loopback_http=False)
    assert services.webhooks.list_subscriptions(ALICE) == []


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


_ANY_CHARACTER = st.characters(exclude_categories=())  # surrogates included: a JSON string can hold one


@settings(max_examples=500, deadline=None)
@given(
    host=st.text(_ANY_CHARACTER, max_size=30) | st.sampled_from(["example.com", "bücher.example", "127.0.0.1"]),
    rest=st.text(_ANY_CHARACTER, max_size=40),
)
def test_any_url_is_either_refused_as_a_400_or_one_a_request_line_can_carry(host, rest):
    """Whatever a tenant sends, create answers a 400 or takes a URL that HTTP can carry: an ASCII host and target."""
    try:
        url = check_url(f"https://{host}/{rest}", allow_loopback_http=False)
    except UnsafeWebhookUrlError as refused:
        assert refused.http_status == 400
        return
    assert url.host.isascii() and url.target.isascii() and url.host_header.isascii()
    assert not any(ch.isspace() or ord(ch) < 0x21 or ord(ch) == 0x7F for ch in url.target)
