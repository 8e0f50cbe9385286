"""``batch-gateway``: the service's verbs on JSONL files.

    batch-gateway submit requests.jsonl --wait -o results.jsonl
    batch-gateway wait ID [-o FILE] | status ID | results ID [-o FILE] | list [--status S] | cancel ID
    batch-gateway webhooks create --url URL --events E,.. | webhooks list | webhooks delete ID
    batch-gateway keys create --owner ARN [--name N] [--admin] | keys list | keys revoke ID
    batch-gateway budgets set --owner ARN --monthly-usd N | budgets list | budgets remove --owner ARN | budget
    batch-gateway limits set --owner ARN [--creates-per-minute N|none] [--open-jobs N|none] | limits list
        | limits remove --owner ARN | limit
    batch-gateway local [--host H] [--port N]

Exit codes: 0 ok, 1 the service (or the input file) said no, or the job failed, 2 usage error, 3 the job waited for
ended canceled or expired (the results it has are written), 130 interrupted. ``--version``; each command's ``--help``
lists them with an example.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from importlib import metadata
from typing import IO, Any, NoReturn

from batch_gateway.client._constants import DEFAULT_STATUS_CHECK_INTERVAL, ENDPOINT_ENV
from batch_gateway.client.errors import BatchGatewayError, error_from_job
from batch_gateway.client.models import Job, JobStatus
from batch_gateway.client.sync_client import BatchGatewayClient
from batch_gateway.contract.jobs import PII_MODES
from batch_gateway.contract.jsonl import HEADER_KEY, ParsedFile, dumps_line, iter_jsonl_lines, parse_jsonl
from batch_gateway.provider_specs import ENDPOINTS, PROVIDERS

EXIT_OK, EXIT_SERVICE_ERROR, EXIT_USAGE, EXIT_INCOMPLETE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
JOB_STATUSES = [status.value for status in JobStatus]


_NOT_GIVEN: Any = object()  # a limit flag left out (``none`` is given: no limit)


class UsageError(Exception):
    """Wrong invocation: reported as ``error: ...`` with exit code 2."""


# --- output helpers --------------------------------------------------------------------------------------------------


def _out(text: str = "") -> None:
    print(text, file=sys.stdout)


def _err(text: str) -> None:
    print(text, file=sys.stderr)


def _json_out(value: Any) -> None:
    _out(json.dumps(value, indent=2, ensure_ascii=False))


def _webhook_option(args: argparse.Namespace) -> dict[str, Any] | None:
    """``--webhook-url`` [``--webhook-events``] as the create body's ``webhook`` (the service checks both)."""
    if not getattr(args, "webhook_url", None):
        if getattr(args, "webhook_events", None):
            raise UsageError("--webhook-events needs --webhook-url")
        return None
    webhook: dict[str, Any] = {"url": args.webhook_url}
    if args.webhook_events:
        webhook["events"] = [e.strip() for e in args.webhook_events.split(",") if e.strip()]
    return webhook


_LANE_KEYS = ("deadline", "lanes", "max_cost_usd", "plan")  # only on a job that has them (decision 0142)


def _job_json(job: Job) -> dict[str, Any]:
    """The job as the service answered it: a job without a deadline, lanes or a ceiling has none of their keys."""
    dumped = job.model_dump(mode="json")
    for key in _LANE_KEYS:
        if key not in job.model_fields_set:
            dumped.pop(key, None)
    return dumped


@contextmanager
def _output(path: str | None) -> Iterator[IO[str]]:
    """stdout, or a file that appears complete or not at all (written aside, then renamed)."""
    if path in (None, "-"):
        yield sys.stdout
        sys.stdout.flush()
        return
    partial = f"{path}.part"
    try:
        with open(partial, "w", encoding="utf-8") as stream:
            yield stream
        os.replace(partial, path)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


def _format_detail(detail: dict[str, Any]) -> str:
    message = detail.get("message", "")
    for key in ("line", "field", "id"):
        if key in detail:
            label = f"line {detail[key]}" if key == "line" else str(detail[key])
            return f"  {label}: {message}"
    return f"  {json.dumps(detail, ensure_ascii=False)}"


def _report_error(error: BatchGatewayError, as_json: bool) -> None:
    if as_json:
        body = {"error": {**error.to_body()["error"], "status_code": error.status_code, "request_id": error.request_id}}
        _err(json.dumps(body, ensure_ascii=False))
        return
    _err(f"error: {error.type}: {error.message}")
    for detail in error.details:
        _err(_format_detail(detail))
    if error.request_id:
        _err(f"  request id: {error.request_id}")


def _elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


