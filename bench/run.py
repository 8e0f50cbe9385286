"""``python -m bench`` (``make bench``): every figure, each a ratio to a floor measured in the same run, written to
``bench/results/summary.json`` and printed as a table. Speed targets live here, never in timed tests.

Exit code 0 even when a target fails: the table says FAIL and summary.json has ``"all_targets_met": false``.
Loopback only, except that the Lambda bundles are built with pip the first time (then cached in bench/.cache/).

Options: ``--only STEPS`` runs a subset (comma separated, of create, guardrails, collect, imports, history, assets,
submit, compat, estimate, plan, lag, scale, infra_cost, overhead, chaos, cache, dedup, reuse, deadline, failover;
summary.json is then
written to ``bench/results/partial.json`` instead; ``--merge`` folds the subset's figures into summary.json, keeping
the others and saying which steps were rerun when); ``--profile`` also writes cProfile stats of one create and one
100,000-line collect to ``bench/.cache/profiles/`` (and, with py-spy on the PATH, py-spy samples of moto and every
Lambda worker during the overhead step's first create, in ``profiles/overhead/``). ``BENCH_REUSE_N`` sets the reuse
step's job size (default 10,000), for a quick check.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import (
    assets_bench,
    chaos_bench,
    deadline_bench,
    imports_bench,
    infra_cost,
    lag_bench,
    scale_sim,
    workflow_bench,
)
from bench.common import (
    CACHE_DIR,
    MB,
    REPO_ROOT,
    RESULTS_DIR,
    child_env,
    create_resources,
    ensure_paths,
    median,
    moto_process,
    run_worker,
    simulator_process,
)

STEPS = (
    "history",
    "assets",
    "imports",
    "create",
    "guardrails",
    "collect",
    "submit",
    "compat",
    "estimate",
    "plan",
    "lag",
    "scale",
    "infra_cost",
    "overhead",
    "chaos",
    "cache",
    "dedup",
    "reuse",
    "deadline",
    "failover",
)
FAILOVER_N = 1_000  # Claude requests per door job of the failover step (issue 28)
CREATE_N = 85_000  # the largest round number whose API Gateway event fits Lambda's 6 MB (a 5.8 MB body)
COLLECT_SIZES = (10_000, 50_000, 100_000)
BEDROCK_COLLECT_N = 50_000  # Bedrock's default maximum records per job: one job's output file
FLAT_BYTES_PER_REQUEST = 16  # heap growth allowed per extra request between 50,000 and 100,000 lines
# Anthropic Submit: (chunk MiB, sentences per prompt): ~2 KiB requests (256 MiB = the 100,000-request maximum) and
# ~0.5 KiB requests (more objects per MiB). Submit has 1024 MB for chunks of up to 256 MiB.
SUBMIT_RUNS = ((64, 40), (32, 8))
SUBMIT_MAX_GROWTH_RATIO = 1.5
PROFILES = CACHE_DIR / "profiles"
# API functions' cold import over the floor of Powertools + boto3 (CPU time): 1.5 until issue 26, which the worst
# function crossed beside other work; routing without Powertools' event_handler package (decision 0106) made room.
IMPORT_MAX_API_RATIO = 1.3
# Compatible create vs native create (issue 12): the same short requests through each door's create handler and the
# native one. A door does the native create's work plus one more pass over the same requests (reading its own
# format, translating each request; the OpenAI door also reads its file back from S3), so about twice native at most.
COMPAT_N = 10_000
COMPAT_RUNS = 3
COMPAT_MAX_RATIO = 2.0
# Dry run vs create (issue 13): the same 100,000-request upload through lambdas.create.handler as a create and with
# "dry_run": true, with orjson as in the Create function's bundle. The dry run does create's reading and checks and
# builds each request's provider line instead of storing it.
ESTIMATE_N = 100_000
ESTIMATE_RUNS = 2
ESTIMATE_MAX_RATIO = 1.5
# A resumed Plan (decision 0118): the largest input (1 GiB, the upload limit) planned once in one invocation and once
# stopped by its budget every 3 chunks and gone on with by fresh invocations, bench/plan_bench.py. Going on from the
# recorded place costs a ranged read and one HEAD an invocation (CPU time of the Plan process: its wall time here is
# the moto server's on a shared machine); the memory of an invocation does not depend on the input's size.
PLAN_MB = 1024
PLAN_MAX_RESUMED_RATIO = 1.2
PLAN_MAX_PEAK_RSS_MB = 64
# Overhead vs the direct SDK (issue 15): 100,000 Anthropic requests through the local stack vs the anthropic SDK on the
# same simulator, bench/overhead_bench.py. (a) POST /batches (an uploaded file) to provider batch over
# messages.batches.create; (b) the results download over the SDK's results() stream. (a) was held to 1.5 until issue
# 26 raised it to 1.2; the requests are distinct (in-job dedup would send a repeated one once, the SDK every time).
OVERHEAD_N = 100_000
OVERHEAD_ROUNDS = 5  # the median of five: single rounds spread over 0.3x on a shared machine
OVERHEAD_MAX_CREATE_RATIO = 1.2
OVERHEAD_MAX_RESULTS_RATIO = 1.0
# In-job dedup (issue 27 item 4, decision 0126): 10,000 requests, 30 % of them repeating an earlier one, planned;
# exactly the 7,000 distinct ones are provider lines. Hashing every request costs Plan some CPU: at most 1.5 x the
# plan of 10,000 distinct requests (it writes fewer lines).
DEDUP_N = 10_000
DEDUP_SHARE = 0.3
DEDUP_MAX_PLAN_RATIO = 1.5
# Result reuse (issue 27 item 3, decision 0127): a finished 10,000-request job resubmitted with reuse: no provider
# call, cost 0, the same results, and accepted to finished at most 1.5 x its create call.
REUSE_N = 10_000
REUSE_MAX_TIME_RATIO = 1.5
CHAOS_TIMEOUT_S = 3600  # three seeds of 16 jobs, each with Submit and Poll claims that may wait out their lease


def _log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- steps: each returns (summary values, details) ------------------------------------------------------------------


def step_template(ctx: dict[str, Any]) -> dict[str, Any]:
    if "template" not in ctx:
        ctx["template"] = run_worker("bench.workflow_bench", ["template"], timeout=180)
    return ctx["template"]


def step_history(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    figures = workflow_bench.history_figures(step_template(ctx))
    try:
        validation = run_worker("bench.workflow_bench", ["validate"], timeout=120)
    except Exception as exc:  # the figures stand without it; the target says the check did not run
        validation = {"error": str(exc)[-1000:], "matches": None}
    values = {
        "history_events_24h": figures["ours"]["history_events"],
        "transitions_24h": figures["ours"]["transitions"],
        "history_events_24h_fixed_30s_poller": figures["fixed_30s"]["history_events"],
        "transitions_24h_fixed_30s_poller": figures["fixed_30s"]["transitions"],
        "history_model_matches_moto": validation.get("matches"),
    }
    for run in ("ours", "fixed_30s"):
        figures[run].pop("states_entered", None)
    return values, {**figures, "moto_validation": validation}


def step_assets(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    architecture = json.loads((REPO_ROOT / "cdk.json").read_text()).get("context", {}).get("architecture", "arm64")
    bundles = run_worker("bench.assets_bench", ["--arch", architecture], timeout=480)
    functions = assets_bench.function_bundles(step_template(ctx))
    values = {
        "asset_mb": {name: bundles[bundle]["unzipped_mb"] for name, bundle in sorted(functions.items())},
        "api_bundle_has_provider_sdk": bool(bundles["api"]["provider_sdks"]),
    }
    return values, {"architecture": architecture, "function_bundle": functions, "bundles": bundles}


def step_imports(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    result = imports_bench.measure(runs=5)
    failed = {m: r["error"] for m, r in result["modules"].items() if "error" in r}
    if failed:  # a step error: --merge keeps the last good figures
        raise RuntimeError(f"{len(failed)} handler(s) failed to import; first: {next(iter(failed.values()))}")
    values = {"import_ratio_to_floor": {m: r.get("ratio") for m, r in result["modules"].items()}}
    api = {m: r["ratio"] for m, r in result["modules"].items() if r.get("kind") == "api" and "ratio" in r}
    if api:  # where the slowest API handler's import time goes
        result["slowest_api_handler_beyond_floor"] = imports_bench.extra_imports(max(api, key=api.get))
    return values, result


def step_create(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    runs = []
    for i in range(3):  # timing: moto in-process, as tests/integration does; 3 fresh processes x 3 rounds
        _log(f"create: in-process moto, run {i + 1}/3")
        args = ["--n", str(CREATE_N), "--reps", "3", "--moto", "inproc"]
        if ctx.get("profile") and i == 0:
            args += ["--profile", str(PROFILES / "create.txt")]
        runs.append(run_worker("bench.create_bench", args, timeout=180))
    memory_runs = []
    with moto_process() as moto:  # memory: moto in its own process, so only the handler's memory counts
        url = moto.info["url"]
        os.environ.update(child_env())
        create_resources(url)
        for i in range(3):
            _log(f"create: moto server process, run {i + 1}/3")
            memory_runs.append(
                run_worker("bench.create_bench", ["--n", str(CREATE_N), "--reps", "1", "--moto", url], timeout=180)
            )
    _log("create: the same requests to Bedrock, in-process moto, 3 rounds")
    bedrock = run_worker(
        "bench.create_bench",
        ["--n", str(CREATE_N), "--reps", "3", "--moto", "inproc", "--provider", "bedrock"],
        timeout=180,
    )
    _log("create: the same body once through the local stack's API")
    api = run_worker("bench.create_bench", ["--n", str(CREATE_N), "--moto", "local"], timeout=300)
    create_s = [t for r in runs for t in r["create_s"]]
    floor_s = [t for r in runs for t in r["floor_s"]]
    body_mb = runs[0]["body_bytes"] / MB
    growth = [r["memory"]["growth_mb"] for r in memory_runs]
    values = {
        "create_ratio_to_floor": round(median(create_s) / median(floor_s), 2),
        "create_peak_rss_mb": round(median(growth), 1),
        "body_mb": round(body_mb, 2),
        "create_peak_rss_mb_moto_in_process": round(median([r["memory"]["growth_mb"] for r in runs]), 1),
        "create_api_event_mb": round(api["event_bytes"] / MB, 2),
        "create_through_local_api_s": round(api["create_through_api_s"], 2),
        "create_ratio_to_floor_bedrock": round(median(bedrock["create_s"]) / median(bedrock["floor_s"]), 2),
    }
    details = {
        "requests": CREATE_N,
        "body_bytes": runs[0]["body_bytes"],
        "through_local_api": api,
        "create_s": [round(t, 3) for t in create_s],
        "floor_s": [round(t, 3) for t in floor_s],
        "create_median_s": round(median(create_s), 3),
        "floor_median_s": round(median(floor_s), 3),
        "peak_rss_growth_mb_runs": growth,
        "peak_rss_growth_mb_runs_moto_in_process": [r["memory"]["growth_mb"] for r in runs],
        "memory_method": memory_runs[0]["memory"]["method"],
        "create_s_moto_server": [round(t, 3) for r in memory_runs for t in r["create_s"]],
        "floor_s_moto_server": [round(t, 3) for r in memory_runs for t in r["floor_s"]],
        "bedrock": {"create_s": [round(t, 3) for t in bedrock["create_s"]], "floor_s": bedrock["floor_s"]},
    }
    return values, details


def step_guardrails(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The input guardrails' cost on create (decision 0124): the built-in detector's throughput, and create with
    ``pii: redact`` vs ``off`` on the create step's requests (every tenth holding personal data)."""
    _log("guardrails: detector throughput, create with pii redact vs off, in-process moto")
    run = run_worker("bench.guardrails_bench", ["--n", str(CREATE_N), "--reps", "3"], timeout=300)
    values = {
        "guardrails_detector_mb_per_s": round(run["detector"]["mb_per_s"], 1),
        "guardrails_redact_ratio_to_off": round(median(run["redact_s"]) / median(run["off_s"]), 2),
        "guardrails_create_redact_ratio_to_floor": round(median(run["redact_s"]) / median(run["floor_s"]), 2),
        "guardrails_digits_redact_ratio_to_off": round(median(run["digits_redact_s"]) / median(run["digits_off_s"]), 2),
    }
    details = {
        "requests": run["n"],
        "detector": run["detector"],
        "off_s": [round(t, 3) for t in run["off_s"]],
        "redact_s": [round(t, 3) for t in run["redact_s"]],
        "floor_s": [round(t, 3) for t in run["floor_s"]],
        "digits": {key: [round(t, 3) for t in run[f"digits_{key}"]] for key in ("off_s", "redact_s", "floor_s")},
    }
    return values, details


