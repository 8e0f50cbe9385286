"""``batch-gateway`` against the fake service: what a user sees, what lands in files, and exit codes."""

from __future__ import annotations

import io
import json
import sys
import types

import pytest

from batch_gateway.cli import Progress, main
from batch_gateway.client.models import Job
from batch_gateway.client.testing import FAKE_AWS_ENV, FakeBatchGateway

INPUT = "\n".join(
    [
        '{"batch_gateway": {"provider": "anthropic", "model": "claude-test", "hyperparameters": {"max_tokens": 64}}}',
        '{"id": "request_A", "request": "Name an animal that starts with A"}',
        '{"id": "request_B", "request": [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "B"}]}',
        "",
    ]
)


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("BATCH_GATEWAY_ENDPOINT", raising=False)


@pytest.fixture
def fake(monkeypatch):
    with FakeBatchGateway(polls_to_finish=2) as server:
        monkeypatch.setenv("BATCH_GATEWAY_ENDPOINT", server.url)
        yield server


@pytest.fixture
def input_file(tmp_path):
    path = tmp_path / "requests.jsonl"
    path.write_text(INPUT)
    return path


def submit(fake: FakeBatchGateway, input_file) -> str:
    assert main(["submit", str(input_file)]) == 0
    return list(fake.jobs)[-1]


