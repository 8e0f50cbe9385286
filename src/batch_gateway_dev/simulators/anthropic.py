"""Anthropic Message Batches API (`/v1/messages/batches`) and Messages (`POST /v1/messages`, non-streaming), as the
official `anthropic` SDK sees them.

Shapes follow the SDK types `MessageBatch`, `DeletedMessageBatch`, `MessageBatchIndividualResponse` and `Message`. A
batch keeps one small tuple per request (custom_id, model, prompt excerpt, input, cache write and read tokens);
results are generated from those tuples while they are streamed. Prompt caching is Anthropic's (`cache_prefixes`,
`prompt_cache`, decision 0123): one cache per API key, shared by batches and Messages calls; a batch's items run in
waves and read only what was complete when their wave began.
"""

from __future__ import annotations

import re
import secrets
import string
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from batch_gateway.provider_specs import ANTHROPIC
from batch_gateway_dev.simulators import cache_prefixes, content, settings
from batch_gateway_dev.simulators.errors import ApiError
from batch_gateway_dev.simulators.faults import Fault
from batch_gateway_dev.simulators.prompt_cache import Mark, PromptCache, written
from batch_gateway_dev.simulators.schedule import (
    CANCELED,
    ERROR_KINDS,
    ERRORED,
    EXPIRED,
    OVERLOADED,
    RATE_LIMITED,
    SERVER_ERROR,
    SUCCEEDED,
    Plan,
    markers,
)
from batch_gateway_dev.simulators.wire import (
    BadBody,
    Reply,
    Request,
    Route,
    dumps,
    json_reply,
    json_template,
    parse_json,
    quote,
)

PROVIDER = ANTHROPIC.name
REAL_LIMITS = {"max_requests": 100_000, "max_bytes": 256 * settings.MB}  # per batch (the `max_*` settings lower them)
# An HTTP fault's status -> the error type Anthropic answers it with (docs.claude.com/en/api/errors).
_FAULT_TYPES = {
    400: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    529: "overloaded_error",
}
_CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}").fullmatch
_ID_ALPHABET = string.ascii_letters + string.digits
_DAY = 24 * 3600
_LINES_PER_CHUNK = 1000

# custom_id, model, prompt excerpt, input tokens (not cached), cache writes (5-minute, 1-hour), cache reads
Item = tuple[str, str, str, int, int, int, int]
Parsed = tuple[str, str, str, dict[str, Any]]  # custom_id, model, prompt excerpt, params


