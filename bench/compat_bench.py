"""Compatible create vs native create: the same N short requests created through each front door's handler and
through the native ``lambdas.create.handler``, in one fresh process against moto (as ``bench.create_bench``).

Worker (one fresh interpreter per run)::

    python -m bench.compat_bench --n 10000 --reps 3 --out result.json

- **OpenAI door**: the requests as an OpenAI batch input file (one ``/v1/chat/completions`` line each, to
  gpt-4o-mini), uploaded once through ``POST /openai/v1/files`` before any timing; then each round times
  ``lambdas.openai_compat.handler`` on ``POST /openai/v1/batches {"input_file_id": ...}``: reading the file from S3,
  parsing and translating every line, storing the job's requests and starting the workflow.
- **Native, same requests**: ``lambdas.create.handler`` on ``POST /batches`` with the same prompts as
  ``{"messages": [...]}`` requests to the same provider and model, keyed by the same custom ids.
- **Anthropic door** (inline JSON body): ``lambdas.anthropic_compat.handler`` on ``POST
  /anthropic/v1/messages/batches`` with ``{"requests": [{"custom_id", "params": {model, max_tokens, messages}}]}``,
  against the native create of the same requests to the same Claude model.

Both doors' events carry the key authorizer's context (``requestContext.authorizer.owner``), as API Gateway hands
them over; the native event is SigV4's. Each run: a warm-up create of 5 requests on every path (imports, boto3
clients, moto backends), then ``reps`` rounds of [native OpenAI, OpenAI door, native Anthropic, Anthropic door].
"""

from __future__ import annotations

import argparse
import base64
import copy
import cProfile
import gc
import json
import os
import pstats
import time
from typing import Any

from bench.common import OWNER, create_event, create_resources, ensure_paths, quiet_stdout, write_result
from tests.support.lambda_context import FakeLambdaContext

GPT = "gpt-4o-mini"
CLAUDE = "claude-sonnet-4-20250514"
MAX_TOKENS = 64
BOUNDARY = "benchboundary"
AUTHORIZER = {"principalId": OWNER, "owner": OWNER, "key_id": "key_bench", "integrationLatency": 1}


def prompts(n: int) -> list[tuple[str, str]]:
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return [(f"request_{i:06d}", f"Name an animal that starts with the letter '{letters[i % 26]}'") for i in range(n)]


