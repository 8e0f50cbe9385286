"""``make console-screenshots``: start a local stack, sign in to the console in Debian's Chromium, create a job or
two, and write a PNG of each page to docs/screenshots/ (README.md's "Console" section links them)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import requests
from playwright.sync_api import expect, sync_playwright

from batch_gateway.constants import KEY_MOUNT_PREFIX
from batch_gateway_dev.local.stack import LocalStack
from tests.support.console_site import launch_chromium

WAIT_MS = 90_000
ANIMALS = [{"id": f"animal-{c}", "request": f"Name an animal that starts with the letter '{c}'"} for c in "ABCDEFGH"]


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    context = {"owner_limits": '{"creates_per_minute": null, "open_jobs": null}'}
    with LocalStack(poll_schedule="1", processing_seconds=2, context=context, quiet=True) as stack:
        api_url = stack.info()["api_url"]
        alice = stack.caller("alice")
        key = stack.api_key(alice, "console screenshots")
        admin_key = stack.api_key(stack.caller("ops", admin=True), "operator", admin=True)
        with sync_playwright() as playwright:
            browser = launch_chromium(playwright)
            page = browser.new_page(viewport={"width": 1200, "height": 800})

            def shot(name: str) -> None:
                page.screenshot(path=str(out / f"{name}.png"), full_page=True)
                print(out / f"{name}.png")

            page.goto(stack.console_url)
            expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
            shot("sign-in")
            page.get_by_label("Gateway key").fill(key)
            page.get_by_role("button", name="Sign in").click()
            expect(page.get_by_role("heading", name="Jobs")).to_be_visible()

            page.get_by_role("link", name="New job").first.click()
            body = "\n".join(json.dumps(line) for line in ANIMALS).encode()
            page.get_by_label("Input file (JSONL or CSV)").set_input_files(
                {"name": "animals.jsonl", "mimeType": "application/jsonl", "buffer": body}
            )
            page.get_by_label("Model").fill("claude-sonnet-4-20250514")
            page.get_by_label("Max tokens per request (optional)").fill("256")
            page.get_by_role("button", name="Estimate (dry run)").click()
            expect(page.locator("#estimate")).to_be_visible()
            shot("new-job")
            page.get_by_role("button", name="Create job").click()
            expect(page.locator("#job-status")).to_have_text("finished", timeout=WAIT_MS)
            shot("job")
            page.get_by_role("link", name="Results").click()
            expect(page.locator("article.item").first).to_be_visible()
            shot("results")

            # A second job, in progress: the simulator finishes its items one by one over a minute.
            stack.simulator.configure(processing_seconds=60)
            questions = {f"q{n}": f"Why is the sky blue? ({n})" for n in range(1, 7)}
            slow = {"provider": "openai", "model": "gpt-4o-mini", "requests": questions}
            bearer = {"Authorization": f"Bearer {key}"}
            made = requests.post(api_url + KEY_MOUNT_PREFIX + "/batches", json=slow, headers=bearer, timeout=60)
            made.raise_for_status()
            page.goto(stack.console_url + f"#/jobs/{made.json()['id']}")
            expect(page.locator("#job-live")).to_contain_text(re.compile(r"[1-5] of 6 done"), timeout=WAIT_MS)
            shot("job-running")
            page.get_by_role("link", name="Jobs", exact=True).click()
            expect(page.locator("tbody tr")).to_have_count(2)
            shot("jobs")

            page.get_by_role("button", name="Sign out").click()
            page.get_by_label("Gateway key").fill(admin_key)
            page.get_by_role("button", name="Sign in").click()
            page.get_by_role("link", name="Admin").click()
            page.get_by_label("Owner (IAM user or role ARN)").fill(alice.principal)
            page.get_by_label("Name", exact=True).fill("search team")
            page.get_by_role("button", name="Mint key").click()
            expect(page.locator("#minted-key")).to_be_visible()
            expect(page.locator("#budgets table")).to_be_visible()
            expect(page.locator("#webhooks table")).to_be_visible()
            shot("admin")
            browser.close()
        stack.simulator.configure(processing_seconds=0)
        url = f"{api_url}{KEY_MOUNT_PREFIX}/batches/{made.json()['id']}/cancel"
        requests.post(url, headers=bearer, timeout=60).raise_for_status()


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots"))