def rfc3339(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


# Output caps (decision 0129): every current model's max_tokens is at most STANDARD_MAX_OUTPUT; the large-output
# beta raises it to LARGE_MAX_OUTPUT, on the Message Batches API only (a synchronous call naming it is refused).
STANDARD_MAX_OUTPUT = 128_000
LARGE_OUTPUT_BETA = "output-300k-2026-03-24"
LARGE_MAX_OUTPUT = 300_000
BATCH_ONLY_BETAS = frozenset({LARGE_OUTPUT_BETA})
WORKSPACE_HEADER = "anthropic-workspace-id"


def asked_headers(req: Request) -> dict[str, str]:
    """The `anthropic-*` request headers but the version (the SDK's own): what a caller asked the API for, as the
    simulator records it per batch (`/_simulator/batches`), names lower case, a repeated header joined by commas."""
    asked: dict[str, str] = {}
    for name, value in req.headers.items():
        name = name.lower()
        if name.startswith("anthropic-") and name != "anthropic-version":
            asked[name] = f"{asked[name]},{value}" if name in asked else value
    return asked


def betas_of(req: Request) -> set[str]:
    """The betas a call names: `anthropic-beta` is a comma-separated list, or the header repeated."""
    value = asked_headers(req).get("anthropic-beta", "")
    return {beta.strip() for beta in value.split(",") if beta.strip()}


def output_cap(betas: set[str], *, batch: bool) -> int:
    return LARGE_MAX_OUTPUT if batch and LARGE_OUTPUT_BETA in betas else STANDARD_MAX_OUTPUT


def _invalid(message: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message)


def _not_found(batch_id: str) -> ApiError:
    return ApiError(404, "not_found_error", f"Message Batch {batch_id!r} not found.")


class _Batch:
    __slots__ = ("id", "plan", "items", "problems", "cancel_at", "cancel_seconds", "_final", "headers")

    def __init__(
        self,
        batch_id: str,
        plan: Plan,
        items: list[Item],
        problems: dict[int, str],
        headers: dict[str, str] | None = None,
    ) -> None:
        self.id = batch_id
        self.headers = headers or {}  # the anthropic-* headers it was created with (decision 0129)
        self.plan = plan
        self.items = items
        self.problems = problems  # item index -> why Anthropic refuses it (its cache markers): an errored result
        self.cancel_at: float | None = None
        self.cancel_seconds = 0.0
        self._final: dict[str, int] | None = None

    def timeline(self, now: float) -> tuple[str, float, int, str]:
        """(processing_status, end time, finished-item cutoff, outcome of the unfinished) at `now`."""
        now = self.plan.at(now)  # a lasting stall holds the batch's own time (lasting.py)
        if self.cancel_at is not None:
            end = self.cancel_at + self.cancel_seconds
            cutoff, leftover = self.plan.done_by(self.cancel_at), CANCELED
        else:
            end, cutoff, leftover = self.plan.end, self.plan.cap, EXPIRED
        if now >= end:
            return "ended", end, cutoff, leftover
        return ("canceling" if self.cancel_at is not None else "in_progress"), end, cutoff, leftover

    def view(self, now: float, base_url: str) -> dict[str, Any]:
        status, end, cutoff, leftover = self.timeline(now)
        if status == "ended":
            if self._final is None:
                self._final = self.plan.counts(cutoff, leftover)
            counts = {"processing": 0, **self._final}
        else:
            counts = {"processing": self.plan.n, SUCCEEDED: 0, ERRORED: 0, CANCELED: 0, EXPIRED: 0}
        created = self.plan.created
        return {
            "id": self.id,
            "type": "message_batch",
            "processing_status": status,
            "request_counts": counts,
            "ended_at": rfc3339(end) if status == "ended" else None,
            "created_at": rfc3339(created),
            "expires_at": rfc3339(created + _DAY),
            "archived_at": None,
            "cancel_initiated_at": rfc3339(self.cancel_at),
            "results_url": f"{base_url}/v1/messages/batches/{self.id}/results" if status == "ended" else None,
        }


def params_problem(params: dict[str, Any], max_output: int = STANDARD_MAX_OUTPUT) -> str | None:
    """What is wrong with one request's Messages params ("field: message"), or None when they are valid.
    ``max_output``: the largest max_tokens the call's betas allow."""
    model = params.get("model")
    if not isinstance(model, str) or not model:
        return "model: Field required"
    max_tokens = params.get("max_tokens")
    if max_tokens is None:
        return "max_tokens: Field required"
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        return f"max_tokens: must be an integer >= 1, got {max_tokens!r}"
    if max_tokens > max_output:
        return (
            f"max_tokens: {max_tokens} > {max_output}, which is the maximum allowed number of output tokens for "
            f"{model}"
            + ("" if max_output > STANDARD_MAX_OUTPUT else f" (more needs the {LARGE_OUTPUT_BETA} beta, in a batch)")
        )
    messages = params.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: must be a non-empty list of messages"
    for j, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            return f"messages.{j}.role: Input should be 'user' or 'assistant'; `system` is a top-level parameter"
        if not isinstance(message.get("content"), str | list):
            return f"messages.{j}.content: Field required"
    return None


def scope_of(req: Request) -> str:
    """Whose prompt cache a call uses: its API key's (a hash of it)."""
    bearer = req.header("authorization") or ""
    key = req.header("x-api-key") or bearer.removeprefix("Bearer ").removeprefix("bearer ")
    return content.short_hash("anthropic-key", key.strip())


def parse_requests(body: Any, max_requests: int, max_output: int = STANDARD_MAX_OUTPUT) -> list[Parsed]:
    """Validate a create body and reduce each request to what its result needs (custom_id, model, prompt excerpt)
    and its params (for the prompt cache); errors name the index and custom_id."""
    if not isinstance(body, dict):
        raise _invalid("The request body must be a JSON object.")
    requests = body.get("requests")
    if requests is None:
        raise _invalid("requests: Field required")
    if not isinstance(requests, list):
        raise _invalid("requests: Input should be a valid list")
    if not requests:
        raise _invalid("requests: List should have at least 1 item")
    if len(requests) > max_requests:
        raise _invalid(f"requests: a Message Batch may contain at most {max_requests} requests, got {len(requests)}")
    seen: dict[str, int] = {}
    models: dict[str, str] = {}
    parsed: list[Parsed] = []
    for index, entry in enumerate(requests):
        where = f"requests.{index}"
        if not isinstance(entry, dict):
            raise _invalid(f"{where}: Input should be an object with custom_id and params")
        cid = entry.get("custom_id")
        if not isinstance(cid, str) or not _CUSTOM_ID(cid):
            raise _invalid(f"{where}.custom_id: {cid!r} is invalid; it must match ^[a-zA-Z0-9_-]{{1,64}}$")
        if cid in seen:
            raise _invalid(
                f"{where}.custom_id: duplicate custom_id {cid!r} (also used by requests.{seen[cid]}); "
                "custom_id must be unique within a Message Batch"
            )
        seen[cid] = index
        params = entry.get("params")
        if not isinstance(params, dict):
            raise _invalid(f"{where}.params: Field required (custom_id {cid!r})")
        problem = params_problem(params, max_output)
        if problem is None and params.get("stream"):
            problem = "stream: streaming is not supported in Message Batches"
        if problem is not None:
            raise _invalid(f"{where}.params.{problem} (custom_id {cid!r})")
        excerpt, _tokens = content.summarize_anthropic(params)
        model = params["model"]
        parsed.append((cid, models.setdefault(model, model), excerpt, params))
    return parsed


_SUCCEEDED = json_template(
    {
        "custom_id": "<<custom_id>>",
        "result": {
            "type": "succeeded",
            "message": {
                "id": "<<id>>",
                "type": "message",
                "role": "assistant",
                "model": "<<model>>",
                "content": [{"type": "text", "text": "<<text>>"}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": "<<input_tokens>>",
                    "output_tokens": "<<output_tokens>>",
                    "cache_creation_input_tokens": "<<cache_write>>",
                    "cache_read_input_tokens": "<<cache_read>>",
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": "<<cache_write_5m>>",
                        "ephemeral_1h_input_tokens": "<<cache_write_1h>>",
                    },
                    "service_tier": "batch",
                },
            },
        },
    }
)