def step_collect(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    plan = {100_000: 3, 50_000: 1, 10_000: 2}  # fresh measuring processes per size
    results: dict[int, list[dict[str, Any]]] = {}
    setups: dict[int, dict[str, Any]] = {}
    with moto_process() as moto, simulator_process(processing_seconds=0.2) as sim:
        url, sim_url = moto.info["url"], sim.info["url"]
        os.environ.update(child_env())
        create_resources(url)
        for n in COLLECT_SIZES:
            _log(f"collect: setting up a job of {n:,} requests (create, plan, submit, wait)")
            setups[n] = run_worker(
                "bench.collect_bench", ["setup", "--n", str(n), "--moto", url, "--sim", sim_url], timeout=180
            )
            results[n] = []
            for i in range(plan[n]):
                _log(f"collect: {n:,} lines, run {i + 1}/{plan[n]}")
                args = [
                    "measure",
                    "--job-id",
                    setups[n]["job_id"],
                    "--moto",
                    url,
                    "--sim",
                    sim_url,
                    "--reps",
                    "2" if n == 100_000 else "1",
                ]
                if i == 0:
                    args.append("--trace")
                if ctx.get("profile") and n == 100_000 and i == 0:
                    args += ["--profile", str(PROFILES / "collect.txt")]
                results[n].append(run_worker("bench.collect_bench", args, timeout=180))
        bedrock = _collect_bedrock(url)
    big = results[100_000]
    collect_s = [t for r in big for t in r["collect_s"]]
    floor_s = [t for r in big for t in r["floor_s"]]
    rss = {n: median([r["memory"]["growth_mb"] for r in results[n]]) for n in COLLECT_SIZES}
    heap = {n: results[n][0]["heap_peak_mb"] for n in COLLECT_SIZES}
    slope = (heap[100_000] - heap[50_000]) * MB / 50_000
    values = {
        "collect_ratio_to_floor": round(median(collect_s) / median(floor_s), 2),
        "collect_peak_rss_mb": {str(n): round(rss[n], 1) for n in (10_000, 100_000)},
        "collect_flat": slope <= FLAT_BYTES_PER_REQUEST,
    }
    details = {
        "collect_s": [round(t, 3) for t in collect_s],
        "floor_s": [round(t, 3) for t in floor_s],
        "collect_median_s": round(median(collect_s), 3),
        "floor_median_s": round(median(floor_s), 3),
        "raw_result_bytes": big[0]["raw_bytes"],
        "peak_rss_growth_mb_runs": {str(n): [r["memory"]["growth_mb"] for r in results[n]] for n in COLLECT_SIZES},
        "heap_peak_mb": {str(n): heap[n] for n in COLLECT_SIZES},
        "heap_bytes_per_extra_request_50k_to_100k": round(slope, 1),
        "flat_rule": f"Python-heap peak (tracemalloc) grows by <= {FLAT_BYTES_PER_REQUEST} bytes per request "
        "between 50,000 and 100,000 lines (both sizes fill several 8 MiB parts)",
        "memory_method": big[0]["memory"]["method"],
        "setup_s": {str(n): round(s["setup_s"], 1) for n, s in setups.items()},
        "bedrock": bedrock,
    }
    values["collect_ratio_to_floor_bedrock"] = round(median(bedrock["collect_s"]) / median(bedrock["floor_s"]), 2)
    return values, details


def _collect_bedrock(moto_url: str) -> dict[str, Any]:
    """One Bedrock job of BEDROCK_COLLECT_N requests, collected from its output file in S3 in 2 fresh processes.
    The Bedrock simulator runs in this process: it reads the input and writes the output in the moto server's S3
    (IAM is not enforced there, so any keys assume the role)."""
    from batch_gateway_dev.simulators import SimulatorServer

    keys = {"aws_access_key_id": "bench", "aws_secret_access_key": "bench"}
    with SimulatorServer(processing_seconds=0.2, aws_endpoint_url=moto_url, aws_credentials=keys) as sim:
        common = ["--moto", moto_url, "--sim", sim.bedrock_endpoint_url, "--provider", "bedrock"]
        _log(f"collect: setting up a Bedrock job of {BEDROCK_COLLECT_N:,} requests (create, plan, submit, wait)")
        setup = run_worker("bench.collect_bench", ["setup", "--n", str(BEDROCK_COLLECT_N), *common], timeout=300)
        runs = []
        for i in range(2):
            _log(f"collect: Bedrock, {BEDROCK_COLLECT_N:,} lines, run {i + 1}/2")
            args = ["measure", "--job-id", setup["job_id"], *common, "--reps", "2"]
            runs.append(run_worker("bench.collect_bench", args, timeout=300))
    return {
        "n": BEDROCK_COLLECT_N,
        "collect_s": [round(t, 3) for r in runs for t in r["collect_s"]],
        "floor_s": [round(t, 3) for r in runs for t in r["floor_s"]],
        "raw_result_bytes": runs[0]["raw_bytes"],
        "peak_rss_growth_mb_runs": [r["memory"]["growth_mb"] for r in runs],
        "setup_s": round(setup["setup_s"], 1),
    }


def step_submit(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    runs: dict[str, dict[str, Any]] = {}
    with simulator_process(processing_seconds=0.2) as sim:
        for chunk_mb, repeat in SUBMIT_RUNS:
            _log(f"submit: Anthropic chunk of {chunk_mb} MiB, prompts of {repeat} sentences")
            runs[f"{chunk_mb}MiB_x{repeat}"] = run_worker(
                "bench.submit_bench",
                ["--mb", str(chunk_mb), "--prompt-repeat", str(repeat), "--sim", sim.info["url"]],
                timeout=300,
            )
    values = {
        "anthropic_submit_growth_ratio": max(r["growth_ratio"] for r in runs.values()),
        "anthropic_submit_peak_rss_mb": {name: r["memory"]["growth_mb"] for name, r in runs.items()},
    }
    details = {
        "runs": runs,
        "rule": "peak RSS growth of AnthropicBatchProvider.submit over the chunk's bytes, in a fresh process, chunk "
        "read as a stream of lines from a file, simulator in its own process; worst of the runs",
    }
    return values, details


def step_compat(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    runs = []
    for i in range(COMPAT_RUNS):  # in-process moto, fresh processes, as the create step
        _log(f"compat: {COMPAT_N:,} requests through each door and natively, run {i + 1}/{COMPAT_RUNS}")
        args = ["--n", str(COMPAT_N), "--reps", "5"]
        if ctx.get("profile") and i == 0:
            args += ["--profile", str(PROFILES / "compat")]
        runs.append(run_worker("bench.compat_bench", args, timeout=300))
    times = {
        name: [t for r in runs for t in r[f"{name}_s"]]
        for name in ("native_openai", "openai_door", "native_anthropic", "anthropic_door")
    }
    values = {
        "compat_create_ratio": round(median(times["openai_door"]) / median(times["native_openai"]), 2),
        "compat_create_ratio_anthropic": round(median(times["anthropic_door"]) / median(times["native_anthropic"]), 2),
    }
    details = {
        "requests": COMPAT_N,
        "body_bytes": runs[0]["body_bytes"],
        **{f"{name}_s": [round(t, 3) for t in ts] for name, ts in times.items()},
        **{f"{name}_median_s": round(median(ts), 3) for name, ts in times.items()},
        "rule": "POST /openai/v1/batches on an uploaded file (upload not timed) over POST /batches with the same "
        "requests to gpt-4o-mini; POST /anthropic/v1/messages/batches (inline body) over POST /batches with the same "
        "requests to the same Claude model; handlers in-process against moto, medians",
    }
    return values, details


def step_estimate(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    runs = []
    for i in range(ESTIMATE_RUNS):  # in-process moto, a fresh process per run
        _log(f"estimate: {ESTIMATE_N:,} requests, create and dry run, run {i + 1}/{ESTIMATE_RUNS}")
        args = ["--n", str(ESTIMATE_N), "--reps", "3"]
        if ctx.get("profile") and i == 0:
            args += ["--profile", str(PROFILES / "estimate")]
        runs.append(run_worker("bench.estimate_bench", args, timeout=600))
    create_s = [t for r in runs for t in r["create_s"]]
    dry_s = [t for r in runs for t in r["dry_run_s"]]
    values = {"estimate_dry_run_ratio": round(median(dry_s) / median(create_s), 2)}
    details = {
        "requests": ESTIMATE_N,
        "file_bytes": runs[0]["file_bytes"],
        "create_s": [round(t, 3) for t in create_s],
        "dry_run_s": [round(t, 3) for t in dry_s],
        "create_median_s": round(median(create_s), 3),
        "dry_run_median_s": round(median(dry_s), 3),
        "orjson_loaded": runs[0]["orjson_loaded"],
        "rule": "POST /batches {input_file} with dry_run over the same create, one uploaded file of short prompts to "
        "Claude (upload not timed), lambdas.create.handler in-process against moto, orjson as in the bundle, medians",
    }
    return values, details


def step_plan(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    with moto_process() as moto:  # the emulated S3 in its own process: only Plan's memory counts
        url = moto.info["url"]
        os.environ.update(child_env())
        create_resources(url)
        _log(f"plan: {PLAN_MB} MiB of requests, planned in one invocation and resumed every 3 chunks")
        result = run_worker("bench.plan_bench", ["--mb", str(PLAN_MB), "--moto", url], timeout=3600)
    values = {
        "plan_resumed_cpu_ratio": result["resumed_cpu_ratio"],
        "plan_resumed_peak_rss_mb": result["resumed_peak_growth_mb"],
        "plan_1gib_cpu_s": result["single_cpu_s"],
        "plan_resumed_invocations": len(result["invocations"]),
        "plan_resumed_same_chunks": result["same_chunks"],
    }
    details = {
        **result,
        "rule": "service.workflow.plan.plan_job on 1 GiB of ~500-byte Claude requests (Anthropic chunks of 100,000), "
        "against a moto server process, one fresh process: once uninterrupted, once stopped by its budget every 3 "
        "chunks and resumed by new calls; the process's CPU time summed, peak RSS growth of the worst invocation",
    }
    return values, details


def step_dedup(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    with moto_process() as moto:
        url = moto.info["url"]
        os.environ.update(child_env())
        create_resources(url)
        _log(f"dedup: {DEDUP_N:,} requests, {DEDUP_SHARE:.0%} duplicates, planned")
        args = ["--n", str(DEDUP_N), "--duplicates", str(DEDUP_SHARE), "--moto", url]
        result = run_worker("bench.dedup_bench", args, timeout=1800)
    values = {
        "dedup_sent": result["sent"],
        "dedup_sent_all_distinct": result["sent_all_distinct"],
        "dedup_plan_cpu_ratio": result["plan_cpu_ratio"],
    }
    details = {
        **result,
        "rule": "service.workflow.plan.plan_job on 10,000 Claude requests of which 3,000 repeat an earlier one, "
        "against a moto server process: the provider lines of its chunks; CPU time over a plan of 10,000 distinct",
    }
    return values, details


def step_lag(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Notice lag (issue 14): 1,000 simulated provider batches polled by the real poll_schedule, in this process
    (discrete events, seconds of CPU); transitions from the synthesized definition. bench/lag_bench.py says the model;
    the whole result is also written to bench/results/lag.json."""
    result = lag_bench.measure(step_template(ctx))
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "lag.json").write_text(json.dumps(result, indent=1) + "\n")
    rows = result["providers"]  # one row per provider: openai, gemini, bedrock with push; anthropic on prediction
    values = {
        **{f"lag_p95_s_{provider}": row["lag_p95_s"] for provider, row in rows.items()},
        "transitions_per_24h_job": max(row["transitions_24h_job_max"] or 0 for row in rows.values()),
        **{f"lag_p50_s_{provider}": row["lag_p50_s"] for provider, row in rows.items()},
        **{f"lag_max_s_{provider}": row["lag_max_s"] for provider, row in rows.items()},
        "transitions_per_poll_cycle": result["transitions"]["per_poll_cycle"],
    }
    return values, result


def step_scale(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Scale under quotas (issue 15): 1,000 jobs from 20 owners over a simulated week, the real planner rule, admission
    and in-memory ledger, in this process (bench/scale_sim.py says the model); the whole result is also written to
    bench/results/scale.json."""
    result = scale_sim.measure()
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "scale.json").write_text(json.dumps(result, indent=1) + "\n")
    values = {
        "scale_all_jobs_finished": result["all_jobs_finished"],
        "scale_chunks_failed_for_quota": result["chunks_failed_for_quota"],
        "scale_fairness_equal_loads": result["fairness_equal_loads"],
        "scale_owner_wait_max_s": result["owner_wait_max_s"],
        "scale_owner_wait_p95_s_max": result["owner_wait_p95_s_max"],
        "scale_provider_refusals_absorbed": result["provider_refusals_absorbed"],
        "scale_fairness_mean_turnaround_equal_loads": result["fairness_mean_turnaround_equal_loads"],
    }
    details = {k: v for k, v in result.items() if k not in ("owners", "first_refusals")}
    kept = ("wait_max_s", "wait_p95_s", "completion_s")
    details["owners"] = {o: {k: v[k] for k in kept} for o, v in result["owners"].items()}
    return values, details


def step_infra_cost(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """AWS cost of one job (issue 15): bench/infra_cost.py counts and prices it; the whole result is also written to
    bench/results/infra_cost.json."""
    result = infra_cost.measure(step_template(ctx))
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "infra_cost.json").write_text(json.dumps(result, indent=1) + "\n")
    values = {
        "infra_cost_per_job_usd": {str(n): job["total_usd"] for n, job in result["jobs"].items()},
        "infra_cost_share_of_saving": result["share_of_saving"],
    }
    return values, result


def step_overhead(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    _log(f"overhead: {OVERHEAD_N:,} requests through the local stack and the direct SDK, {OVERHEAD_ROUNDS} rounds")
    args = ["--n", str(OVERHEAD_N), "--rounds", str(OVERHEAD_ROUNDS)]
    py_spy = shutil.which("py-spy")
    if ctx.get("profile") and py_spy:  # samples moto and every Lambda worker during the first round's (a)
        args += ["--py-spy", py_spy, "--profile-dir", str(PROFILES / "overhead")]
    result = run_worker("bench.overhead_bench", args, timeout=1200)
    values = {
        "overhead_create_ratio": round(result["ratio_a_median"], 2),
        "overhead_results_ratio": round(result["ratio_b"], 2),
    }
    return values, result


CACHE_N = 2000  # requests sharing a 3,000-token system prompt, each with a 200-token question
CACHE_MAX_RATIO = {"anthropic": 0.45, "openai": 0.7}  # a job's cost with prompt_cache auto over off (issue 27)
CACHE_MIN_READ_SHARE = 0.9  # of the shared tokens the items read from the cache after the primer


def step_cache(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Cache-aware planning (issue 27, decision 0128): bench/cache_bench.py says what is measured."""
    _log(f"cache: {CACHE_N:,} requests sharing a 3,000-token system prompt, prompt_cache off and auto")
    result = run_worker("bench.cache_bench", ["--n", str(CACHE_N)], timeout=3600)
    values = {
        "cache_saving_ratio": {p: result[p]["cost_ratio"] for p in CACHE_MAX_RATIO},
        "cache_read_share": {p: result[p]["cache_read_share"] for p in CACHE_MAX_RATIO},
    }
    return values, result


def step_reuse(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Result reuse (issue 27 item 3, decision 0127): bench/reuse_bench.py says what is measured."""
    n = int(os.environ.get("BENCH_REUSE_N") or REUSE_N)
    _log(f"reuse: a finished {n:,}-request job resubmitted with reuse")
    result = run_worker("bench.reuse_bench", ["--n", str(n)], timeout=3600)
    values = {
        "reuse_provider_calls": result["provider_calls"],
        "reuse_cost_usd": result["cost_usd"],
        "reuse_results_identical": result["results_identical"],
        "reuse_time_ratio": result["time_ratio"],
    }
    return values, result


def step_deadline(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Deadlines under a stall (issue 28, decision 0140): 10,000 requests, a 2-hour deadline, a stall at 40 %, on a
    simulated clock with the planner's real rule (bench/deadline_bench.py says the model); the whole result is also
    written to bench/results/deadline.json."""
    result = deadline_bench.measure()
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "deadline.json").write_text(json.dumps(result, indent=1) + "\n")
    values = {
        "deadline_on_time_share": result["on_time_share"],
        "deadline_cost_ratio_to_all_sync": result["cost_ratio_to_all_sync"],
        "deadline_billed_twice_share": result["billed_twice_share"],
        "deadline_no_stall_cost_ratio_to_plain_batch": result["no_stall_cost_ratio_to_plain_batch"],
        "deadline_broken_ignore_prediction_on_time_share": result["broken_ignore_prediction_on_time_share"],
    }
    details = {k: v for k, v in result.items() if k != "rows"}
    details["rows"] = {
        row: {k: v for k, v in figures.items() if not k.endswith("_runs")} for row, figures in result["rows"].items()
    }
    return values, details


def step_failover(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Failover under an outage (issue 28, decision 0140): bench/failover_bench.py says what is measured."""
    _log("failover: Claude jobs through both doors while Anthropic goes down")
    result = run_worker("bench.failover_bench", ["--n", str(FAILOVER_N)], timeout=1800)
    values = {
        "failover_items_on_the_other_provider": result["items_on_the_other_provider"],
        "failover_door_lines_parse": result["door_lines_parse"],
        "failover_costs_add_up": result["costs_add_up"],
    }
    return values, result


def step_chaos(ctx: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A large chaos run (issue 30, decision 0122): bench/chaos_bench.py's seeds, each many jobs with faults on a local
    stack of its own; the whole result is also written to bench/results/chaos.json."""
    seeds, jobs = chaos_bench.SEEDS, chaos_bench.JOBS
    _log(f"chaos: seeds {', '.join(map(str, seeds))}, {jobs} jobs each, faults at the wire and in Lambda")
    args = ["--seeds", *map(str, seeds), "--jobs", str(jobs)]
    result = run_worker("bench.chaos_bench", args, timeout=CHAOS_TIMEOUT_S)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "chaos.json").write_text(json.dumps(result, indent=1) + "\n")
    values = {
        "chaos_jobs": result["jobs"],
        "chaos_faults_injected": result["faults_injected"],
        "chaos_violations": result["violation_count"],
    }
    return values, result


STEP_FUNCTIONS: dict[str, Callable[[dict[str, Any]], tuple[dict[str, Any], dict[str, Any]]]] = {
    "history": step_history,
    "assets": step_assets,
    "imports": step_imports,
    "create": step_create,
    "guardrails": step_guardrails,
    "collect": step_collect,
    "submit": step_submit,
    "compat": step_compat,
    "estimate": step_estimate,
    "plan": step_plan,
    "lag": step_lag,
    "scale": step_scale,
    "infra_cost": step_infra_cost,
    "overhead": step_overhead,
    "chaos": step_chaos,
    "cache": step_cache,
    "dedup": step_dedup,
    "reuse": step_reuse,
    "deadline": step_deadline,
    "failover": step_failover,
}

# --- targets -------------------------------------------------------------------------------------------------------


def _api_modules(details: dict[str, Any]) -> dict[str, float | None]:
    modules = details.get("imports", {}).get("modules", {})
    return {m: r.get("ratio") for m, r in modules.items() if r.get("kind") == "api"}


def targets(values: dict[str, Any], details: dict[str, Any]) -> dict[str, dict[str, Any]]:
    def check(key: str, target: str, test: Callable[[Any], bool]) -> None:
        value = values.get(key)
        try:
            ok = value is not None and bool(test(value))
        except (TypeError, ValueError, KeyError):
            ok = False
        result[key] = {"target": target, "pass": ok}

    result: dict[str, dict[str, Any]] = {}
    check("create_ratio_to_floor", "<= 3.0", lambda v: v <= 3.0)
    check("create_api_event_mb", "<= 6 (Lambda's sync payload limit)", lambda v: v <= 6.0)
    body = values.get("body_mb")
    check(
        "create_peak_rss_mb", f"<= 4 x body_mb ({4 * body:.1f})" if body else "<= 4 x body_mb", lambda v: v <= 4 * body
    )
    check("create_ratio_to_floor_bedrock", "<= 3.0", lambda v: v <= 3.0)
    # the screen must not take create beyond its target (issue 31 item 6)
    check("guardrails_create_redact_ratio_to_floor", "<= 3.0", lambda v: v <= 3.0)
    check("guardrails_redact_ratio_to_off", "<= 1.5", lambda v: v <= 1.5)
    check("collect_ratio_to_floor", "<= 3.0", lambda v: v <= 3.0)
    check("collect_ratio_to_floor_bedrock", "<= 3.0", lambda v: v <= 3.0)
    check(
        "collect_peak_rss_mb",
        "both <= 64 and flat",
        lambda v: all(x <= 64 for x in v.values()) and len(v) == 2 and values.get("collect_flat") is True,
    )
    api = _api_modules(details)
    check(
        "import_ratio_to_floor",
        f"every API handler <= {IMPORT_MAX_API_RATIO}",
        lambda v: bool(api) and all(r is not None and r <= IMPORT_MAX_API_RATIO for r in api.values()),
    )
    check("history_events_24h", "<= 1500", lambda v: v <= 1500)
    check("transitions_24h", "<= 600", lambda v: v <= 600)
    check("history_model_matches_moto", "true (one job through the local stack)", lambda v: v is True)
    check(
        "anthropic_submit_growth_ratio",
        f"<= {SUBMIT_MAX_GROWTH_RATIO} x chunk bytes",
        lambda v: v <= SUBMIT_MAX_GROWTH_RATIO,
    )
    check(
        "asset_mb", "API functions carry no provider SDK", lambda v: values.get("api_bundle_has_provider_sdk") is False
    )
    check("compat_create_ratio", f"<= {COMPAT_MAX_RATIO} x native create", lambda v: v <= COMPAT_MAX_RATIO)
    check("compat_create_ratio_anthropic", f"<= {COMPAT_MAX_RATIO} x native create", lambda v: v <= COMPAT_MAX_RATIO)
    check("estimate_dry_run_ratio", f"<= {ESTIMATE_MAX_RATIO} x create", lambda v: v <= ESTIMATE_MAX_RATIO)
    check(
        "plan_resumed_cpu_ratio",
        f"<= {PLAN_MAX_RESUMED_RATIO} x one uninterrupted plan, the same chunks",
        lambda v: v <= PLAN_MAX_RESUMED_RATIO and values.get("plan_resumed_same_chunks") is True,
    )
    check("plan_resumed_peak_rss_mb", f"<= {PLAN_MAX_PEAK_RSS_MB} (1 GiB input)", lambda v: v <= PLAN_MAX_PEAK_RSS_MB)
    for provider, push in lag_bench.PUSH.items():
        bound = lag_bench.TARGETS[f"{provider}_p95_lag_s"]
        how = "prediction, no push" if push is None else "provider push"
        check(f"lag_p95_s_{provider}", f"<= {bound} s ({how})", lambda v, bound=bound: v <= bound)
    most = lag_bench.TARGETS["transitions_per_24h_job"]
    check("transitions_per_24h_job", f"<= {most}", lambda v: v <= most)
    check("scale_all_jobs_finished", "true (1,000 jobs, 20 owners, a week)", lambda v: v is True)
    check("scale_chunks_failed_for_quota", "0", lambda v: v == scale_sim.TARGETS["chunks_failed_for_quota"])
    fair = scale_sim.TARGETS["fairness_equal_loads"]
    check("scale_fairness_equal_loads", f"<= {fair} (max/min completion, equal loads)", lambda v: v <= fair)
    share = infra_cost.TARGET_SHARE_OF_SAVING
    check("infra_cost_share_of_saving", f"< {share:.0%} of the batch saving (100,000 requests)", lambda v: v < share)
    check(
        "overhead_create_ratio",
        f"<= {OVERHEAD_MAX_CREATE_RATIO} x the SDK's create (local stack included)",
        lambda v: v <= OVERHEAD_MAX_CREATE_RATIO,
    )
    check(
        "overhead_results_ratio",
        f"<= {OVERHEAD_MAX_RESULTS_RATIO} x the SDK's results()",
        lambda v: v <= OVERHEAD_MAX_RESULTS_RATIO,
    )
    check("chaos_violations", "0 (every invariant, every seed)", lambda v: v == 0)
    check(
        "cache_saving_ratio",
        " and ".join(f"{p} <= {r}" for p, r in CACHE_MAX_RATIO.items()) + " (auto over off)",
        lambda v: all(v[p] <= r for p, r in CACHE_MAX_RATIO.items()),
    )
    check(
        "cache_read_share",
        f">= {CACHE_MIN_READ_SHARE} of the shared tokens, each provider",
        lambda v: all(v[p] >= CACHE_MIN_READ_SHARE for p in CACHE_MAX_RATIO),
    )
    distinct = DEDUP_N - int(DEDUP_N * DEDUP_SHARE)
    check(
        "dedup_sent",
        f"== {distinct:,} of {DEDUP_N:,} (the distinct ones, each once)",
        lambda v: v == distinct and values.get("dedup_sent_all_distinct") is True,
    )
    check(
        "dedup_plan_cpu_ratio",
        f"<= {DEDUP_MAX_PLAN_RATIO} x a plan without duplicates",
        lambda v: v <= DEDUP_MAX_PLAN_RATIO,
    )
    check(
        "deadline_on_time_share",
        ">= 0.995 (items delivered by the deadline, under a stall at 40 %)",
        lambda v: v >= 0.995,
    )
    check("deadline_cost_ratio_to_all_sync", "<= 0.85 (the job's cost / all synchronous)", lambda v: v <= 0.85)
    check("deadline_billed_twice_share", "<= 0.005 (each listed in deadline.json)", lambda v: v <= 0.005)
    check("deadline_no_stall_cost_ratio_to_plain_batch", "<= 1.01 (no early fallback)", lambda v: v <= 1.01)
    check("failover_items_on_the_other_provider", "every item, on the equivalent model", lambda v: v is True)
    check("failover_door_lines_parse", "every door output line with the SDK's types", lambda v: v is True)
    check("failover_costs_add_up", "per-provider costs == the job's cost", lambda v: v is True)
    check("reuse_provider_calls", "== 0 (every request answered from stored results)", lambda v: v == 0)
    check("reuse_cost_usd", "== 0", lambda v: v == 0)
    check("reuse_results_identical", "every item's text and status the first job's", lambda v: v is True)
    check(
        "reuse_time_ratio",
        f"<= {REUSE_MAX_TIME_RATIO} x its create call (accepted to finished)",
        lambda v: v <= REUSE_MAX_TIME_RATIO,
    )
    return result


# --- output --------------------------------------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if value is None:
        return "ERROR"
    return str(value)


def table(values: dict[str, Any], checks: dict[str, dict[str, Any]], details: dict[str, Any]) -> str:
    rows: list[tuple[str, str, str, str]] = []
    api = _api_modules(details)
    shown = set()
    for key, check in checks.items():
        value = values.get(key)
        verdict = "PASS" if check["pass"] else ("ERROR" if value is None else "FAIL")
        if key == "import_ratio_to_floor" and isinstance(value, dict):
            worst = max(api.items(), key=lambda kv: kv[1] or 0, default=("-", None))
            measure = details.get("imports", {}).get("ratio_measure", "")
            rows.append((key, f"max API {worst[1]} ({worst[0]}; {measure})", check["target"], verdict))
            kinds = {m: r.get("kind", "") for m, r in details.get("imports", {}).get("modules", {}).items()}
            for module, ratio in value.items():
                rows.append(
                    (
                        f"  {module}",
                        _fmt(ratio),
                        f"<= {IMPORT_MAX_API_RATIO}" if module in api else f"({kinds.get(module)})",
                        "",
                    )
                )
        elif key == "asset_mb" and isinstance(value, dict):
            sdk = values.get("api_bundle_has_provider_sdk")
            rows.append((key, f"api_bundle_has_provider_sdk={sdk}", check["target"], verdict))
            for name, size in value.items():
                rows.append((f"  {name}", f"{size} MB", "", ""))
        elif key == "collect_peak_rss_mb" and isinstance(value, dict):
            rows.append(
                (
                    key,
                    ", ".join(f"{k}: {v}" for k, v in value.items()) + f"; flat={values.get('collect_flat')}",
                    check["target"],
                    verdict,
                )
            )
        elif key == "create_peak_rss_mb":
            rows.append((key, f"{_fmt(value)} (body_mb {values.get('body_mb')})", check["target"], verdict))
        else:
            rows.append((key, _fmt(value), check["target"], verdict))
        shown.add(key)
    for key, value in values.items():
        if key not in shown and key not in (
            "body_mb",
            "api_bundle_has_provider_sdk",
            "collect_flat",
            "plan_resumed_same_chunks",
        ):
            rows.append((key, _fmt(value), "(info)", ""))
    widths = [max(len(r[i]) for r in [("key", "value", "target", "result"), *rows]) for i in range(4)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [line.format("key", "value", "target", "result"), line.format(*("-" * w for w in widths))]
    out += [line.format(*row) for row in rows]
    return "\n".join(out)


def _merge_into_summary(partial: dict[str, Any], steps: list[str]) -> None:
    """Fold a subset run into summary.json: its values, targets and details replace the old ones; the rest stay
    from the last full run, and ``reruns`` says which steps are newer and when they ran."""
    path = RESULTS_DIR / "summary.json"
    summary = json.loads(path.read_text())
    for key, value in partial.items():
        if key not in (
            "generated_at",
            "machine",
            "units",
            "targets",
            "all_targets_met",
            "errors",
            "bench_wall_s",
            "details",
        ):
            summary[key] = value
    summary["targets"].update(partial["targets"])
    summary["details"].update(partial["details"])
    summary.setdefault("reruns", {}).update({step: partial["generated_at"] for step in steps})
    summary["all_targets_met"] = all(c["pass"] for c in summary["targets"].values()) and not summary.get("errors")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(summary, indent=1, default=str) + "\n")
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", help=f"comma separated subset of {','.join(STEPS)}")
    parser.add_argument(
        "--merge", action="store_true", help="with --only: also fold the rerun steps' figures into summary.json"
    )
    parser.add_argument("--profile", action="store_true", help="write cProfile stats to bench/.cache/profiles/")
    args = parser.parse_args(argv)
    ensure_paths()
    os.chdir(REPO_ROOT)
    steps = [s.strip() for s in args.only.split(",")] if args.only else list(STEPS)
    unknown = set(steps) - set(STEPS)
    if unknown:
        parser.error(f"unknown steps {sorted(unknown)}; known: {', '.join(STEPS)}")
    if args.profile:
        PROFILES.mkdir(parents=True, exist_ok=True)

    started = time.monotonic()
    ctx: dict[str, Any] = {"profile": args.profile}
    values: dict[str, Any] = {}
    details: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for step in steps:
        _log(f"{step} ...")
        step_started = time.monotonic()
        try:
            step_values, step_details = STEP_FUNCTIONS[step](ctx)
            values.update(step_values)
            details[step] = {**step_details, "step_s": round(time.monotonic() - step_started, 1)}
        except Exception as exc:
            errors[step] = f"{type(exc).__name__}: {exc}"[-3000:]
            _log(f"{step} FAILED:\n{traceback.format_exc()}")
        _log(f"{step} done in {time.monotonic() - step_started:.0f} s")

    checks = {k: v for k, v in targets(values, details).items() if args.only is None or k in values}
    summary = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "units": "MB are MiB (2**20 bytes); ratios are medians of the measured call over medians of its floor",
        **values,
        "targets": checks,
        "all_targets_met": bool(checks) and all(c["pass"] for c in checks.values()) and not errors,
        "errors": errors,
        "bench_wall_s": round(time.monotonic() - started, 1),
        "details": details,
    }
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    target = RESULTS_DIR / ("summary.json" if args.only is None else "partial.json")
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(summary, indent=1, default=str) + "\n")
    tmp.replace(target)

    if args.merge and args.only is not None and not errors:
        _merge_into_summary(summary, steps)

    print(table(values, checks, details))
    print(
        f"\nall_targets_met: {summary['all_targets_met']}   wall time: {summary['bench_wall_s']:.0f} s   "
        f"-> {Path(target).relative_to(REPO_ROOT)}"
    )
    for step, error in errors.items():
        print(f"ERROR in {step}: {error.splitlines()[0] if error else ''}")
    return 0
