"""``batch-gateway``'s polish (decision 0131): ``--version``, ``wait ID``, exit codes and examples in every ``--help``,
the progress line's ETA and quota reason, upload progress and ``webhooks`` subcommands."""

from __future__ import annotations

import argparse
import io
import json
import shlex
from importlib import metadata

import pytest

from batch_gateway import cli
from batch_gateway.cli import Progress, UploadProgress, build_parser, main
from batch_gateway.client.models import Job
from batch_gateway.client.transport import SignedTransport
from tests.support.fake_s3 import FakeS3, multipart_upload
from tests.support.replay_gateway import FAKE_AWS_ENV, ReplayGateway, answer, item, job, results

HOOK = {
    "id": "whk_0123456789abcdef",
    "url": "https://hooks.example.com/batch",
    "events": ["batch.ended"],
    "description": None,
    "created_at": "2026-12-01T10:00:00.000Z",
    "secret_rotated_at": None,
}


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def gateway(monkeypatch):
    with ReplayGateway() as server:
        monkeypatch.setenv("BATCH_GATEWAY_ENDPOINT", server.url)
        yield server


def counts(total: int = 2, **done: int) -> dict[str, int]:
    return {"total": total, "processing": total - sum(done.values()), **done}


def test_version_prints_the_installed_packages_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"batch-gateway {metadata.version('batch-gateway')}"