def _messages(prompt: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": prompt}]


def openai_file(n: int) -> bytes:
    return b"".join(
        json.dumps(
            {
                "custom_id": custom_id,
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {"model": GPT, "messages": _messages(prompt), "max_completion_tokens": MAX_TOKENS},
            }
        ).encode()
        + b"\n"
        for custom_id, prompt in prompts(n)
    )


def native_body(n: int, provider: str, model: str) -> str:
    requests = {custom_id: {"messages": _messages(prompt)} for custom_id, prompt in prompts(n)}
    return json.dumps(
        {"provider": provider, "model": model, "hyperparameters": {"max_tokens": MAX_TOKENS}, "requests": requests}
    )


def anthropic_body(n: int) -> str:
    return json.dumps(
        {
            "requests": [
                {
                    "custom_id": custom_id,
                    "params": {"model": CLAUDE, "max_tokens": MAX_TOKENS, "messages": _messages(p)},
                }
                for custom_id, p in prompts(n)
            ]
        }
    )


def door_event(door: str, method: str, path: str, body: bytes | str, content_type: str) -> dict[str, Any]:
    """An API Gateway proxy event for ``/{door}/v1/{proxy+}`` that came through the key authorizer."""
    event = create_event("")
    prefix = f"/{door}/v1/"
    event.update(
        resource=prefix + "{proxy+}",
        path=path,
        httpMethod=method,
        pathParameters={"proxy": path[len(prefix) :]},
        queryStringParameters=None,
    )
    event["headers"] = {
        "Content-Type": content_type,
        "Host": "abc123.execute-api.eu-west-1.amazonaws.com",
        "X-Forwarded-Proto": "https",
    }
    context = event["requestContext"]
    context.update(resourcePath=prefix + "{proxy+}", httpMethod=method, path="/v1" + path)
    context["identity"] = {**context["identity"], "userArn": None, "caller": None, "accessKey": None, "user": None}
    context["authorizer"] = dict(AUTHORIZER)
    if isinstance(body, bytes):
        event["body"], event["isBase64Encoded"] = base64.b64encode(body).decode(), True
    else:
        event["body"], event["isBase64Encoded"] = body, False
    return event


def multipart(fields: dict[str, tuple[str | None, bytes]]) -> bytes:
    out = b""
    for name, (filename, data) in fields.items():
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + data + b"\r\n"
    return out + f"--{BOUNDARY}--\r\n".encode()


def _invoke(handler: Any, event: dict[str, Any], status: int, what: str) -> dict[str, Any]:
    with quiet_stdout():
        response = handler(copy.copy(event), FakeLambdaContext("bench", remaining_ms=900_000))
    if response.get("statusCode") != status:
        raise RuntimeError(f"{what} answered {response.get('statusCode')}: {str(response.get('body'))[:500]}")
    answer: dict[str, Any] = json.loads(response["body"])
    return answer


def _total(answer: dict[str, Any]) -> int:
    counts = answer["request_counts"]
    if "total" in counts:
        return int(counts["total"])
    return int(sum(counts.values()))  # Anthropic: processing + succeeded + errored + canceled + expired


class Paths:
    """The four create calls on N requests (or a warm-up of 5), each checked to have stored every request."""

    def __init__(self, n: int) -> None:
        from lambdas import anthropic_compat, create, openai_compat

        self.n = n
        self.handlers = {
            "create": create.handler,
            "openai": openai_compat.handler,
            "anthropic": anthropic_compat.handler,
        }
        data = openai_file(n)
        self.file_bytes = len(data)
        form = multipart({"purpose": (None, b"batch"), "file": ("input.jsonl", data)})
        upload = door_event(
            "openai", "POST", "/openai/v1/files", form, f"multipart/form-data; boundary={BOUNDARY}"
        )  # not timed: the file is uploaded before any create
        file = _invoke(openai_compat.handler, upload, 200, "POST /openai/v1/files")
        self.events = {
            "native_openai": create_event(native_body(n, "openai", GPT)),
            "openai_door": door_event(
                "openai",
                "POST",
                "/openai/v1/batches",
                json.dumps(
                    {"input_file_id": file["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"}
                ),
                "application/json",
            ),
            "native_anthropic": create_event(native_body(n, "anthropic", CLAUDE)),
            "anthropic_door": door_event(
                "anthropic", "POST", "/anthropic/v1/messages/batches", anthropic_body(n), "application/json"
            ),
        }
        self.body_bytes = {name: len(e["body"]) for name, e in self.events.items() if name != "openai_door"} | {
            "openai_door_file": len(data)
        }

    def run(self, name: str) -> float:
        handler, status = {
            "native_openai": (self.handlers["create"], 202),
            "openai_door": (self.handlers["openai"], 200),
            "native_anthropic": (self.handlers["create"], 202),
            "anthropic_door": (self.handlers["anthropic"], 200),
        }[name]
        event = self.events[name]
        gc.collect()
        start = time.perf_counter()
        answer = _invoke(handler, event, status, name)
        elapsed = time.perf_counter() - start
        if _total(answer) != self.n:
            raise RuntimeError(f"{name} stored {_total(answer)} requests, expected {self.n}: {answer}")
        return elapsed


ORDER = ("native_openai", "openai_door", "native_anthropic", "anthropic_door")


def measure(n: int, reps: int, profile: str | None) -> dict[str, Any]:
    from batch_gateway import wiring

    wiring.reset()
    warm = Paths(5)
    for name in ORDER:
        warm.run(name)
    paths = Paths(n)
    result: dict[str, Any] = {"n": n, "body_bytes": paths.body_bytes, **{f"{name}_s": [] for name in ORDER}}
    for _ in range(reps):
        for name in ORDER:
            result[f"{name}_s"].append(paths.run(name))
    if profile:
        for name in ("openai_door", "anthropic_door"):
            profiler = cProfile.Profile()
            profiler.enable()
            paths.run(name)
            profiler.disable()
            with open(f"{profile}.{name}.txt", "w") as out:
                stats = pstats.Stats(profiler, stream=out)
                stats.sort_stats("cumulative").print_stats(40)
                stats.sort_stats("tottime").print_stats(25)
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--profile", help="also profile one more create of each door, stats to <this>.<door>.txt")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ensure_paths()
    from moto import mock_aws

    with mock_aws():
        os.environ.update(create_resources())
        result = measure(args.n, args.reps, args.profile)
    result["moto"] = "in-process"
    write_result(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