def _succeeded_line(batch_id: str, item: Item) -> str:
    """A `MessageBatchIndividualResponse` line with a full `Message`."""
    cid, model, excerpt, input_tokens, write_5m, write_1h, cache_read = item
    return _SUCCEEDED % {
        "custom_id": quote(cid),
        "id": quote("msg_sim_" + content.short_hash(batch_id, cid)),
        "model": quote(model),
        "text": quote(content.reply_text(model, excerpt)),
        "input_tokens": input_tokens,
        "output_tokens": content.output_tokens(model, excerpt),
        "cache_write": write_5m + write_1h,
        "cache_write_5m": write_5m,
        "cache_write_1h": write_1h,
        "cache_read": cache_read,
    }


def message_body(
    message_id: str,
    model: str,
    excerpt: str,
    prompt: cache_prefixes.Prompt,
    hit: Mark | None,
    max_tokens: int,
    tier: str,
) -> dict[str, Any]:
    """A `Message` (the synchronous answer; Claude's InvokeModel body on Bedrock without `cache_creation` and
    `service_tier`): the labelled reply cut at ``max_tokens``, usage with the prompt cache's reads and writes."""
    text, out = content.reply_text(model, excerpt), content.output_tokens(model, excerpt)
    stop = "end_turn"
    if max_tokens < out:
        text, out, stop = text[: 4 * max_tokens], max_tokens, "max_tokens"
    use = cache_prefixes.usage(prompt.marks, hit)
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": prompt.tokens - use.read - use.write,
            "output_tokens": out,
            "cache_creation_input_tokens": use.write,
            "cache_read_input_tokens": use.read,
            "cache_creation": {"ephemeral_5m_input_tokens": use.write_5m, "ephemeral_1h_input_tokens": use.write_1h},
            "service_tier": tier,
        },
    }


