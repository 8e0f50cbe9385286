"""Prompts and completions are private: no log line of a whole job may contain them."""

import pytest

pytestmark = pytest.mark.e2e

PROMPT = "PRIVATE-PROMPT-7f3a9c describe the quarterly numbers"


def test_a_full_job_logs_keys_and_counts_but_never_prompt_or_completion_text(alice, stack):
    body = {
        "provider": "anthropic",
        "model": "claude-sonnet-4-20250514",
        "requests": {
            "secret_1": PROMPT,
            "secret_2": {"messages": [{"role": "user", "content": PROMPT}], "system": "SYSTEM-PROMPT-55b1"},
        },
    }
    job = alice.create(body)
    assert alice.wait(job["id"])["status"] == "finished"
    results = alice.all_results(job["id"])
    completion = results["secret_1"]["text"]
    assert PROMPT[:20] in completion  # the simulator echoes part of the prompt, so a leak would show
    logs = stack.logs()  # every function's log, as its CloudWatch log group would hold it (INFO and up)
    assert "chunk collected" in logs and job["id"] in logs  # the capture did see the job's logs
    for private in (PROMPT, PROMPT[:20], "SYSTEM-PROMPT-55b1", completion):
        assert private not in logs
