"""``batch-gateway`` against canned answers: what a user sees, what lands in files, and exit codes."""

from __future__ import annotations

import io
import json
import sys
import types

import pytest

from batch_gateway.cli import Progress, main
from batch_gateway.client.models import Job
from tests.support.replay_gateway import FAKE_AWS_ENV, INPUT, ReplayGateway, error, item, job, jobs, results


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("BATCH_GATEWAY_ENDPOINT", raising=False)


@pytest.fixture
def gateway(monkeypatch):
    with ReplayGateway() as server:
        monkeypatch.setenv("BATCH_GATEWAY_ENDPOINT", server.url)
        server.script("POST", "/batches", job("job_1", total=2), job("job_2", total=2))
        yield server


@pytest.fixture
def input_file(tmp_path):
    path = tmp_path / "requests.jsonl"
    path.write_text(INPUT)
    return path


def counts(total: int = 2, **done: int) -> dict[str, int]:
    return {"total": total, "processing": total - sum(done.values()), **done}


def run_then_finish(gateway: ReplayGateway, job_id: str = "job_1", **finished_counts: int) -> None:
    gateway.script(
        "GET",
        f"/batches/{job_id}",
        job(job_id, "in_progress", request_counts=counts()),
        job(job_id, "finished", request_counts=counts(**(finished_counts or {"succeeded": 2}))),
    )


def test_submit_wait_writes_one_result_line_per_request_to_the_output_file(gateway, input_file, tmp_path, capsys):
    out = tmp_path / "results.jsonl"
    run_then_finish(gateway, succeeded=1, errored=1)
    overloaded = {"type": "error", "code": "overloaded_error", "message": "Overloaded"}
    items = [
        item("request_A", "Answer: Name an animal that starts with A"),
        item("request_B", status="errored", finish_details=overloaded),
    ]
    gateway.script("GET", "/batches/job_1/results", results("job_1", items))

    code = main(["submit", str(input_file), "--wait", "--poll-interval", "0.01", "-o", str(out)])

    assert code == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [item["id"] for item in lines] == ["request_A", "request_B"]
    assert lines[0]["text"].endswith("Name an animal that starts with A")
    assert lines[1]["finish_details"] == {"type": "error", "code": "overloaded_error", "message": "Overloaded"}
    err = capsys.readouterr().err
    assert "1 errored, 1 succeeded" in err
    assert not (tmp_path / "results.jsonl.part").exists()


def test_submit_wait_shows_plain_progress_lines_when_stderr_is_not_a_tty(gateway, input_file, capsys):
    run_then_finish(gateway)
    gateway.script("GET", "/batches/job_1/results", results("job_1", [item("request_A"), item("request_B")]))
    assert main(["submit", str(input_file), "--wait", "--poll-interval", "0.01"]) == 0
    captured = capsys.readouterr()
    progress = [line for line in captured.err.splitlines() if "done |" in line]
    assert progress[0].startswith("job_1 in_progress ")
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


def test_header_values_are_defaults_and_flags_override_them(gateway, input_file):
    argv = ["submit", str(input_file), "--model", "claude-other", "--hyperparameters", '{"temperature": 0.5}']
    assert main([*argv, "--metadata", '{"team": "search"}']) == 0
    body = gateway.requests_to("POST", "/batches")[0].body
    assert (body["provider"], body["model"]) == ("anthropic", "claude-other")
    assert body["hyperparameters"] == {"max_tokens": 64, "temperature": 0.5}
    assert body["metadata"] == {"team": "search"}
    assert body["requests"]["request_B"] == {"messages": [{"role": "user", "content": "B"}], "system": "Be brief"}


def test_prompt_cache_comes_from_the_header_and_the_flag_overrides_it(gateway, tmp_path):
    """Decision 0128: the job option, as the create body's ``prompt_cache``; absent, the body leaves it out."""
    path = tmp_path / "off.jsonl"
    header = '{"batch_gateway": {"provider": "anthropic", "model": "claude-x", "prompt_cache": "off"}}\n'
    path.write_text(header + '{"id": "a", "request": "A"}\n')
    assert main(["submit", str(path)]) == 0
    assert main(["submit", str(path), "--prompt-cache", "auto"]) == 0
    first, second = (r.body for r in gateway.requests_to("POST", "/batches"))
    assert (first["prompt_cache"], second["prompt_cache"]) == ("off", "auto")


def test_reuse_flag_sends_the_owner_scoped_option_and_otherwise_the_header_s(gateway, input_file, tmp_path):
    """Decision 0127: ``--reuse N`` is ``{"scope": "owner", "max_age_seconds": N}``; without it the header's, else
    the body leaves it out (the deployment's default)."""
    with_header = tmp_path / "with_header.jsonl"
    header = '"reuse": {"scope": "owner", "max_age_seconds": 60}, "hyperparameters"'
    with_header.write_text(INPUT.replace('"hyperparameters"', header, 1))
    gateway.script("POST", "/batches", job("job_3", total=2))
    assert main(["submit", str(input_file), "--reuse", "86400"]) == 0
    assert main(["submit", str(with_header)]) == 0
    assert main(["submit", str(input_file)]) == 0
    bodies = [r.body for r in gateway.requests_to("POST", "/batches")]
    assert bodies[0]["reuse"] == {"scope": "owner", "max_age_seconds": 86400}
    assert bodies[1]["reuse"] == {"scope": "owner", "max_age_seconds": 60}
    assert "reuse" not in bodies[2]