_ERROR_TYPES = {  # simulated item error -> Anthropic's error type
    ERRORED: "invalid_request_error",
    OVERLOADED: "overloaded_error",
    RATE_LIMITED: "rate_limit_error",
    SERVER_ERROR: "api_error",
}


def _errored_line(cid: str, kind: str = ERRORED, message: str | None = None) -> str:
    error = {
        "type": "error",
        "error": {
            "type": _ERROR_TYPES[kind],
            "message": message or f"[simulated] request {cid} was configured to fail (item_outcomes / error_every)",
        },
    }
    return dumps({"custom_id": cid, "result": {"type": "errored", "error": error}})


class AnthropicBatches:
    """Batch store and endpoint handlers. `state` provides `lock` and the current `settings` dict."""

    provider = PROVIDER
    base_path = ""  # the SDK's base URL is the simulator's origin
    paths = ("/v1/messages",)  # what only this API serves: errors before any route ran are in its shape
    error_types = ("api_error", "not_found_error")  # of a simulator bug (500), of an unknown URL (404)
    real_limits = REAL_LIMITS

    def __init__(self, state: Any) -> None:
        self.state = state
        self.batches: dict[str, _Batch] = {}
        self.created = 0
        self.messages = 0
        self.cache = PromptCache()
        self.routes = [
            Route("POST", "/v1/messages", "converse", self.message),
            Route("POST", "/v1/messages/batches", "create_batch", self.create),
            Route("GET", "/v1/messages/batches", "list_batches", self.list),
            Route("GET", "/v1/messages/batches/{id}", "get_batch", self.retrieve),
            Route("DELETE", "/v1/messages/batches/{id}", "delete", self.delete),
            Route("POST", "/v1/messages/batches/{id}/cancel", "cancel_batch", self.cancel),
            Route("GET", "/v1/messages/batches/{id}/results", "results", self.results),
        ]

    def reset(self) -> None:
        self.batches.clear()
        self.created = self.messages = 0
        self.cache.clear()

    def stats(self) -> dict[str, Any]:
        return {
            "batches_created": self.created,
            "batches": list(self.batches),
            "messages": self.messages,
            "cache_entries": len(self.cache),
        }

    def created_batches(self, now: float) -> list[dict[str, Any]]:
        """Every batch: its id, the chunk markers its custom_ids carry (Anthropic keeps no metadata) and whether it
        has ended."""
        return [
            {
                "id": b.id,
                "mark": markers([item[0] for item in b.items]),
                "ended": b.timeline(now)[0] == "ended",
                "headers": dict(b.headers),  # what it was created with (decision 0129)
            }
            for b in self.batches.values()
        ]

    def items_finished(self, now: float) -> dict[str, int]:
        """Each batch's finished items so far: its timeline gives the final cutoff; until the end (or the cancel)
        only the first ones are done."""
        finished = {}
        for batch_id, batch in self.batches.items():
            own = batch.plan.at(now)  # a lasting stall holds the batch's own time (lasting.py)
            finished[batch_id] = batch.plan.done_by(own if batch.cancel_at is None else min(own, batch.cancel_at))
        return finished

    @staticmethod
    def request_id() -> tuple[str, str]:
        return "request-id", "req_sim_" + secrets.token_hex(12)

    @staticmethod
    def render(error: ApiError) -> Reply:
        header, rid = AnthropicBatches.request_id()
        body = {"type": "error", "error": {"type": error.type, "message": error.message}, "request_id": rid}
        return json_reply(body, error.status, {header: rid, **error.headers})

    @staticmethod
    def fault_error(fault: Fault) -> ApiError:
        return ApiError(fault.status, _FAULT_TYPES[fault.status], fault.message(), headers=fault.headers())

    @staticmethod
    def authorize(req: Request) -> None:
        key = req.header("x-api-key")
        bearer = req.header("authorization") or ""
        if key or (bearer.lower().startswith("bearer ") and bearer[7:].strip()):
            return
        raise ApiError(401, "authentication_error", "x-api-key header is required")

    def _get(self, batch_id: str, req: Request | None = None) -> _Batch:
        """The batch, as a call sees it: one created in a workspace (its `anthropic-workspace-id`) is found only by
        calls naming that workspace, one created without by calls naming none (decision 0129)."""
        batch = self.batches.get(batch_id)
        if batch is None or (req is not None and not self._visible(batch, req)):
            raise _not_found(batch_id)
        return batch

    @staticmethod
    def _visible(batch: _Batch, req: Request) -> bool:
        return batch.headers.get(WORKSPACE_HEADER) == req.header(WORKSPACE_HEADER)

    def create(self, req: Request) -> Reply:
        config = self.state.settings
        max_bytes = settings.limit(config, PROVIDER, "max_bytes", REAL_LIMITS)
        if len(req.body) > max_bytes:
            raise ApiError(413, "request_too_large", f"Request exceeds the maximum size of {max_bytes} bytes.")
        try:
            body = parse_json(req.body)
        except BadBody as exc:
            raise _invalid(str(exc)) from None
        parsed = parse_requests(
            body, settings.limit(config, PROVIDER, "max_requests", REAL_LIMITS), output_cap(betas_of(req), batch=True)
        )
        scope = scope_of(req)
        prompts = [cache_prefixes.anthropic_prompt(p[3], scope) for p in parsed]
        now = time.time()
        with self.state.lock:
            plan = Plan.from_settings(now, config, [p[0] for p in parsed], self.state.fired)
            plan.pause = self.state.lasting.pause(PROVIDER, {p[1] for p in parsed}, now)
            start = now + self.state.clock.offset
        problems: dict[int, str] = {}
        for index, prompt in enumerate(prompts):
            if prompt.problem is not None:
                problems[index] = prompt.problem
                plan.forced.setdefault(index, ERRORED)
        hits = self.cache.run_batch(
            [prompt.marks for prompt in prompts],
            lambda i: plan.outcome(i, plan.cap, EXPIRED) == SUCCEEDED,
            start,
            plan.seconds,
            config["cache_wave_size"],
        )
        items: list[Item] = []
        for (cid, model, excerpt, _params), prompt, hit in zip(parsed, prompts, hits, strict=True):
            use = cache_prefixes.usage(prompt.marks, hit)
            items.append(
                (cid, model, excerpt, prompt.tokens - use.read - use.write, use.write_5m, use.write_1h, use.read)
            )
        batch_id = "msgbatch_01" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(22))
        batch = _Batch(batch_id, plan, items, problems, asked_headers(req))
        with self.state.lock:
            self.batches[batch.id] = batch
            self.created += 1
            return json_reply(batch.view(now, req.base_url))

    def message(self, req: Request) -> Reply:
        """`POST /v1/messages`, non-streaming: a `Message` whose usage reads and writes this simulator's prompt cache;
        its writes are readable once the answer has left."""
        try:
            params = parse_json(req.body)
        except BadBody as exc:
            raise _invalid(str(exc)) from None
        if not isinstance(params, dict):
            raise _invalid("The request body must be a JSON object.")
        batch_only = sorted(betas_of(req) & BATCH_ONLY_BETAS)
        if batch_only:
            raise _invalid(f"Unsupported beta header: {batch_only[0]} (Message Batches API only)")
        problem = params_problem(params)
        if problem is None and params.get("stream"):
            problem = "stream: the simulator answers non-streaming requests only"
        prompt = cache_prefixes.anthropic_prompt(params, scope_of(req))
        problem = problem or prompt.problem
        if problem is not None:
            raise _invalid(problem)
        hit = self.cache.use(prompt.marks, self.state.clock.now())
        excerpt, _tokens = content.summarize_anthropic(params)
        model = params["model"]
        body = message_body(
            "msg_sim_" + secrets.token_hex(12), model, excerpt, prompt, hit, params["max_tokens"], "standard"
        )
        with self.state.lock:
            self.messages += 1
        reply = json_reply(body)
        reply.completed = self.cache.later(written(prompt.marks, hit), self.state.clock.now)
        return reply

    def retrieve(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            return json_reply(self._get(id, req).view(time.time(), req.base_url))

    def list(self, req: Request) -> Reply:
        try:
            limit = int(req.query.get("limit", 20))
        except ValueError:
            raise _invalid("limit: Input should be a valid integer") from None
        if not 1 <= limit <= 1000:
            raise _invalid("limit: Input should be between 1 and 1000")
        after, before = req.query.get("after_id"), req.query.get("before_id")
        if after and before:
            raise _invalid("Only one of after_id and before_id may be given.")
        with self.state.lock:
            now = time.time()
            ids = [
                i
                for i in reversed(self.batches)
                if self.state.listed(self.batches[i].plan.created, now) and self._visible(self.batches[i], req)
            ]
            if after:
                start = ids.index(after) + 1 if after in ids else len(ids)
                page, has_more = ids[start : start + limit], start + limit < len(ids)
            elif before:
                stop = ids.index(before) if before in ids else 0
                start = max(0, stop - limit)
                page, has_more = ids[start:stop], start > 0
            else:
                page, has_more = ids[:limit], len(ids) > limit
            data = [self.batches[i].view(now, req.base_url) for i in page]
        return json_reply(
            {
                "data": data,
                "has_more": has_more,
                "first_id": page[0] if page else None,
                "last_id": page[-1] if page else None,
            }
        )

    def cancel(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            batch = self._get(id, req)
            now = time.time()
            status = batch.timeline(now)[0]
            if status == "ended":
                raise _invalid(f"Message Batch {id!r} has already ended and cannot be canceled.")
            if batch.cancel_at is None:
                batch.cancel_at = batch.plan.at(now)
                batch.cancel_seconds = self.state.settings["cancel_seconds"]
            view = batch.view(now, req.base_url)
            if batch.cancel_seconds == 0 or view["processing_status"] == "ended":
                # The API answers a cancel with `canceling`; the end shows on the next retrieve.
                view.update(processing_status="canceling", ended_at=None, results_url=None)
                view["request_counts"] = {
                    "processing": batch.plan.n,
                    SUCCEEDED: 0,
                    ERRORED: 0,
                    CANCELED: 0,
                    EXPIRED: 0,
                }
            return json_reply(view)

    def delete(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            batch = self._get(id, req)
            if batch.timeline(time.time())[0] != "ended":
                raise _invalid(f"Message Batch {id!r} cannot be deleted while it is still processing; cancel it first.")
            del self.batches[id]
        return json_reply({"id": id, "type": "message_batch_deleted"})

    def results(self, req: Request, id: str) -> Reply:
        with self.state.lock:
            batch = self._get(id, req)
            status, _end, cutoff, leftover = batch.timeline(time.time())
        if status != "ended":
            raise _invalid(f"Results for Message Batch {id!r} are not available until processing has ended.")
        accept = (req.header("accept") or "").lower()
        content_type = "application/x-jsonl" if "jsonl" in accept else "application/binary"
        return Reply(200, content_type=content_type, stream=self._result_chunks(batch, cutoff, leftover))

    @staticmethod
    def _result_chunks(batch: _Batch, cutoff: int, leftover: str) -> Iterator[bytes]:
        lines: list[str] = []
        outcome = batch.plan.outcome
        for i, item in enumerate(batch.items):
            kind = outcome(i, cutoff, leftover)
            if kind == SUCCEEDED:
                lines.append(_succeeded_line(batch.id, item))
            elif kind in ERROR_KINDS:
                lines.append(_errored_line(item[0], kind, batch.problems.get(i) if kind == ERRORED else None))
            else:
                lines.append(dumps({"custom_id": item[0], "result": {"type": kind}}))
            if len(lines) >= _LINES_PER_CHUNK:
                lines.append("")
                yield "\n".join(lines).encode()
                lines = []
        if lines:
            lines.append("")
            yield "\n".join(lines).encode()