def _every_command(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield sub
                yield from _every_command(sub)


def test_every_commands_help_ends_with_an_example_that_parses_and_the_exit_codes():
    parser = build_parser()
    commands = list(_every_command(parser))
    assert len(commands) >= 25
    for command in commands:
        text = command.format_help()
        assert "\nexit codes:\n  0 " in text, command.prog
        assert "2 usage error" in text and "130 interrupted" in text, command.prog
        example = text.split("example:\n", 1)[1].split("\n\n", 1)[0]
        for line in example.splitlines():
            argv = shlex.split(line, comments=True)
            assert argv[0] == "batch-gateway", command.prog
            parsed = parser.parse_args(argv[1:])  # a wrong example exits 2 here
            assert parsed.command == command.prog.split()[1], line
    waits = [c for c in commands if c.prog.split()[1:] in (["submit"], ["wait"])]
    assert len(waits) == 2 and all("3 the job ended canceled or expired" in c.format_help() for c in waits)


def test_wait_resumes_with_progress_writes_the_results_and_exits_0_when_finished(gateway, tmp_path, capsys):
    gateway.script(
        "GET",
        "/batches/job_1",
        job("job_1", "in_progress", request_counts=counts(succeeded=1)),
        job("job_1", "finished", request_counts=counts(succeeded=2)),
    )
    gateway.script("GET", "/batches/job_1/results", results("job_1", [item("a"), item("b")]))
    out = tmp_path / "out.jsonl"

    assert main(["wait", "job_1", "--poll-interval", "0", "-o", str(out)]) == 0

    assert len(out.read_text().splitlines()) == 2
    err = capsys.readouterr().err
    assert "job_1 in_progress " in err and "1/2 done" in err
    assert f"job_1 finished: 2 succeeded -> {out}" in err
    assert not gateway.requests_to("POST", "/batches")  # nothing created: it only waits


@pytest.mark.parametrize("ended", ["canceled", "expired"])
def test_wait_exits_3_for_a_job_that_ended_canceled_or_expired_and_still_writes_what_it_has(gateway, capsys, ended):
    gateway.script("GET", "/batches/job_1", job("job_1", ended, request_counts=counts(succeeded=1, **{ended: 1})))
    items = [item("a"), item("b", status=ended)]
    gateway.script("GET", "/batches/job_1/results", results("job_1", items, status=ended))
    assert main(["wait", "job_1"]) == 3
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 2
    assert f"job_1 {ended}: " in captured.err


def test_wait_exits_1_with_the_error_of_a_job_that_failed(gateway, capsys):
    failure = {"type": "provider_auth_error", "message": "the key was rejected"}
    gateway.script("GET", "/batches/job_1", job("job_1", "failed", error=failure))
    assert main(["wait", "job_1"]) == 1
    assert "error: provider_auth_error: batch job_1 failed: the key was rejected" in capsys.readouterr().err


def test_ctrl_c_while_waiting_exits_130_and_names_the_wait_command_to_resume(gateway, capsys, monkeypatch):
    gateway.script("GET", "/batches/job_1", job("job_1", "in_progress"))

    def interrupted(self, job):
        raise KeyboardInterrupt

    monkeypatch.setattr(Progress, "update", interrupted)
    assert main(["wait", "job_1"]) == 130
    assert "job_1 keeps running: batch-gateway wait job_1" in capsys.readouterr().err


def test_wait_on_an_unknown_job_exits_1_with_the_request_id(gateway, capsys):
    gateway.script("GET", "/batches/job_x", answer(404, {"error": {"type": "not_found", "message": "no job_x"}}))
    assert main(["wait", "job_x"]) == 1
    assert capsys.readouterr().err == "error: not_found: no job_x\n  request id: req-1\n"


def _job(**fields) -> Job:
    return Job(id="b1", provider="anthropic", model="m", **fields)


def test_the_progress_line_shows_an_eta_from_the_rate_seen_and_none_once_the_job_ends():
    stream, ticks = io.StringIO(), iter([0.0, 0.0, 10.0, 30.0, 40.0])
    progress = Progress(stream, tty=False, clock=lambda: next(ticks))
    progress.update(_job(status="in_progress", request_counts={"total": 10}))
    progress.update(_job(status="in_progress", request_counts={"total": 10, "succeeded": 2}))  # 0.2 a second
    progress.update(_job(status="in_progress", request_counts={"total": 10, "succeeded": 6}))  # 6 in 30 s
    progress.update(_job(status="finished", request_counts={"total": 10, "succeeded": 10}))
    lines = stream.getvalue().splitlines()
    assert "ETA" not in lines[0]  # nothing finished yet: no rate
    assert lines[1].endswith("| 00:10 | ETA ~00:40")  # 8 left at 0.2 a second
    assert lines[2].endswith("| 00:30 | ETA ~00:20")  # 4 left at 0.2 a second
    assert lines[3].endswith("| 00:40")


def test_a_job_waiting_for_quota_shows_why_instead_of_an_eta_and_a_new_line_when_the_reason_appears():
    stream, ticks = io.StringIO(), iter([0.0, 0.0, 5.0, 10.0])
    progress = Progress(stream, tty=False, clock=lambda: next(ticks))
    reason = "the provider's quota for claude-test is in use by 2 batches"
    progress.update(_job(status="queued", request_counts={"total": 4}))
    progress.update(_job(status="queued", request_counts={"total": 4}, waiting_for_quota=reason))
    progress.update(_job(status="queued", request_counts={"total": 4}, waiting_for_quota=reason))  # no change
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert "waiting for quota" not in lines[0]
    assert f"| waiting for quota: {reason} | 00:05" in lines[1] and "ETA" not in lines[1]


def test_upload_progress_redraws_on_a_terminal_and_writes_one_line_otherwise():
    tty, plain = io.StringIO(), io.StringIO()
    for stream, is_tty in ((tty, True), (plain, False)):
        show = UploadProgress(stream, "big.jsonl", tty=is_tty)
        show(5_000_000, 12_000_000)
        show(12_000_000, 12_000_000)
    assert tty.getvalue() == ("\ruploading big.jsonl: 5.0/12.0 MB (41%)\ruploading big.jsonl: 12.0/12.0 MB (100%)\n")
    assert plain.getvalue() == "uploading big.jsonl: 12.0/12.0 MB (100%)\n"


def test_webhooks_create_prints_the_secret_once_on_stdout_and_list_and_delete_show_them(gateway, capsys):
    secret = "whsec_" + "A" * 32
    gateway.script("POST", "/webhooks", answer(201, {**HOOK, "secret": secret}))
    gateway.script("GET", "/webhooks", {"webhooks": [HOOK]})
    gateway.script("DELETE", f"/webhooks/{HOOK['id']}", {"id": HOOK["id"], "deleted": True})

    assert main(["webhooks", "create", "--url", HOOK["url"], "--events", "batch.ended, batch.progress"]) == 0
    created = capsys.readouterr()
    assert created.out == secret + "\n"
    assert secret not in created.err and HOOK["id"] in created.err
    assert gateway.requests_to("POST", "/webhooks")[0].body == {
        "url": HOOK["url"],
        "events": ["batch.ended", "batch.progress"],
    }

    assert main(["webhooks", "list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].split() == ["ID", "URL", "EVENTS", "DESCRIPTION"]
    assert listed[1].split() == [HOOK["id"], HOOK["url"], "batch.ended", "-"]

    assert main(["--json", "webhooks", "delete", HOOK["id"]]) == 0
    assert '"deleted": true' in capsys.readouterr().out


@pytest.mark.parametrize("missing", ["--url", "--events"])
def test_webhooks_create_without_a_url_or_events_is_a_usage_error(gateway, capsys, missing):
    given = {"--url": HOOK["url"], "--events": "batch.ended"}
    argv = [arg for flag, value in given.items() if flag != missing for arg in (flag, value)]
    assert main(["webhooks", "create", *argv]) == 2
    assert missing in capsys.readouterr().err
    assert not gateway.received


def test_submit_of_a_large_file_shows_upload_progress_and_survives_a_part_s3_fails_once(
    gateway, tmp_path, capsys, monkeypatch
):
    lines = [json.dumps({"batch_gateway": {"provider": "anthropic", "model": "claude-test"}})]
    lines += [json.dumps({"id": f"r{i}", "request": f"question {i}"}) for i in range(20)]
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(lines) + "\n")
    size = path.stat().st_size
    monkeypatch.setattr(cli, "INLINE_MAX_BYTES", 100)  # this file is "large": it goes up as an upload
    monkeypatch.setattr(SignedTransport, "pause_before_retry", lambda self, attempt, retry_after=None: None)
    s3 = FakeS3()
    s3.server.start(name="fake-s3", poll_interval=0.02)
    try:
        part = size // 2 + 1
        s3.faults = {"/part2": [500]}
        gateway.script("POST", "/uploads", answer(201, multipart_upload(s3, part, 2)))
        gateway.script("POST", "/batches", job("job_1", total=20))

        assert main(["submit", str(path)]) == 0
    finally:
        s3.server.stop()

    assert s3.parts["/part1"] + s3.parts["/part2"] == path.read_bytes()
    assert s3.hits["/part2"] == 2
    assert gateway.requests_to("POST", "/batches")[0].body["input_file"] == "upl_1"
    err = capsys.readouterr().err
    assert f"uploading big.jsonl: {size / 1e6:,.1f}/{size / 1e6:,.1f} MB (100%)" in err
