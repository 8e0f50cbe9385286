"""The console's pages (console/, decision 0137) in a real headless Chromium (Debian's, through Playwright) against
the local stack: sign in with a gateway key, create a job and see its dry-run estimate, watch it finish, read and
download its results, cancel another job, an admin mints a key; result text with markup stays text; the strict
Content-Security-Policy holds. One browser and one page for the module (the e2e layer's time budget)."""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from playwright.sync_api import Page, expect, sync_playwright

from batch_gateway.constants import KEY_MOUNT_PREFIX
from batch_gateway_dev.local.stack import LocalStack
from tests.support.api_caller import seed_body
from tests.support.console_site import launch_chromium

INJECTION = "<img src=x onerror=alert(1)>"
WAIT_MS = 60_000  # a job of the simulators ends within seconds; this only bounds a failure


@pytest.fixture(scope="module")
def console_url(stack: LocalStack) -> str:
    """Where the session stack serves the console: its build, config.json and the template's headers (decision 0138);
    the key mount's CORS origin is that origin."""
    assert stack.console_url, "the local stack serves the console"
    return stack.console_url


class Watched:
    """What the page did that it must not: dialogs (an injected ``alert``), script errors, CSP violations."""

    def __init__(self) -> None:
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.csp: list[str] = []


@pytest.fixture(scope="module")
def browser_page(console_url: str) -> Iterator[tuple[Page, Watched]]:
    watched = Watched()
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        context = browser.new_context(accept_downloads=True)
        page = context.new_page()
        page.on("dialog", lambda dialog: (watched.dialogs.append(dialog.message), dialog.dismiss()))
        page.on("pageerror", lambda error: watched.errors.append(str(error)))

        def on_console(message: Any) -> None:
            if "Content Security Policy" in message.text:
                watched.csp.append(message.text)
            elif message.type == "error" and not message.text.startswith("Failed to load resource"):
                watched.errors.append(message.text)  # not an API's refusal, which the page shows as a message

        page.on("console", on_console)
        page.goto(console_url)
        yield page, watched
        browser.close()


@pytest.fixture
def page(browser_page: tuple[Page, Watched], console_url: str, sim) -> Iterator[Page]:
    """The module's page, signed out, on the sign-in form, with nothing watched yet."""
    page, watched = browser_page
    page.goto(console_url + "#/signin")
    page.evaluate("sessionStorage.clear()")
    page.reload()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    for seen in (watched.dialogs, watched.errors, watched.csp):
        seen.clear()
    yield page


@pytest.fixture
def watched(browser_page: tuple[Page, Watched]) -> Watched:
    return browser_page[1]


def sign_in(page: Page, key: str) -> None:
    page.get_by_label("Gateway key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Jobs")).to_be_visible()


ANIMALS_CSV = 'id,letter,note\nA1,A,first\nB2,B,"with, a comma"\nC3,C,third\n'


def create_from_a_csv(page: Page, model: str) -> None:
    """The new-job page with a CSV and a template (dataset jobs, decision 0136): the dry-run estimate, then the
    create; the page then shows the job."""
    page.get_by_role("link", name="New job").first.click()
    page.get_by_label("Input file (JSONL or CSV)").set_input_files(
        {"name": "animals.csv", "mimeType": "text/csv", "buffer": ANIMALS_CSV.encode()}
    )
    # the model is chosen from the price table's names for the deployment's provider (config.json), or typed
    expect(page.locator("#models option[value='claude-sonnet-4']")).to_have_count(1)
    page.get_by_label("Model").fill(model)
    page.get_by_label("Prompt template").fill("Name an animal that starts with {letter}")
    page.get_by_label("System prompt (optional)").fill("Be brief")
    page.get_by_label("Id column (optional)").fill("id")
    page.get_by_role("button", name="Estimate (dry run)").click()
    expect(page.locator("#estimate")).to_contain_text("Requests3")
    page.get_by_role("button", name="Create job").click()
    expect(page.get_by_role("heading", name="Job job_")).to_be_visible()