@pytest.mark.parametrize("age", ["0", "-5", "1.5", "a day"])
def test_reuse_flag_refuses_an_age_that_is_not_a_whole_number_above_0_before_sending(gateway, input_file, capsys, age):
    assert main(["submit", str(input_file), "--reuse", age]) == 2
    assert "--reuse" in capsys.readouterr().err
    assert gateway.requests_to("POST", "/batches") == []


def test_pii_flag_sends_the_guardrails_option_and_otherwise_the_header_s(gateway, input_file, tmp_path):
    assert main(["submit", str(input_file), "--pii", "redact"]) == 0
    assert gateway.requests_to("POST", "/batches")[0].body["guardrails"] == {"pii": "redact"}
    with_header = tmp_path / "with_header.jsonl"
    with_header.write_text(INPUT.replace('"hyperparameters"', '"guardrails": {"pii": "reject"}, "hyperparameters"', 1))
    assert main(["submit", str(with_header)]) == 0
    assert gateway.requests_to("POST", "/batches")[1].body["guardrails"] == {"pii": "reject"}


def test_submit_without_wait_prints_the_job_id(gateway, input_file, capsys):
    assert main(["submit", str(input_file)]) == 0
    assert capsys.readouterr().out.startswith("submitted job_1: 2 requests to anthropic claude-test")