class Progress:
    """Waiting feedback on stderr: one redrawn line on a terminal, a plain line per change otherwise (logs, CI).

    After the elapsed time: while the job waits for provider quota, why (the job view's ``waiting_for_quota``);
    otherwise, once requests have finished while we watched, an ETA from the rate seen so far (the job view has no
    prediction of its own: the provider's counts move in steps, so it is a rough guess, shown as ``~``)."""

    BAR_WIDTH = 24

    def __init__(self, stream: IO[str], *, tty: bool, clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self._tty = tty
        self._clock = clock
        self._start = clock()
        self._drawn = 0
        self._last: str | None = None
        self._first: tuple[float, int] | None = None  # (when, done) at the first status check

    def _eta(self, job: Job, now: float) -> str:
        done, total = job.request_counts.done, job.request_counts.total
        if self._first is None:
            self._first = (now, done)
        first_at, first_done = self._first
        if job.is_terminal or done <= first_done or now <= first_at or done >= total:
            return ""
        rate = (done - first_done) / (now - first_at)
        return f" | ETA ~{_elapsed((total - done) / rate)}"

    def update(self, job: Job) -> None:
        now = self._clock()
        counts = job.request_counts
        done, total = counts.done, counts.total
        filled = self.BAR_WIDTH * done // total if total else 0
        bar = "#" * filled + "-" * (self.BAR_WIDTH - filled)
        state = (
            f"{job.id} {job.status:<11} [{bar}] {done}/{total} done | succeeded {counts.succeeded}"
            f" errored {counts.errored} canceled {counts.canceled} expired {counts.expired}"
        )
        eta = self._eta(job, now)
        if job.waiting_for_quota and not job.is_terminal:
            state += f" | waiting for quota: {job.waiting_for_quota}"
            eta = ""
        line = f"{state} | {_elapsed(now - self._start)}{eta}"
        if self._tty:
            width = shutil.get_terminal_size((120, 20)).columns - 1  # a wrapped line cannot be redrawn
            line = line[:width]
            self._stream.write("\r" + line.ljust(self._drawn))
            self._drawn = len(line)
        elif state != self._last:
            self._stream.write(line + "\n")
        self._last = state
        self._stream.flush()

    def close(self) -> None:
        if self._tty and self._drawn:
            self._stream.write("\n")
            self._stream.flush()


class UploadProgress:
    """``client.upload``'s ``on_progress`` for people: a redrawn line on a terminal, one line at the end otherwise."""

    def __init__(self, stream: IO[str], name: str, *, tty: bool) -> None:
        self._stream = stream
        self._name = name
        self._tty = tty

    def __call__(self, sent: int, total: int) -> None:
        percent = 100 * sent // total if total else 100
        line = f"uploading {self._name}: {sent / 1e6:,.1f}/{total / 1e6:,.1f} MB ({percent}%)"
        if self._tty:
            self._stream.write("\r" + line + ("\n" if sent >= total else ""))
        elif sent >= total:
            self._stream.write(line + "\n")
        self._stream.flush()


# --- commands ----------------------------------------------------------------------------------------------------


def _json_arg(text: str, option: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{option} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError(f"{option} must be a JSON object")
    return value


def _read_input(path: str) -> ParsedFile:
    if path == "-":
        return parse_jsonl(iter_jsonl_lines(sys.stdin.buffer))
    try:
        with open(path, "rb") as stream:
            return parse_jsonl(iter_jsonl_lines(stream))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None


def _write_results(client: BatchGatewayClient, batch_id: str, path: str | None) -> dict[str, int]:
    tally: dict[str, int] = {}
    with _output(path) as stream:
        for item in client.iter_results(batch_id):
            stream.write(dumps_line(item.model_dump(mode="json")))
            tally[item.status] = tally.get(item.status, 0) + 1
    return tally


def _tally_text(tally: dict[str, int]) -> str:
    return ", ".join(f"{count} {status}" for status, count in sorted(tally.items())) or "no results"


INLINE_MAX_BYTES = 3_000_000  # the create body docs/api.md promises always fits; a larger file goes up as an upload


def _read_header(path: str) -> dict[str, Any]:
    """The header line of a file too large to read whole: the server checks every line of it (decision 0053)."""
    with open(path, "rb") as stream:
        for raw in stream:
            if raw.strip():
                try:
                    first = json.loads(raw)
                except ValueError:
                    return {}
                header = first.get(HEADER_KEY) if isinstance(first, dict) else None
                return header if isinstance(header, dict) else {}
    return {}


def _usd(value: Any) -> str:
    if value is None:
        return "unknown"
    return f"-${-value:,.4f}" if value < 0 else f"${value:,.4f}"


def _estimate_text(estimate: dict[str, Any]) -> str:
    """A dry run's answer for people: the plan, the tokens and the cost range."""
    plan, tokens, cost = estimate["plan"], estimate["input_tokens"], estimate["cost"]
    chunks = ", ".join(f"{c['requests']} requests / {c['bytes']:,} B" for c in plan["chunks"][:5])
    more = f", ... ({plan['chunk_count'] - 5} more)" if plan["chunk_count"] > 5 else ""
    lines = [
        f"dry run: {estimate['request_count']} requests to {estimate['provider']} {estimate['model']} in "
        f"{plan['chunk_count']} chunk{'s' if plan['chunk_count'] != 1 else ''} ({chunks}{more})",
        f"input tokens: ~{tokens['estimate']:,} ({tokens['method']}; at most {tokens['ceiling']:,})",
        f"output tokens: at most {estimate['output_tokens']['ceiling']:,} (every request reaching max_tokens)",
    ]
    if cost.get("high") is None:
        lines.append(f"cost: unknown ({cost.get('reason')})")
    else:
        lines.append(
            f"cost: {_usd(cost['low'])} to {_usd(cost['high'])} ({_usd(cost['sync_low'])} to "
            f"{_usd(cost['sync_high'])} through the synchronous API: saving {_usd(cost['saving_low'])} to "
            f"{_usd(cost['saving_high'])})"
        )
    cache = estimate.get("cache_saving")
    if cache and cache.get("cached_input_tokens"):
        lines.append(
            f"cache saving: {_usd(cache['low'])} to {_usd(cache['high'])} "
            f"(~{cache['cached_input_tokens']:,} cached input tokens; {cache['method']})"
        )
    primers = (cache or {}).get("primers")
    if primers and primers.get("groups"):
        lines.append(f"cache primers: {primers['groups']} (one synchronous call each, {_usd(primers['cost'])})")
    lines.append("nothing was stored or started")
    return "\n".join(lines)


def cmd_submit(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    if args.template is not None:
        return _submit_dataset(args, client)
    if args.system is not None or args.id_column is not None:
        raise UsageError("--system and --id-column are for dataset jobs: pass --template too")
    large = args.file != "-" and os.path.isfile(args.file) and os.path.getsize(args.file) > INLINE_MAX_BYTES
    parsed = ParsedFile(header=_read_header(args.file)) if large else _read_input(args.file)
    header = parsed.header or {}
    provider = args.provider or header.get("provider")
    model = args.model or header.get("model")
    if not provider or not model:
        missing = [name for name, value in (("provider", provider), ("model", model)) if not value]
        raise UsageError(f"no {' or '.join(missing)}: pass --{missing[0]} or put it in the file's header line")
    hyperparameters = {
        **header.get("hyperparameters", {}),
        **_json_arg(args.hyperparameters or "{}", "--hyperparameters"),
    }
    metadata = {**header.get("metadata", {}), **_json_arg(args.metadata or "{}", "--metadata")}
    if args.dry_run:
        if args.wait:
            raise UsageError("--dry-run starts nothing to wait for: drop --wait")
        estimate = client.estimate_job(
            None if large else parsed.requests,
            input_file=_upload(client, args.file) if large else None,
            provider=provider,
            model=model,
            hyperparameters=hyperparameters or None,
            metadata=metadata or None,
            endpoint=args.api_endpoint or header.get("endpoint"),
            provider_options=header.get("provider_options"),
        )
        return _print_estimate(args, estimate)
    job = client.create_job(
        None if large else parsed.requests,
        input_file=_upload(client, args.file) if large else None,
        provider=provider,
        model=model,
        hyperparameters=hyperparameters or None,
        metadata=metadata or None,
        endpoint=args.api_endpoint or header.get("endpoint"),
        provider_options=header.get("provider_options"),
        idempotency_key=args.idempotency_key,
        webhook=_webhook_option(args),
        prompt_cache=args.prompt_cache or header.get("prompt_cache"),
        guardrails={"pii": args.pii} if args.pii else header.get("guardrails"),
        reuse=_reuse_option(args.reuse) or header.get("reuse"),
        **_lane_options(args, header),
    )
    if job.webhook and job.webhook.get("secret"):  # answered this once: the caller needs it to verify deliveries
        sys.stderr.write(f"webhook secret (shown once): {job.webhook['secret']}\n")
    if not args.wait:
        if args.json:
            _json_out(_job_json(job))
        else:
            _out(
                f"submitted {job.id}: {job.request_counts.total} requests to {job.provider} {job.model} ({job.status})"
            )
        return EXIT_OK

    return _wait_then_write(args, client, job.id)


def _print_estimate(args: argparse.Namespace, estimate: dict[str, Any]) -> int:
    """A dry run's answer: as JSON with ``--json``, else the estimate's lines."""
    if args.json:
        _json_out(estimate)
    else:
        _out(_estimate_text(estimate))
    return EXIT_OK


def _lane_options(args: argparse.Namespace, header: dict[str, Any]) -> dict[str, Any]:
    """``--deadline`` (RFC 3339, or a whole number of seconds: ``deadline_seconds``), ``--lanes a,b`` and
    ``--max-cost-usd`` (decision 0142), each over the header's; the service checks the values."""
    options: dict[str, Any] = {
        "deadline": header.get("deadline"),
        "deadline_seconds": header.get("deadline_seconds"),
        "lanes": header.get("lanes"),
        "max_cost_usd": header.get("max_cost_usd"),
    }
    if args.deadline is not None:
        text = args.deadline.strip()
        seconds = text.isdigit()
        options["deadline"], options["deadline_seconds"] = (None, int(text)) if seconds else (text, None)
    if args.lanes is not None:
        options["lanes"] = [lane.strip() for lane in args.lanes.split(",") if lane.strip()]
    if args.max_cost_usd is not None:
        options["max_cost_usd"] = args.max_cost_usd
    return options


def _reuse_option(max_age: int | None) -> dict[str, Any] | None:
    """``--reuse N``: the job option of decision 0127 (the owner's stored results at most N seconds old)."""
    return None if max_age is None else {"scope": "owner", "max_age_seconds": max_age}


def _submit_dataset(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    """``submit rows.csv --template "Summarise: {text}"``: one request per row (decision 0136). A CSV up to
    ``INLINE_MAX_BYTES`` goes in the body, a larger one (and a JSONL file of records) as an upload."""
    if not args.provider or not args.model:
        raise UsageError("a dataset job needs --provider and --model (a table has no header line of settings)")
    if args.file == "-":
        raise UsageError("a dataset is read from a file, not stdin")
    fmt = "jsonl" if args.file.endswith((".jsonl", ".ndjson")) else "csv"
    dataset: dict[str, Any] = {"template": args.template}
    if args.system is not None:
        dataset["system"] = args.system
    if args.id_column is not None:
        dataset["id_column"] = args.id_column
    try:
        inline = fmt == "csv" and os.path.getsize(args.file) <= INLINE_MAX_BYTES
        if inline:
            with open(args.file, encoding="utf-8", newline="") as stream:
                dataset["csv"] = stream.read()
    except OSError as exc:
        raise UsageError(f"cannot read {args.file}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{args.file} is not UTF-8 text (byte {exc.start + 1}): save it as 'CSV UTF-8'") from None
    input_file = None
    if not inline:
        dataset["format"] = fmt
        input_file = _upload(client, args.file)
    options: dict[str, Any] = {
        "provider": args.provider,
        "model": args.model,
        "hyperparameters": _json_arg(args.hyperparameters or "{}", "--hyperparameters") or None,
        "metadata": _json_arg(args.metadata or "{}", "--metadata") or None,
        "endpoint": args.api_endpoint,
        "input_file": input_file,
        "dataset": dataset,
    }
    if args.dry_run:
        if args.wait:
            raise UsageError("--dry-run starts nothing to wait for: drop --wait")
        estimate = client.estimate_job(None, **options)
        return _print_estimate(args, estimate)
    job = client.create_job(
        None,
        **options,
        idempotency_key=args.idempotency_key,
        webhook=_webhook_option(args),
        prompt_cache=args.prompt_cache,
        guardrails={"pii": args.pii} if args.pii else None,
        reuse=_reuse_option(args.reuse),
        **_lane_options(args, {}),
    )
    if not args.wait:
        if args.json:
            _json_out(_job_json(job))
        else:
            _out(f"submitted {job.id}: {job.request_counts.total} rows to {job.provider} {job.model} ({job.status})")
        return EXIT_OK
    args.csv = True  # a table in, the same table out
    return _wait_then_write(args, client, job.id)


def _write_csv(client: BatchGatewayClient, batch_id: str, path: str | None) -> int:
    """A dataset job's table with its results (decision 0136), as the bytes the service wrote; how many rows."""
    data = client.results_csv(batch_id)
    if path in (None, "-"):
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        partial = f"{path}.part"
        try:
            with open(partial, "wb") as stream:
                stream.write(data)
            os.replace(partial, path)
        finally:
            if os.path.exists(partial):
                os.remove(partial)
    return max(len(list(csv.reader(io.StringIO(data.decode("utf-8-sig"), newline="")))) - 1, 0)


def _upload(client: BatchGatewayClient, path: str) -> str:
    return client.upload(path, on_progress=UploadProgress(sys.stderr, os.path.basename(path), tty=sys.stderr.isatty()))


def _wait_then_write(args: argparse.Namespace, client: BatchGatewayClient, batch_id: str) -> int:
    """Wait for the job to end (progress on stderr), then write its results: ``submit --wait`` and ``wait``.
    Exit code by how it ended: finished 0, failed 1 (its error), canceled or expired 3."""
    progress = Progress(sys.stderr, tty=sys.stderr.isatty())
    try:
        job = client.batch.wait(batch_id, status_check_interval=args.poll_interval, on_update=progress.update)
    except KeyboardInterrupt:
        progress.close()
        _err(f"stopped waiting; {batch_id} keeps running: batch-gateway wait {batch_id}")
        return EXIT_INTERRUPTED
    progress.close()
    if job.status == JobStatus.FAILED:
        raise error_from_job(job.error, batch_id=job.id)
    if getattr(args, "csv", False):
        rows = _write_csv(client, job.id, args.output)
        tally = {"rows": rows}
    else:
        tally = _write_results(client, job.id, args.output)
    where = f" -> {args.output}" if args.output not in (None, "-") else ""
    cost = _cost_text(job)
    _err(f"{job.id} {job.status}: {_tally_text(tally)}{where}" + (f"; cost {cost}" if cost else ""))
    if args.json and where:
        _json_out(_job_json(job))
    return EXIT_OK if job.status == JobStatus.FINISHED else EXIT_INCOMPLETE


def cmd_wait(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    return _wait_then_write(args, client, args.batch_id)


def _cost_text(job: Job) -> str:
    """The job's cost for people: total, what the synchronous API would have cost, and the saving."""
    cost = job.cost
    if cost is None:
        return f"${job.cost_usd:.4f}" if job.cost_usd is not None else ""
    if cost.get("total") is None:
        return f"unknown ({cost.get('reason') or 'no price for this model'})"
    final = "" if job.is_terminal else " so far"
    return (
        f"${cost['total']:.4f}{final} (synchronous ${cost.get('sync_total') or 0:.4f}, saving "
        f"${cost.get('saving') or 0:.4f}; prices {cost.get('price_version')})"
    )


def _status_lines(job: Job) -> Iterable[tuple[str, str]]:
    counts = job.request_counts
    yield "id", job.id
    yield "status", f"{job.status} (gllm: {job.batch_status.value})"
    yield "provider", job.provider
    yield "model", job.model
    yield (
        "requests",
        (
            f"{counts.done}/{counts.total} done (succeeded {counts.succeeded}, errored {counts.errored}, "
            f"canceled {counts.canceled}, expired {counts.expired}, processing {counts.processing})"
            + (f"; {counts.sent} sent" if counts.sent is not None and counts.sent != counts.total else "")
        ),
    )
    usage = job.usage
    yield (
        "usage",
        f"{usage.input_tokens} input tokens, {usage.output_tokens} output tokens"
        + (f" ({usage.reasoning_tokens} reasoning)" if usage.reasoning_tokens else "")
        + (
            f", cache: {usage.cache_creation_input_tokens} written, {usage.cache_read_input_tokens} read"
            if usage.cache_creation_input_tokens or usage.cache_read_input_tokens
            else ""
        ),
    )
    cost = _cost_text(job)
    if cost:
        yield "cost", cost
    if job.savings:
        yield "savings", ", ".join(f"{source} ${amount:.4f}" for source, amount in job.savings.items())
    chunks = ", ".join(f"{c.provider_batch_id or '-'} {c.status}" for c in job.chunks)
    yield "chunks", f"{len(job.chunks)}" + (f" ({chunks})" if chunks else "")
    if job.metadata:
        yield "metadata", ", ".join(f"{key}={value}" for key, value in job.metadata.items())
    for name in ("created_at", "updated_at", "ended_at"):
        value = getattr(job, name)
        yield name, value.isoformat() if value else "-"
    if job.error:
        yield "error", json.dumps(job.error, ensure_ascii=False) if isinstance(job.error, dict) else str(job.error)
    yield from _plan_lines(job)
    if job.events:  # oldest first (decision 0139): "queued, in_progress, 25%, 50%, replanned, 75%, finished"
        yield "events", ", ".join(_event_text(e.type, e.status, e.progress) for e in job.events)


def _event_text(kind: str, status: str, progress: int | None) -> str:
    return {"progress": f"{progress}%", "replanned": "replanned"}.get(kind, status)


def _usd_by(amounts: dict[str, float]) -> str:
    return ", ".join(f"{name} ${amount:.4f}" for name, amount in amounts.items()) or "-"


def _plan_lines(job: Job) -> Iterable[tuple[str, str]]:
    """A job with a deadline, lanes or a ceiling (decision 0142): them and its plan."""
    if job.plan is None:
        return
    plan = job.plan
    yield "deadline", job.deadline.isoformat() if job.deadline else "-"
    yield "lanes", ", ".join(job.lanes or [])
    if job.max_cost_usd is not None:
        yield "max cost", f"${job.max_cost_usd:.4f}"
    yield "predicted end", plan.predicted_end.isoformat() if plan.predicted_end else "- (nothing predicts one yet)"
    yield "items per lane", ", ".join(f"{lane} {n}" for lane, n in plan.items_per_lane.items()) or "-"
    yield "cost per lane", _usd_by(plan.cost_per_lane)
    yield "cost per provider", _usd_by(plan.cost_per_provider)
    twice = plan.billed_twice
    if twice.count:
        yield "billed twice", f"{twice.count} items, ${twice.cost_usd:.4f} ({', '.join(twice.ids)})"
    for move in plan.moves:
        at = move.at.isoformat() if move.at else "-"
        where = f"{move.provider} {move.model}"
        yield (
            "move",
            f"{at} chunk {move.chunk}: {move.items} items {move.from_lane} -> {move.to_lane} ({where}; {move.reason})",
        )
    if plan.held:
        yield "held", plan.held


def cmd_status(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    job = client.get_job(args.batch_id)
    if args.json:
        _json_out(_job_json(job))
        return EXIT_OK
    lines = list(_status_lines(job))
    width = max(len(key) for key, _ in lines) + 1
    for key, value in lines:
        _out(f"{key + ':':<{width}} {value}")
    return EXIT_OK


def cmd_results(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    if args.csv:
        rows = _write_csv(client, args.batch_id, args.output)
        if args.output not in (None, "-"):
            _err(f"{args.batch_id}: {rows} rows -> {args.output}")
        return EXIT_OK
    tally = _write_results(client, args.batch_id, args.output)
    if args.output not in (None, "-"):
        _err(f"{args.batch_id}: {_tally_text(tally)} -> {args.output}")
    return EXIT_OK


def _table(rows: list[list[str]]) -> Iterator[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        yield "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()


def cmd_list(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    jobs: list[Job] = []
    for job in client.iter_jobs(status=args.status):
        jobs.append(job)
        if args.limit and len(jobs) >= args.limit:
            break
    if args.json:
        _json_out([_job_json(job) for job in jobs])
        return EXIT_OK
    if not jobs:
        _err("no batches" + (f" with status {args.status}" if args.status else ""))
        return EXIT_OK
    rows = [["ID", "STATUS", "PROVIDER", "MODEL", "DONE", "CREATED"]]
    for job in jobs:
        counts = job.request_counts
        created = job.created_at.strftime("%Y-%m-%d %H:%M:%S") if job.created_at else "-"
        rows.append([job.id, job.status, job.provider, job.model, f"{counts.done}/{counts.total}", created])
    for line in _table(rows):
        _out(line)
    return EXIT_OK


def cmd_cancel(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    job = client.cancel_job(args.batch_id)
    if args.json:
        _json_out(_job_json(job))
    else:
        _out(f"{job.id} {job.status}: finished items stay retrievable (batch-gateway results {job.id})")
    return EXIT_OK


def cmd_keys_create(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    created = client.create_key(args.owner, args.name, admin=args.admin)
    if args.json:
        _json_out(created)
    else:
        _out(created["key"])
        _err(f"key {created['id']} for {created['owner']}: shown once, store it now (only its hash is kept)")
    return EXIT_OK


def cmd_keys_list(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    keys = client.list_keys()
    if args.json:
        _json_out(keys)
        return EXIT_OK
    if not keys:
        _err("no keys")
        return EXIT_OK
    rows = [["ID", "OWNER", "NAME", "CREATED", "REVOKED"]]
    rows += [[k["id"], k["owner"], k.get("name") or "-", k["created_at"], k.get("revoked_at") or "-"] for k in keys]
    for line in _table(rows):
        _out(line)
    return EXIT_OK


def cmd_keys_revoke(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    revoked = client.revoke_key(args.key_id)
    if args.json:
        _json_out(revoked)
    else:
        _out(f"{revoked['id']} revoked at {revoked['revoked_at']}: refused within 30 s")
    return EXIT_OK


def _budget_line(b: dict[str, Any]) -> str:
    return (
        f"{b['owner']}: ${b['monthly_usd']:,.2f} a month; {b['month']}: ${b['spent_usd']:,.6f} spent, "
        f"${b['reserved_usd']:,.6f} reserved, ${b['remaining_usd']:,.6f} left"
    )


def cmd_budgets_set(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    budget = client.set_budget(args.owner, args.monthly_usd)
    _json_out(budget) if args.json else _out(_budget_line(budget))
    return EXIT_OK


def cmd_budgets_list(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    budgets = client.list_budgets()
    if args.json:
        _json_out(budgets)
        return EXIT_OK
    if not budgets:
        _err("no budgets")
        return EXIT_OK
    rows = [["OWNER", "MONTHLY_USD", "MONTH", "SPENT", "RESERVED", "REMAINING"]]
    rows += [
        [
            b["owner"],
            f"{b['monthly_usd']:,.2f}",
            b["month"],
            f"{b['spent_usd']:,.6f}",
            f"{b['reserved_usd']:,.6f}",
            f"{b['remaining_usd']:,.6f}",
        ]
        for b in budgets
    ]
    for line in _table(rows):
        _out(line)
    return EXIT_OK


def cmd_budgets_remove(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    removed = client.remove_budget(args.owner)
    _json_out(removed) if args.json else _out(f"{removed['owner']}: no budget any more")
    return EXIT_OK


def _limit_arg(value: str) -> int | None:
    """``--creates-per-minute`` / ``--open-jobs``: a whole number, or ``none`` for no limit."""
    if value.strip().lower() == "none":
        return None
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number or 'none'") from None


def _positive_int(value: str) -> int:
    """``--reuse``: a whole number of seconds above 0 (the deployment's maximum is the server's to check)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of seconds") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not above 0")
    return number


def _shown(limit: int | None) -> str:
    return "no limit" if limit is None else str(limit)


def _limits_line(view: dict[str, Any]) -> str:
    limits, usage = view["limits"], view["usage"]
    set_here = ", ".join(view["override"]) or "none (the deployment's defaults)"
    return (
        f"{view['owner']}: creates a minute {_shown(limits['creates_per_minute'])} "
        f"({usage['creates_this_minute']} this minute), open jobs {_shown(limits['open_jobs'])} "
        f"({usage['open_jobs']} open); set for this owner: {set_here}"
    )


def cmd_limits_set(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    given = {"creates_per_minute": args.creates_per_minute, "open_jobs": args.open_jobs}
    limits = {name: value for name, value in given.items() if value is not _NOT_GIVEN}
    if not limits:
        raise UsageError("give --creates-per-minute or --open-jobs (a whole number, or none for no limit)")
    view = client.set_limits(args.owner, **limits)
    _json_out(view) if args.json else _out(_limits_line(view))
    return EXIT_OK


def cmd_limits_list(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    listing = client.list_limits()
    if args.json:
        _json_out(listing)
        return EXIT_OK
    defaults = listing["defaults"]
    _out(
        f"defaults per owner: creates a minute {_shown(defaults['creates_per_minute'])}, open jobs "
        f"{_shown(defaults['open_jobs'])}"
    )
    for view in listing["limits"]:
        _out(_limits_line(view))
    return EXIT_OK


def cmd_limits_remove(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    removed = client.remove_limits(args.owner)
    _json_out(removed) if args.json else _out(f"{removed['owner']}: the deployment's default limits again")
    return EXIT_OK


def cmd_limit(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    view = client.get_limits()
    _json_out(view) if args.json else _out(_limits_line(view))
    return EXIT_OK


def cmd_budget(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    budget = client.get_budget()
    if args.json:
        _json_out({"budget": budget})
    elif budget is None:
        _out("no monthly budget: your jobs are not limited")
    else:
        _out(_budget_line(budget))
    return EXIT_OK


def _events_arg(value: str) -> list[str]:
    return [event.strip() for event in value.split(",") if event.strip()]


def cmd_webhooks_create(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    hook = client.webhooks.create(args.url, events=args.events, description=args.description)
    if args.json:
        _json_out(hook.model_dump(mode="json", exclude_none=True))
    else:
        _out(hook.secret or "")
        _err(f"webhook {hook.id} -> {hook.url} ({', '.join(hook.events)}): its signing secret is shown once, store it")
    return EXIT_OK


def cmd_webhooks_list(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    hooks = client.webhooks.list()
    if args.json:
        _json_out([hook.model_dump(mode="json", exclude_none=True) for hook in hooks])
        return EXIT_OK
    if not hooks:
        _err("no webhooks")
        return EXIT_OK
    rows = [["ID", "URL", "EVENTS", "DESCRIPTION"]]
    rows += [[h.id, h.url, ",".join(h.events), h.description or "-"] for h in hooks]
    for line in _table(rows):
        _out(line)
    return EXIT_OK


def cmd_webhooks_delete(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    deleted = client.webhooks.delete(args.webhook_id)
    _json_out(deleted) if args.json else _out(f"{deleted['id']} deleted: deliveries still queued are dropped")
    return EXIT_OK


def cmd_webhooks_rotate(args: argparse.Namespace, client: BatchGatewayClient) -> int:
    hook = client.webhooks.rotate_secret(args.webhook_id)
    if args.json:
        _json_out(hook.model_dump(mode="json", exclude_none=True))
    else:
        _out(hook.secret or "")
        until = hook.previous_secret_expires_at.isoformat() if hook.previous_secret_expires_at else "-"
        _err(f"webhook {hook.id}: new signing secret shown once; the old one also signs until {until}")
    return EXIT_OK


def cmd_local(args: argparse.Namespace) -> int:
    try:
        # Development tooling, never in the SDK's wheel: installed with a clone of the repository (`make local`). Not
        # for cold start (0.6 ms): where the wheel alone is installed, the ImportError is the command's answer.
        from batch_gateway_dev.local import serve  # noqa: PLC0415 (absent from the wheel: see above)
    except ImportError as exc:
        _err(f"error: the local stack is not available ({exc}); it runs from a clone of the repository: make local")
        return EXIT_SERVICE_ERROR
    serve(host=args.host, port=args.port)
    return EXIT_OK


# --- parser --------------------------------------------------------------------------------------------------------


_EXIT_CODES = "0 ok; 1 the service said no (the error and its request id on stderr); 2 usage error; 130 interrupted"
_WAIT_EXIT_CODES = (
    "0 the job finished; 1 the service said no, or the job failed (its error on stderr); 2 usage error;\n"
    "  3 the job ended canceled or expired (the results it has are written); 130 interrupted (the job keeps running)"
)
_EXAMPLES: dict[str, str] = {
    "submit": "batch-gateway submit requests.jsonl --wait -o results.jsonl\n"
    "  batch-gateway submit requests.jsonl --provider openai --model gpt-4o-mini --dry-run\n"
    '  batch-gateway submit rows.csv --provider openai --model gpt-4o-mini --template "Summarise: {text}" '
    "--id-column id --wait -o results.csv",
    "wait": "batch-gateway wait job_0123456789abcdef01234567 -o results.jsonl   # after Ctrl-C stopped submit --wait",
    "status": "batch-gateway status job_0123456789abcdef01234567 --json",
    "results": "batch-gateway results job_0123456789abcdef01234567 -o results.jsonl\n"
    "  batch-gateway results job_0123456789abcdef01234567 --csv -o results.csv   # a dataset job's table",
    "list": "batch-gateway list --status in_progress --limit 20",
    "cancel": "batch-gateway cancel job_0123456789abcdef01234567",
    "keys": "batch-gateway keys create --owner arn:aws:iam::123456789012:role/search --name search",
    "keys create": "batch-gateway keys create --owner arn:aws:iam::123456789012:role/search --name search",
    "keys list": "batch-gateway keys list --json",
    "keys revoke": "batch-gateway keys revoke key_6f1c2a9b3d4e5f60",
    "budgets": "batch-gateway budgets set --owner arn:aws:iam::123456789012:role/search --monthly-usd 500",
    "budgets set": "batch-gateway budgets set --owner arn:aws:iam::123456789012:role/search --monthly-usd 500",
    "budgets list": "batch-gateway budgets list",
    "budgets remove": "batch-gateway budgets remove --owner arn:aws:iam::123456789012:role/search",
    "budget": "batch-gateway budget",
    "limits": "batch-gateway limits set --owner arn:aws:iam::123456789012:role/search --creates-per-minute 10",
    "limits set": "batch-gateway limits set --owner arn:aws:iam::123456789012:role/search --open-jobs none",
    "limits list": "batch-gateway limits list --json",
    "limits remove": "batch-gateway limits remove --owner arn:aws:iam::123456789012:role/search",
    "limit": "batch-gateway limit",
    "webhooks": "batch-gateway webhooks create --url https://hooks.example.com/batch --events batch.ended",
    "webhooks create": "batch-gateway webhooks create --url https://hooks.example.com/batch --events batch.ended",
    "webhooks list": "batch-gateway webhooks list",
    "webhooks delete": "batch-gateway webhooks delete whk_0123456789abcdef",
    "webhooks rotate-secret": "batch-gateway webhooks rotate-secret whk_0123456789abcdef",
    "local": "batch-gateway local --port 8080",
}


def _command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], name: str, common: argparse.ArgumentParser, **kw: Any
) -> argparse.ArgumentParser:
    """A command's parser, its ``--help`` ending with an example and the exit codes."""
    parser = commands.add_parser(name, parents=[common], formatter_class=argparse.RawDescriptionHelpFormatter, **kw)
    path = parser.prog.split(" ", 1)[1]
    codes = _WAIT_EXIT_CODES if path in ("submit", "wait") else _EXIT_CODES
    parser.epilog = f"example:\n  {_EXAMPLES[path]}\n\nexit codes:\n  {codes}"
    return parser


def _global_options() -> argparse.ArgumentParser:
    # SUPPRESS lets the options go before or after the command without one position resetting the other.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--endpoint", default=argparse.SUPPRESS, help=f"the API's URL, stage included (default: ${ENDPOINT_ENV})"
    )
    common.add_argument("--region", default=argparse.SUPPRESS, help="signing region (default: from the URL/profile)")
    common.add_argument("--profile", default=argparse.SUPPRESS, help="AWS profile for credentials")
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _global_options()
    parser = argparse.ArgumentParser(
        prog="batch-gateway",
        parents=[common],
        description="Run LLM requests through the providers' batch APIs via a Batch Gateway deployment.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"example:\n  {_EXAMPLES['submit']}\n\nexit codes:\n  {_WAIT_EXIT_CODES}\n\n"
        "batch-gateway COMMAND --help shows each command's own",
    )
    parser.add_argument("--version", action="version", version=f"batch-gateway {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    submit = _command(
        commands, "submit", common, help="submit a JSONL file of requests, or a CSV with a prompt --template"
    )
    submit.add_argument(
        "file", metavar="FILE", help="requests, one per line ('-' for stdin); with --template a CSV or records"
    )
    submit.add_argument("--provider", choices=list(PROVIDERS), help="overrides the header's provider")
    submit.add_argument("--model", help="overrides the header's model")
    submit.add_argument("--hyperparameters", metavar="JSON", help="merged over the header's hyperparameters")
    submit.add_argument("--metadata", metavar="JSON", help="merged over the header's metadata")
    submit.add_argument("--api-endpoint", choices=list(ENDPOINTS), help="OpenAI endpoint (header: endpoint)")
    submit.add_argument("--idempotency-key", help="resubmitting with the same key returns the first job")
    submit.add_argument(
        "--webhook-url", metavar="URL", help="the job's own webhook (https): signed deliveries of its status changes"
    )
    submit.add_argument(
        "--webhook-events",
        metavar="EVENTS",
        help="comma separated, e.g. batch.ended,batch.progress (default: batch.status_changed)",
    )
    submit.add_argument(
        "--prompt-cache",
        choices=["auto", "off"],
        help="cache-aware planning (header: prompt_cache; default: the deployment's, auto unless set off)",
    )
    submit.add_argument(
        "--reuse",
        type=_positive_int,
        metavar="MAX_AGE_SECONDS",
        help="answer requests identical to ones your jobs ran at most this many seconds ago from their stored "
        "results, at no cost (header: reuse; default: the deployment's, off unless set)",
    )
    submit.add_argument(
        "--deadline",
        metavar="WHEN",
        help="when the job must be done: RFC 3339 with an offset (2026-12-06T09:00:00Z) or a number of seconds from "
        "now; at most the provider's batch window plus a day (header: deadline / deadline_seconds)",
    )
    submit.add_argument(
        "--lanes",
        metavar="LANES",
        help="the ways the job may send its requests, comma separated in order of cost: batch,flex,sync,failover "
        "(default under a deadline: batch,flex,sync; header: lanes)",
    )
    submit.add_argument(
        "--max-cost-usd",
        type=float,
        metavar="USD",
        help="the most the job may cost: a move to a dearer lane that would cross it is held (header: max_cost_usd)",
    )
    submit.add_argument(
        "--pii",
        choices=list(PII_MODES),
        help="input guardrails (header: guardrails): flag, redact or reject personal data before anything is stored "
        "(default: the deployment's)",
    )
    submit.add_argument(
        "--template",
        metavar="TEXT",
        help="a dataset job (FILE is a CSV, or a JSONL file of records): one request per row, this prompt with the "
        "row's {column} values; {{ and }} are literal braces. With --wait the results are the same CSV",
    )
    submit.add_argument("--system", metavar="TEXT", help="with --template: the system prompt (may hold {column})")
    submit.add_argument("--id-column", metavar="NAME", help="with --template: the column of request ids (default: row)")
    submit.add_argument("--wait", action="store_true", help="wait for the job to end, then write its results")
    submit.add_argument(
        "--dry-run",
        action="store_true",
        help="check the file and show the chunk plan, tokens and cost range; store and start nothing",
    )
    submit.add_argument("-o", "--output", metavar="OUT.jsonl", help="results file with --wait (default: stdout)")
    submit.add_argument(
        "--poll-interval",
        type=float,
        default=DEFAULT_STATUS_CHECK_INTERVAL,
        metavar="S",
        help="seconds between status checks",
    )
    submit.set_defaults(handler=cmd_submit)

    wait = _command(
        commands, "wait", common, help="wait for a job to end (again, after Ctrl-C), then write its results as JSONL"
    )
    wait.add_argument("batch_id", metavar="ID")
    wait.add_argument("-o", "--output", metavar="OUT.jsonl", help="results file (default: stdout)")
    wait.add_argument("--csv", action="store_true", help="a dataset job's results as its table (decision 0136)")
    wait.add_argument(
        "--poll-interval",
        type=float,
        default=DEFAULT_STATUS_CHECK_INTERVAL,
        metavar="S",
        help="seconds between status checks",
    )
    wait.set_defaults(handler=cmd_wait)

    status = _command(commands, "status", common, help="show a job")
    status.add_argument("batch_id", metavar="ID")
    status.set_defaults(handler=cmd_status)

    results = _command(commands, "results", common, help="write an ended job's results as JSONL")
    results.add_argument("batch_id", metavar="ID")
    results.add_argument("-o", "--output", metavar="FILE", help="default: stdout")
    results.add_argument(
        "--csv", action="store_true", help="a dataset job's results as its table with result columns (decision 0136)"
    )
    results.set_defaults(handler=cmd_results)

    listing = _command(commands, "list", common, help="list your jobs, newest first")
    listing.add_argument("--status", choices=JOB_STATUSES)
    listing.add_argument("--limit", type=int, metavar="N", help="show at most N jobs")
    listing.set_defaults(handler=cmd_list)

    cancel = _command(commands, "cancel", common, help="cancel a job (finished items are kept)")
    cancel.add_argument("batch_id", metavar="ID")
    cancel.set_defaults(handler=cmd_cancel)

    keys = _command(commands, "keys", common, help="gateway API keys for the OpenAI/Anthropic SDKs (admin)")
    key_commands = keys.add_subparsers(dest="keys_command", required=True, metavar="KEYS_COMMAND")
    key_create = _command(key_commands, "create", common, help="a new key for an IAM principal")
    key_create.add_argument("--owner", required=True, metavar="ARN", help="IAM user or role ARN the key acts as")
    key_create.add_argument("--name", help="a label shown by keys list")
    key_create.add_argument(
        "--admin", action="store_true", help="the key may call /keys, /budgets, /limits through the key mount (/k)"
    )
    key_create.set_defaults(handler=cmd_keys_create)
    key_list = _command(key_commands, "list", common, help="every key (never the key itself)")
    key_list.set_defaults(handler=cmd_keys_list)
    key_revoke = _command(key_commands, "revoke", common, help="revoke a key (refused within 30 s)")
    key_revoke.add_argument("key_id", metavar="ID")
    key_revoke.set_defaults(handler=cmd_keys_revoke)

    budgets = _command(commands, "budgets", common, help="monthly budgets per owner in USD (admin)")
    budget_commands = budgets.add_subparsers(dest="budgets_command", required=True, metavar="BUDGETS_COMMAND")
    budget_set = _command(budget_commands, "set", common, help="set or replace an owner's budget")
    budget_set.add_argument("--owner", required=True, metavar="ARN", help="IAM user or role ARN the budget limits")
    budget_set.add_argument("--monthly-usd", required=True, type=float, metavar="N", help="US dollars a month")
    budget_set.set_defaults(handler=cmd_budgets_set)
    budget_list = _command(budget_commands, "list", common, help="every budget with this month's amounts")
    budget_list.set_defaults(handler=cmd_budgets_list)
    budget_remove = _command(budget_commands, "remove", common, help="remove an owner's budget")
    budget_remove.add_argument("--owner", required=True, metavar="ARN")
    budget_remove.set_defaults(handler=cmd_budgets_remove)
    own_budget = _command(commands, "budget", common, help="your own monthly budget and what is left")
    own_budget.set_defaults(handler=cmd_budget)

    limits = _command(commands, "limits", common, help="per-owner limits on creates (admin)")
    limit_commands = limits.add_subparsers(dest="limits_command", required=True, metavar="LIMITS_COMMAND")
    limit_set = _command(
        limit_commands, "set", common, help="set or replace an owner's limits (one not given: the deployment's default)"
    )
    limit_set.add_argument("--owner", required=True, metavar="ARN", help="IAM user or role ARN the limits apply to")
    for flag, what in (("--creates-per-minute", "jobs created in a UTC minute"), ("--open-jobs", "jobs open at once")):
        limit_set.add_argument(
            flag, type=_limit_arg, default=_NOT_GIVEN, metavar="N|none", help=f"{what}, 1-1000, or none: no limit"
        )
    limit_set.set_defaults(handler=cmd_limits_set)
    limit_list = _command(limit_commands, "list", common, help="the defaults and every owner's override")
    limit_list.set_defaults(handler=cmd_limits_list)
    limit_remove = _command(limit_commands, "remove", common, help="back to the deployment's defaults")
    limit_remove.add_argument("--owner", required=True, metavar="ARN")
    limit_remove.set_defaults(handler=cmd_limits_remove)
    own_limits = _command(commands, "limit", common, help="your own limits on creates and your usage")
    own_limits.set_defaults(handler=cmd_limit)

    webhooks = _command(
        commands, "webhooks", common, help="webhook subscriptions: signed deliveries of every job's events"
    )
    hook_commands = webhooks.add_subparsers(dest="webhooks_command", required=True, metavar="WEBHOOKS_COMMAND")
    hook_create = _command(hook_commands, "create", common, help="subscribe a URL (prints its signing secret once)")
    hook_create.add_argument("--url", required=True, help="https URL the deliveries are POSTed to")
    hook_create.add_argument(
        "--events",
        type=_events_arg,
        required=True,
        metavar="EVENTS",
        help="comma separated, e.g. batch.ended,batch.progress (the names: docs/api.md#webhooks)",
    )
    hook_create.add_argument("--description", help="a label shown by webhooks list")
    hook_create.set_defaults(handler=cmd_webhooks_create)
    hook_list = _command(hook_commands, "list", common, help="your subscriptions (never a secret)")
    hook_list.set_defaults(handler=cmd_webhooks_list)
    hook_delete = _command(hook_commands, "delete", common, help="delete a subscription")
    hook_delete.add_argument("webhook_id", metavar="ID")
    hook_delete.set_defaults(handler=cmd_webhooks_delete)
    hook_rotate = _command(
        hook_commands, "rotate-secret", common, help="a new signing secret (the old one also signs for 24 hours)"
    )
    hook_rotate.add_argument("webhook_id", metavar="ID")
    hook_rotate.set_defaults(handler=cmd_webhooks_rotate)

    local = _command(commands, "local", common, help="run the whole service on this machine")
    local.add_argument("--host", default="127.0.0.1")
    local.add_argument("--port", type=int, default=0, help="0 picks a free port (the stack prints its api_url)")
    local.set_defaults(handler=None)
    return parser


def _version() -> str:
    try:
        return metadata.version("batch-gateway")
    except metadata.PackageNotFoundError:  # a source tree that is not installed
        return "unknown"


def _usage_exit(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    parser.print_usage(sys.stderr)
    _err(f"error: {message}")
    raise SystemExit(EXIT_USAGE)


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    args.json = getattr(args, "json", False)
    if args.command == "local":
        return cmd_local(args)
    endpoint = getattr(args, "endpoint", None) or os.environ.get(ENDPOINT_ENV)
    if not endpoint:
        _usage_exit(parser, f"no endpoint: pass --endpoint URL or set {ENDPOINT_ENV}")
    try:
        client = BatchGatewayClient(endpoint, getattr(args, "region", None), profile=getattr(args, "profile", None))
    except ValueError as exc:
        _usage_exit(parser, str(exc))
    with client:
        try:
            handler: Callable[[argparse.Namespace, BatchGatewayClient], int] = args.handler
            return handler(args, client)
        except UsageError as exc:
            _usage_exit(parser, str(exc))
        except BatchGatewayError as exc:
            _report_error(exc, args.json)
            return EXIT_SERVICE_ERROR


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return _run(parser, args)
    except SystemExit as exc:  # argparse's and ours: return the code instead of exiting (tests, embedding)
        return exc.code if isinstance(exc.code, int) else (EXIT_OK if exc.code is None else EXIT_USAGE)
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