def by_key(stack: LocalStack, key: str, method: str, path: str, body: Any = None) -> requests.Response:
    return requests.request(
        method,
        stack.info()["api_url"] + KEY_MOUNT_PREFIX + path,
        json=body,
        headers={"Authorization": f"Bearer {key}"},
        timeout=60,
    )


def test_sign_in_create_watch_read_download_cancel(stack, page, watched, sim, tmp_path):
    # A caller of this test alone: the worker's session stack keeps the jobs of its earlier tests (and their callers').
    alice_key = stack.api_key(stack.caller(f"console-{uuid.uuid4().hex[:8]}"))
    # A refused key: API Gateway's 403 is shown as a message, nothing is kept.
    page.get_by_label("Gateway key").fill("bgk_" + "x" * 43)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("403")
    assert page.evaluate("sessionStorage.length") == 0

    sign_in(page, alice_key)
    assert page.evaluate("Object.values(sessionStorage)") == [alice_key]  # the tab's session storage only
    assert page.evaluate("localStorage.length + document.cookie.length") == 0
    assert alice_key not in page.url

    # New job from a JSONL file: the dry-run estimate comes first, then the create.
    lines = [{"batch_gateway": {"provider": "anthropic", "model": "claude-sonnet-4-20250514"}}] + [
        {"id": f"row-{n}", "request": f"Name an animal that starts with {c}"} for n, c in enumerate("ABCDE")
    ]
    page.get_by_role("link", name="New job").first.click()
    # Bad input: bad lines are listed by number before anything is sent; the API's 400 is shown with its field.
    bad = b'{"id": "a", "request": "hi"}\nnot json\n{"id": "a", "request": "again"}\n'
    page.get_by_label("Input file (JSONL or CSV)").set_input_files(
        {"name": "bad.jsonl", "mimeType": "application/jsonl", "buffer": bad}
    )
    page.get_by_label("Model").fill("claude-sonnet-4-20250514")
    page.get_by_role("button", name="Estimate (dry run)").click()
    expect(page.get_by_role("alert")).to_contain_text("line 2: not valid JSON")
    expect(page.get_by_role("alert")).to_contain_text('line 3: id "a" again')
    page.get_by_label("Input file (JSONL or CSV)").set_input_files(
        {"name": "one.jsonl", "mimeType": "application/jsonl", "buffer": b'{"id": "a", "request": "hi"}'}
    )
    page.get_by_label("Max tokens per request (optional)").fill("-5")
    page.get_by_role("button", name="Estimate (dry run)").click()
    expect(page.get_by_role("alert")).to_contain_text("400 invalid_request")
    expect(page.get_by_role("alert")).to_contain_text("max_tokens")
    expect(page.get_by_role("button", name="Create job")).to_be_disabled()
    page.get_by_label("Max tokens per request (optional)").fill("")
    page.get_by_label("Input file (JSONL or CSV)").set_input_files(
        {
            "name": "animals.jsonl",
            "mimeType": "application/jsonl",
            "buffer": "\n".join(json.dumps(line) for line in lines).encode(),
        }
    )
    page.get_by_label("Model").fill("claude-sonnet-4-20250514")
    expect(page.get_by_role("button", name="Create job")).to_be_disabled()
    page.get_by_role("button", name="Estimate (dry run)").click()
    estimate = page.locator("#estimate")
    expect(estimate).to_contain_text("Requests5")
    expect(estimate).to_contain_text("Cost at batch prices$")
    assert by_key(stack, alice_key, "GET", "/batches").json()["batches"] == []  # a dry run stores nothing
    page.get_by_role("button", name="Create job").click()

    # The job page follows it to the end, by itself.
    expect(page.locator("#job-status")).to_have_text("finished", timeout=WAIT_MS)
    job_id = page.url.rsplit("/", 1)[1]
    expect(page.locator("#job-live")).to_contain_text("5 of 5 done")
    # Its events, oldest first (decision 0139): every status it took and the marks it passed, as the API keeps them.
    kept = by_key(stack, alice_key, "GET", f"/batches/{job_id}").json()["events"]
    assert [e["status"] for e in kept if e["type"] == "status"] == ["queued", "in_progress", "finished"]
    events = page.locator("#job-events tbody tr")
    expect(events).to_have_count(len(kept))
    expect(events.first).to_contain_text("queued")
    expect(events.last).to_contain_text("in_progress \u2192 finished")
    expect(page.locator("#job-events")).to_contain_text(kept[-1]["event_id"])
    page.get_by_role("link", name="Results").click()
    expect(page.locator("article.item")).to_have_count(5)
    expect(page.locator("article.item").first).to_contain_text("row-0")
    with page.expect_download() as download_info:
        page.get_by_role("button", name="Download JSONL").click()
    saved = tmp_path / "results.jsonl"
    download_info.value.save_as(saved)
    items = [json.loads(line) for line in saved.read_text().splitlines()]
    assert sorted(item["id"] for item in items) == [f"row-{n}" for n in range(5)]
    assert all(item["status"] == "succeeded" for item in items)

    # Cancel a running job from its page.
    sim.configure(processing_seconds=60)
    running = by_key(stack, alice_key, "POST", "/batches", seed_body(requests={f"r{n}": f"slow {n}" for n in range(3)}))
    assert running.status_code == 202, running.text
    other = running.json()["id"]
    page.goto(page.url.split("#")[0] + f"#/jobs/{other}")
    page.get_by_role("button", name="Cancel job").click()
    expect(page.locator("#job-status")).to_have_text("canceled", timeout=WAIT_MS)
    expect(page.get_by_role("button", name="Cancel job")).to_have_count(0)

    # The list: newest first, filtered by status.
    page.get_by_role("link", name="Jobs", exact=True).click()
    rows = page.locator("tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text(other)
    expect(rows.nth(1)).to_contain_text(job_id)
    page.get_by_label("Status").select_option("canceled")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(other)

    # Sign out forgets the key.
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert page.evaluate("sessionStorage.length") == 0
    assert watched.dialogs == [] and watched.errors == [] and watched.csp == []


def test_a_job_from_a_csv_and_a_template_comes_back_as_the_same_table(stack, page, watched, tmp_path):
    """Issue 29's spreadsheet user: a CSV and a template, the dry-run estimate, the job watched to its end, its
    results read, and the table downloaded with result columns: every input row, in order, its columns unchanged."""
    sign_in(page, stack.api_key(stack.caller(f"console-{uuid.uuid4().hex[:8]}")))
    create_from_a_csv(page, "claude-sonnet-4-20250514")
    expect(page.locator("#job-status")).to_have_text("finished", timeout=WAIT_MS)
    expect(page.locator("#job-live")).to_contain_text("3 of 3 done")
    page.get_by_role("link", name="Results").click()
    expect(page.locator("article.item")).to_have_count(3)
    expect(page.locator("article.item").first).to_contain_text("Name an animal that starts with A")
    with page.expect_download() as download_info:
        page.get_by_role("button", name="Download CSV").click()
    saved = tmp_path / "results.csv"
    download_info.value.save_as(saved)
    with saved.open(newline="", encoding="utf-8") as table:
        rows = list(csv.DictReader(table))
    given = list(csv.DictReader(io.StringIO(ANIMALS_CSV)))
    assert [{k: row[k] for k in ("id", "letter", "note")} for row in rows] == given  # every row, in order, unchanged
    assert [row["status"] for row in rows] == ["succeeded"] * 3
    assert all(f"starts with {row['letter']}" in row["text"] for row in rows)
    assert watched.dialogs == [] and watched.errors == [] and watched.csp == []


def test_an_admin_key_mints_a_key_and_a_plain_key_sees_403(stack, page, watched):
    alice = stack.caller("alice")
    page.goto(page.url.split("#")[0] + "#/signin")
    sign_in(page, stack.api_key(alice))
    page.get_by_role("link", name="Admin").click()
    expect(page.locator("#keys")).to_contain_text("403")
    expect(page.locator("#budgets")).to_contain_text("403")
    expect(page.locator("#webhooks")).to_contain_text("None.")  # any key has its own webhooks

    page.get_by_role("button", name="Sign out").click()
    sign_in(page, stack.api_key(stack.caller("ops", admin=True), admin=True))
    page.get_by_role("link", name="Admin").click()
    expect(page.locator("#keys table")).to_be_visible()
    expect(page.locator("#budgets table")).to_be_visible()
    page.get_by_label("Owner (IAM user or role ARN)").fill(alice.principal)
    page.get_by_label("Name", exact=True).fill("minted in the console")
    page.get_by_role("button", name="Mint key").click()
    minted = page.locator("#minted-key")
    expect(minted).to_have_text(re.compile(r"^bgk_[A-Za-z0-9_-]{43}$"))  # shown once, to copy
    expect(page.locator("#keys tbody")).to_contain_text("minted in the console")
    key = minted.text_content() or ""
    assert by_key(stack, key, "GET", "/budget").status_code == 200  # the minted key works
    assert watched.dialogs == [] and watched.errors == [] and watched.csp == []


def test_result_text_with_markup_is_shown_as_text_and_runs_nothing(stack, page, watched):
    key = stack.api_key(stack.caller("alice"))
    made = by_key(
        stack,
        key,
        "POST",
        "/batches",
        # 51 items: the results come 50 a page, the markup on the first
        seed_body(
            requests={INJECTION: INJECTION, **{f"n{n:02d}": f"plain {n}" for n in range(50)}},
            metadata={"note": INJECTION},
        ),
    )
    assert made.status_code == 202, made.text
    job_id = made.json()["id"]
    sign_in(page, key)
    page.goto(page.url.split("#")[0] + f"#/jobs/{job_id}")
    expect(page.locator("#job-status")).to_have_text("finished", timeout=WAIT_MS)
    expect(page.locator("#job-live")).to_contain_text(INJECTION)  # the metadata value, as text
    page.get_by_role("link", name="Results").click()
    items = page.locator("article.item")
    expect(items).to_have_count(50)
    item = items.filter(has_text="onerror")
    expect(item.locator("h3")).to_contain_text(INJECTION)  # the request id
    expect(item.locator(".text")).to_contain_text(INJECTION)  # the simulator's reply quotes the prompt
    assert page.locator("img").count() == 0
    assert page.evaluate("document.images.length") == 0
    page.get_by_role("button", name="Next page").click()  # the results' paging
    expect(items).to_have_count(1)
    expect(page.get_by_role("button", name="Next page")).to_be_disabled()
    page.get_by_role("button", name="Previous page").click()
    expect(items).to_have_count(50)
    assert watched.dialogs == [] and watched.errors == []


def test_the_content_security_policy_holds(stack, page, watched, console_url):
    answer = requests.get(console_url, timeout=10)
    policy = answer.headers["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "unsafe-inline" not in policy
    sign_in(page, stack.api_key(stack.caller("alice")))
    for route in ("#/new", "#/admin", "#/jobs"):
        page.goto(console_url + route)
        expect(page.locator("h1")).to_be_visible()
    assert watched.csp == [], watched.csp  # the pages load and run under the policy
    # An inline script is refused (Playwright's own evaluate runs outside the page's policy; the element does not).
    refused = page.evaluate(
        """() => new Promise((resolve) => {
            document.addEventListener("securitypolicyviolation", (e) => resolve(e.violatedDirective), {once: true});
            const script = document.createElement("script");
            script.textContent = "window.inlineRan = true";
            document.body.append(script);
        })"""
    )
    assert refused.startswith("script-src")
    assert page.evaluate("window.inlineRan === undefined")
