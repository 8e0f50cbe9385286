"""Prompts and completions are private: no log line of a whole job may contain them."""

import logging

import pytest

pytestmark = pytest.mark.e2e

PROMPT = "PRIVATE-PROMPT-7f3a9c describe the quarterly numbers"


class _Lines(logging.Handler):
    def __init__(self, formatter: logging.Formatter) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(formatter)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def log_lines():
    """Every line the service logs during the test, formatted exactly as Lambda would print it (INFO and up)."""
    from batch_gateway.edge.observability import logger

    ours = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
            if name.startswith("batch-gateway")]
    levels = [log.level for log in ours]
    for log in ours:
        log.setLevel(logging.INFO)
    capture = _Lines(logger.registered_formatter)
    logging.getLogger("batch-gateway").addHandler(capture)
    yield capture.lines
    logging.getLogger("batch-gateway").removeHandler(capture)
    for log, level in zip(ours, levels, strict=True):
        log.setLevel(level)


def test_a_full_job_logs_keys_and_counts_but_never_prompt_or_completion_text(alice, log_lines, capfd):
    body = {"provider": "anthropic", "model": "claude-sonnet-4-20250514",
            "requests": {"secret_1": PROMPT, "secret_2": {"messages": [{"role": "user", "content": PROMPT}],
                                                         "system": "SYSTEM-PROMPT-55b1"}}}
    job = alice.create(body)
    assert alice.wait(job["id"])["status"] == "finished"
    results = alice.all_results(job["id"])
    completion = results["secret_1"]["text"]
    assert PROMPT[:20] in completion  # the simulator echoes part of the prompt, so a leak would show
    out, err = capfd.readouterr()
    logs = "\n".join(log_lines) + out + err
    assert "chunk collected" in logs and job["id"] in logs  # the capture did see the job's logs
    for private in (PROMPT, PROMPT[:20], "SYSTEM-PROMPT-55b1", completion):
        assert private not in logs