def test_submit_json_prints_the_job(gateway, input_file, capsys):
    assert main(["--json", "submit", str(input_file)]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "queued"


def test_submit_of_a_bad_file_lists_every_bad_line_and_exits_1(gateway, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "request": "x"}\nnot json\n{"id": "a", "request": "y"}\n')
    assert main(["submit", str(bad), "--provider", "openai", "--model", "m"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: invalid_request: invalid JSONL input: 2 problems")
    assert "  line 2: invalid JSON" in err
    assert '  line 3: duplicate id "a" (first on line 1)' in err
    assert gateway.received == []


def test_submit_without_provider_anywhere_is_a_usage_error(gateway, tmp_path, capsys):
    plain = tmp_path / "plain.jsonl"
    plain.write_text('{"id": "a", "request": "x"}\n')
    assert main(["submit", str(plain)]) == 2
    assert "no provider or model" in capsys.readouterr().err


def test_status_prints_aligned_key_values(gateway, capsys):
    batch_id = "job_1"
    gateway.script("GET", "/batches/job_1", job("job_1", "in_progress", request_counts=counts()))
    assert main(["status", batch_id]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"id:         {batch_id}"
    assert out[1] == "status:     in_progress (gllm: in_progress)"
    assert "requests:   0/2 done" in out[4]


def test_status_json_is_the_job(gateway, capsys):
    batch_id = "job_1"
    gateway.script("GET", "/batches/job_1", job("job_1", request_counts=counts()))
    assert main(["status", batch_id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["id"], shown["request_counts"]["total"]) == (batch_id, 2)


def test_list_prints_a_table_newest_first(gateway, capsys):
    first, second = "job_1", "job_2"
    gateway.script("GET", "/batches", jobs([job(second), job(first)]))
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["ID", "STATUS", "PROVIDER", "MODEL", "DONE", "CREATED"]
    assert [line.split()[0] for line in lines[1:]] == [second, first]
    assert lines[1].index("queued") == lines[0].index("STATUS")


def test_list_json_and_status_filter(gateway, capsys):
    gateway.script("GET", "/batches", jobs([job("job_1", "canceling")]))
    assert main(["list", "--status", "canceling", "--json"]) == 0
    assert [listed["id"] for listed in json.loads(capsys.readouterr().out)] == ["job_1"]
    assert gateway.requests_to("GET", "/batches")[0].query == {"status": "canceling"}


def test_cancel_says_canceling_and_json_gives_the_job(gateway, capsys):
    first, second = "job_1", "job_2"
    gateway.script("POST", "/batches/job_1/cancel", job("job_1", "canceling"))
    gateway.script("POST", "/batches/job_2/cancel", job("job_2", "canceling"))
    assert main(["cancel", first]) == 0
    assert capsys.readouterr().out.startswith(f"{first} canceling")
    assert main(["--json", "cancel", second]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "canceling"


def test_results_writes_jsonl_for_an_ended_job(gateway, tmp_path):
    batch_id = "job_1"
    gateway.script(
        "GET",
        "/batches/job_1/results",
        results("job_1", [item("request_A")], next_token="t"),
        results("job_1", [item("request_B")]),
    )
    out = tmp_path / "again.jsonl"
    assert main(["results", batch_id, "-o", str(out)]) == 0
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["request_A", "request_B"]


def test_a_service_error_exits_1_with_type_and_message(gateway, capsys):
    gateway.script("GET", "/batches/job_missing", error(404, "not_found", "no batch job_missing"))
    assert main(["status", "job_missing"]) == 1
    assert capsys.readouterr().err == "error: not_found: no batch job_missing\n  request id: req-1\n"


def test_a_service_error_with_json_is_the_error_body_on_stderr(gateway, capsys):
    gateway.script("POST", "/batches/job_missing/cancel", error(404, "not_found", "no batch job_missing"))
    assert main(["--json", "cancel", "job_missing"]) == 1
    shown = json.loads(capsys.readouterr().err)["error"]
    assert (shown["type"], shown["status_code"], shown["request_id"]) == ("not_found", 404, "req-1")


def test_results_of_a_running_job_is_a_conflict_exit_1(gateway, capsys):
    gateway.script("GET", "/batches/job_1/results", error(409, "conflict", "batch job_1 is in_progress"))
    assert main(["results", "job_1"]) == 1
    assert capsys.readouterr().err.startswith("error: conflict: ")


def test_missing_endpoint_is_a_usage_error_exit_2(capsys):
    assert main(["status", "job_1"]) == 2
    assert "no endpoint: pass --endpoint URL or set BATCH_GATEWAY_ENDPOINT" in capsys.readouterr().err


def test_global_options_work_after_the_command_too(gateway, input_file, capsys, monkeypatch):
    monkeypatch.delenv("BATCH_GATEWAY_ENDPOINT")
    gateway.script("GET", "/batches/job_1", job("job_1"))
    assert main(["submit", str(input_file), "--endpoint", gateway.url, "--json"]) == 0
    batch_id = json.loads(capsys.readouterr().out)["id"]
    assert main(["--endpoint", gateway.url, "status", batch_id]) == 0
    assert capsys.readouterr().out.startswith(f"id:         {batch_id}")


def test_unknown_command_and_bad_flags_exit_2(capsys):
    assert main(["explode"]) == 2
    assert main(["list", "--status", "nonsense"]) == 2


def test_local_calls_the_local_stacks_serve(monkeypatch):
    calls = []
    module = types.ModuleType("batch_gateway_dev.local")
    module.serve = lambda host, port: calls.append((host, port))
    monkeypatch.setitem(sys.modules, "batch_gateway_dev.local", module)
    assert main(["local", "--port", "9999"]) == 0
    assert calls == [("127.0.0.1", 9999)]


def test_submit_wait_on_a_job_that_fails_exits_1_with_the_jobs_error(gateway, input_file, capsys):
    failure = {"type": "provider_auth_error", "message": "the Anthropic API key was rejected"}
    gateway.script("GET", "/batches/job_1", job("job_1", "in_progress"), job("job_1", "failed", error=failure))
    assert main(["submit", str(input_file), "--wait", "--poll-interval", "0.01"]) == 1
    err = capsys.readouterr().err
    assert "error: provider_auth_error: batch job_1 failed: the Anthropic API key was rejected" in err


def test_limits_set_sends_the_limits_given_none_lifting_one_and_limit_shows_the_callers_own(gateway, capsys):
    owner = "arn:aws:iam::123456789012:role/search"
    view = {
        "owner": owner,
        "limits": {"creates_per_minute": 60, "open_jobs": None},
        "override": {"open_jobs": None},
        "usage": {"creates_this_minute": 3, "open_jobs": 7},
        "updated_at": "2026-12-01T10:00:00Z",
    }
    gateway.script("POST", "/limits", view)
    gateway.script("GET", "/limit", view)
    assert main(["limits", "set", "--owner", owner, "--open-jobs", "none"]) == 0
    assert gateway.requests_to("POST", "/limits")[0].body == {"owner": owner, "open_jobs": None}
    out = capsys.readouterr().out
    assert "creates a minute 60 (3 this minute), open jobs no limit (7 open)" in out and "open_jobs" in out
    assert main(["limit", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == view
    assert main(["limits", "set", "--owner", owner]) == 2  # nothing to set: a usage error, nothing sent
    assert main(["limits", "set", "--owner", owner, "--open-jobs", "many"]) == 2
    assert len(gateway.requests_to("POST", "/limits")) == 1


def test_keys_create_admin_asks_for_an_admin_key_and_without_it_a_plain_one(gateway, capsys):
    """``--admin`` (decision 0134): the body says ``"admin": true``; without the flag the body has no admin field."""
    made = {"id": "key_6f1c2a9b3d4e5f60", "owner": "arn:aws:iam::123456789012:role/ops", "name": "", "admin": True}
    gateway.script("POST", "/keys", {**made, "key": "bgk_" + "a" * 43}, {**made, "admin": False, "key": "bgk_b"})
    assert main(["keys", "create", "--owner", made["owner"], "--admin"]) == 0
    assert main(["keys", "create", "--owner", made["owner"]]) == 0
    bodies = [r.body for r in gateway.requests_to("POST", "/keys")]
    assert bodies == [{"owner": made["owner"], "admin": True}, {"owner": made["owner"]}]
    assert capsys.readouterr().out.splitlines()[0] == "bgk_" + "a" * 43