def test_submit_wait_writes_one_result_line_per_request_to_the_output_file(fake, input_file, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    fake.set_outcome("request_B", "errored", code="overloaded_error", message="Overloaded")

    code = main(["submit", str(input_file), "--wait", "--poll-interval", "0.01", "-o", str(out)])

    assert code == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [item["id"] for item in lines] == ["request_A", "request_B"]
    assert lines[0]["text"].endswith("Name an animal that starts with A")
    assert lines[1]["finish_details"] == {"type": "error", "code": "overloaded_error", "message": "Overloaded"}
    err = capsys.readouterr().err
    assert "1 errored, 1 succeeded" in err
    assert not (tmp_path / "results.jsonl.part").exists()


def test_submit_wait_shows_plain_progress_lines_when_stderr_is_not_a_tty(fake, input_file, capsys):
    assert main(["submit", str(input_file), "--wait", "--poll-interval", "0.01"]) == 0
    captured = capsys.readouterr()
    progress = [line for line in captured.err.splitlines() if "done |" in line]
    assert progress[0].startswith("batch_00001 in_progress ")
    assert "0/2 done" in progress[0]
    assert "2/2 done | succeeded 2 errored 0 canceled 0 expired 0 | 00:00" in progress[-1]
    assert "\r" not in captured.err
    assert len(captured.out.splitlines()) == 2  # the results, as JSONL, on stdout


def test_progress_redraws_one_line_on_a_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    stream, ticks = io.StringIO(), iter([0.0, 5.0, 65.0])
    progress = Progress(stream, tty=True, clock=lambda: next(ticks))
    job = {"id": "b1", "provider": "anthropic", "model": "m"}
    progress.update(Job(**job, status="in_progress", request_counts={"total": 4, "succeeded": 1}))
    progress.update(Job(**job, status="finished", request_counts={"total": 4, "succeeded": 3, "errored": 1}))
    progress.close()
    text = stream.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and text.count("\n") == 1
    assert "1/4 done" in text and "00:05" in text
    assert "[########################] 4/4 done | succeeded 3 errored 1" in text and "01:05" in text


def test_header_values_are_defaults_and_flags_override_them(fake, input_file):
    argv = ["submit", str(input_file), "--model", "claude-other", "--hyperparameters", '{"temperature": 0.5}']
    assert main([*argv, "--metadata", '{"team": "search"}']) == 0
    body = fake.requests_to("POST", "/batches")[0].body
    assert (body["provider"], body["model"]) == ("anthropic", "claude-other")
    assert body["hyperparameters"] == {"max_tokens": 64, "temperature": 0.5}
    assert body["metadata"] == {"team": "search"}
    assert body["requests"]["request_B"] == {"messages": [{"role": "user", "content": "B"}], "system": "Be brief"}


def test_submit_without_wait_prints_the_job_id(fake, input_file, capsys):
    assert main(["submit", str(input_file)]) == 0
    assert capsys.readouterr().out.startswith("submitted batch_00001: 2 requests to anthropic claude-test")


def test_submit_json_prints_the_job(fake, input_file, capsys):
    assert main(["--json", "submit", str(input_file)]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "queued"


def test_submit_of_a_bad_file_lists_every_bad_line_and_exits_1(fake, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "request": "x"}\nnot json\n{"id": "a", "request": "y"}\n')
    assert main(["submit", str(bad), "--provider", "openai", "--model", "m"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: invalid_request: invalid JSONL input: 2 problems")
    assert "  line 2: invalid JSON" in err
    assert '  line 3: duplicate id "a" (first on line 1)' in err
    assert fake.received == []


def test_submit_without_provider_anywhere_is_a_usage_error(fake, tmp_path, capsys):
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"id": "a", "request": "x"}\n')
    assert main(["submit", str(plain)]) == 2
    assert "no provider or model" in capsys.readouterr().err


def test_status_prints_aligned_key_values(fake, input_file, capsys):
    batch_id = submit(fake, input_file)
    capsys.readouterr()
    assert main(["status", batch_id]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"id:         {batch_id}"
    assert out[1] == "status:     in_progress (gllm: in_progress)"
    assert "requests:   0/2 done" in out[4]


def test_status_json_is_the_job(fake, input_file, capsys):
    batch_id = submit(fake, input_file)
    capsys.readouterr()
    assert main(["status", batch_id, "--json"]) == 0
    job = json.loads(capsys.readouterr().out)
    assert (job["id"], job["request_counts"]["total"]) == (batch_id, 2)


def test_list_prints_a_table_newest_first(fake, input_file, capsys):
    first, second = submit(fake, input_file), submit(fake, input_file)
    capsys.readouterr()
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["ID", "STATUS", "PROVIDER", "MODEL", "DONE", "CREATED"]
    assert [line.split()[0] for line in lines[1:]] == [second, first]
    assert lines[1].index("queued") == lines[0].index("STATUS")


def test_list_json_and_status_filter(fake, input_file, capsys):
    first, _ = submit(fake, input_file), submit(fake, input_file)
    assert main(["cancel", first]) == 0
    capsys.readouterr()
    assert main(["list", "--status", "canceling", "--json"]) == 0
    assert [job["id"] for job in json.loads(capsys.readouterr().out)] == [first]


def test_cancel_says_canceling_and_json_gives_the_job(fake, input_file, capsys):
    first, second = submit(fake, input_file), submit(fake, input_file)
    capsys.readouterr()
    assert main(["cancel", first]) == 0
    assert capsys.readouterr().out.startswith(f"{first} canceling")
    assert main(["--json", "cancel", second]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "canceling"


def test_results_writes_jsonl_for_an_ended_job(fake, input_file, tmp_path):
    fake.polls_to_finish = 1
    batch_id = submit(fake, input_file)
    assert main(["status", batch_id]) == 0  # the fake ends a job as it is polled
    out = tmp_path / "again.jsonl"
    assert main(["results", batch_id, "-o", str(out)]) == 0
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["request_A", "request_B"]


def test_a_service_error_exits_1_with_type_and_message(fake, capsys):
    assert main(["status", "batch_missing"]) == 1
    assert capsys.readouterr().err == "error: not_found: no batch batch_missing\n"


def test_a_service_error_with_json_is_the_error_body_on_stderr(fake, capsys):
    assert main(["--json", "cancel", "batch_missing"]) == 1
    error = json.loads(capsys.readouterr().err)["error"]
    assert (error["type"], error["status_code"]) == ("not_found", 404)


def test_results_of_a_running_job_is_a_conflict_exit_1(fake, input_file, capsys):
    batch_id = submit(fake, input_file)
    assert main(["results", batch_id]) == 1
    assert capsys.readouterr().err.startswith("error: conflict: ")


def test_missing_endpoint_is_a_usage_error_exit_2(capsys):
    assert main(["status", "batch_00001"]) == 2
    assert "no endpoint: pass --endpoint URL or set BATCH_GATEWAY_ENDPOINT" in capsys.readouterr().err


def test_global_options_work_after_the_command_too(fake, input_file, capsys, monkeypatch):
    monkeypatch.delenv("BATCH_GATEWAY_ENDPOINT")
    assert main(["submit", str(input_file), "--endpoint", fake.url, "--json"]) == 0
    batch_id = json.loads(capsys.readouterr().out)["id"]
    assert main(["--endpoint", fake.url, "status", batch_id]) == 0
    assert capsys.readouterr().out.startswith(f"id:         {batch_id}")


def test_unknown_command_and_bad_flags_exit_2(capsys):
    assert main(["explode"]) == 2
    assert main(["list", "--status", "nonsense"]) == 2


def test_local_calls_the_local_stacks_serve(monkeypatch):
    calls = []
    module = types.ModuleType("batch_gateway.local")
    module.serve = lambda host, port: calls.append((host, port))
    monkeypatch.setitem(sys.modules, "batch_gateway.local", module)
    assert main(["local", "--port", "9999"]) == 0
    assert calls == [("127.0.0.1", 9999)]


def test_submit_wait_on_a_job_that_fails_exits_1_with_the_jobs_error(fake, input_file, capsys, monkeypatch):
    fake.polls_to_finish = 100
    real_poll = fake._poll

    def poll_then_fail(job):
        fake.fail_job(job.id, "provider_auth_error", "the Anthropic API key was rejected")
        return real_poll(job)

    monkeypatch.setattr(fake, "_poll", poll_then_fail)
    assert main(["submit", str(input_file), "--wait", "--poll-interval", "0.01"]) == 1
    err = capsys.readouterr().err
    assert "error: provider_auth_error: batch batch_00001 failed: the Anthropic API key was rejected" in err
