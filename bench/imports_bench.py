"""Cold import of every Lambda entry module, in a fresh interpreter, against the floor of Powertools + boto3.

The figure held to the target (decision 0110) is the instructions a fresh interpreter executes for ``import
<module>`` over those of the floor, counted by valgrind's callgrind: exact, and the same on a quiet or a loaded
machine, where this VM's CPU time for one import varies by a quarter from one sample to the next. Without valgrind
the CPU-time ratio below is the figure.

Each CPU-time sample is a new interpreter that times ``import <module>`` alone and exits with ``os._exit`` (so
interpreter start, ``site`` and teardown are left out, and nothing instruments the imports). It is the process's CPU
time, user and system together (``time.process_time``): the import is CPU-bound once the files are in the page cache,
and CPU time does not grow when other processes share the two cores, as wall time does. User time alone is not
used: the kernel splits a process's CPU time into user and system by sampling at each timer tick, so over a 100 ms
import the split moves by about +-8 % while the total is exact (decision 0090). User and wall time are recorded
beside it.

Floor: ``from aws_lambda_powertools import Logger, Tracer, Metrics; import boto3``. A second floor that also
instantiates Logger, Tracer and Metrics (as every handler does; ``Tracer()`` loads aws_xray_sdk) is reported
beside it. One warm-up run per module first (so every .pyc exists), then ``runs`` rounds over all modules in turn;
the figure is the median per module. Each sample also lists the provider SDKs the import loaded (should be none).
"""

from __future__ import annotations

import ast
import concurrent.futures
import functools
import re
import shutil
import statistics
import subprocess
import sys
from typing import Any

from bench.common import REPO_ROOT, child_env

BRIEF_MODULES = (
    "lambdas.create",
    "lambdas.status",
    "lambdas.retrieve",
    "lambdas.list_jobs",
    "lambdas.cancel",
    "lambdas.plan",
    "lambdas.submit",
    "lambdas.poll",
    "lambdas.finalize",
    "lambdas.mark_failed",
)
FLOOR = "from aws_lambda_powertools import Logger, Tracer, Metrics; import boto3"


def handler_modules() -> dict[str, str]:
    """module -> "api" (behind an API route) | "worker" (a workflow step) | "other", from batch_gateway.constants."""
    from batch_gateway import constants

    kinds = {m: "api" for m in BRIEF_MODULES[:5]}
    kinds.update({m: "worker" for m in BRIEF_MODULES[5:]})
    for path in constants.API_HANDLERS.values():
        kinds[path.rsplit(".", 1)[0]] = "api"
    for path in constants.WORKFLOW_HANDLERS.values():
        kinds.setdefault(path.rsplit(".", 1)[0], "worker")
    for name, value in vars(constants).items():  # other entry points (drop folder, sweeper, ...)
        if not name.endswith(("_HANDLER", "_HANDLERS")):
            continue
        for handler in value.values() if isinstance(value, dict) else [value]:
            if isinstance(handler, str) and handler.startswith("lambdas."):
                kinds.setdefault(handler.rsplit(".", 1)[0], "other")
    return kinds


FLOOR_WITH_INSTANCES = FLOOR + "; Logger(service='x'); Tracer(service='x'); Metrics(namespace='x', service='x')"
# Total CPU time (user + system, CLOCK_PROCESS_CPUTIME_ID), exact to the microsecond; user time (getrusage) beside it.
_TIMED = (
    "import time as _t, os as _os, sys as _sys, resource as _r\n_w = _t.perf_counter(); _c = _t.process_time(); "
    "_u = _r.getrusage(_r.RUSAGE_SELF).ru_utime\n{code}\n"
    "_u = _r.getrusage(_r.RUSAGE_SELF).ru_utime - _u; _c = _t.process_time() - _c; _w = _t.perf_counter() - _w\n"
    "_sdk = sorted({{m.split('.')[0] for m in _sys.modules}} & {{'anthropic', 'openai', 'httpx2', 'httpx'}})\n"
    "_sys.stdout.write(repr((_c, _w, _sdk, _u))); _sys.stdout.flush(); _os._exit(0)"
)


def import_seconds_best(code: str, tries: int = 3) -> tuple[float, float, list[str], float]:
    """The fastest of ``tries`` fresh interpreters: noise on this VM only ever adds time, so the minimum is the
    steadiest estimate of one sample; the figure is still the median of such samples."""
    samples = [import_seconds(code) for _ in range(tries)]
    return min(samples, key=lambda sample: sample[0])


def import_seconds(code: str) -> tuple[float, float, list[str], float]:
    """(CPU seconds, wall seconds, provider SDK packages loaded, user CPU seconds) of ``code`` in a fresh
    interpreter."""
    proc = _child([sys.executable, "-c", _TIMED.format(code=code)], timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"python -c {code!r} failed:\n{proc.stderr[-2000:]}")
    cpu, wall, sdks, user = ast.literal_eval(proc.stdout.strip())
    return cpu, wall, sdks, user


def _child(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """A child process from the repository root with the bench's environment; its output captured as text."""
    return subprocess.run(
        args, cwd=REPO_ROOT, env=child_env(), capture_output=True, text=True, timeout=timeout, check=False
    )


def valgrind() -> str | None:
    return shutil.which("valgrind")


def instructions(code: str) -> int:
    """Instructions a fresh interpreter executes for ``code`` beyond an empty program (valgrind's callgrind; the
    interpreter's start and ``site`` are in both and cancel). Exact and the same from run to run, on a quiet machine
    or a loaded one: this VM's CPU speed varies by a quarter between samples seconds apart (decision 0110)."""
    return _instructions(code) - _instructions("pass")


@functools.cache
def _instructions(code: str) -> int:
    proc = _child(
        [valgrind() or "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c"]
        + [f"{code}\nimport os; os._exit(0)"],
        timeout=600,
    )
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        raise RuntimeError(f"callgrind of {code!r} failed:\n{proc.stderr[-2000:]}")
    return int(found.group(1))


def measure(runs: int = 5) -> dict[str, Any]:
    modules = handler_modules()
    codes = {"floor": FLOOR, "floor_with_instances": FLOOR_WITH_INSTANCES, **{m: f"import {m}" for m in modules}}
    cpu: dict[str, list[float]] = {key: [] for key in codes}
    wall: dict[str, list[float]] = {key: [] for key in codes}
    errors: dict[str, str] = {}
    sdks: dict[str, list[str]] = {}
    # The Lambda bundles are byte-compiled (stacks/bundling.py); so is the venv (UV_COMPILE_BYTECODE). Our own sources
    # are not, and this machine sets PYTHONDONTWRITEBYTECODE: compile them too, or every sample would compile them.
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "src/batch_gateway", "lambdas"],
        cwd=REPO_ROOT,
        env=child_env(),
        check=True,
        timeout=300,
    )
    try:  # warm-up: one interpreter imports everything, so every .pyc exists before the timed runs
        import_seconds("; ".join([FLOOR, *(f"import {m}" for m in modules)]))
    except RuntimeError:
        pass  # a module that does not import is reported below
    paired: dict[str, list[float]] = {m: [] for m in modules}
    paired_user: dict[str, list[float]] = {m: [] for m in modules}  # their user time (the figure before decision 0090)
    for round_ in range(runs):
        for key, code in codes.items():
            if key in errors:
                continue
            try:
                if key in modules:  # a floor sample right before each module sample: this VM's speed drifts
                    floor_cpu, _, _, floor_user = import_seconds_best(FLOOR)  # within seconds, a pair shares it
                c, w, loaded, user = import_seconds_best(code)
            except RuntimeError as exc:
                errors[key] = str(exc)[-500:]
                continue
            cpu[key].append(c)
            wall[key].append(w)
            if key in modules:
                paired[key].append(c / floor_cpu)
                paired_user[key].append(user / floor_user)
            if round_ == 0:
                sdks[key] = loaded
    counted = valgrind() is not None
    if counted:  # exact whatever else runs, so two at a time on two cores
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            list(pool.map(_instructions, ["pass", FLOOR, *(f"import {m}" for m in modules if m not in errors)]))
    floor_instructions = instructions(FLOOR) if counted else 0
    med = {key: statistics.median(v) if v else float("nan") for key, v in cpu.items()}
    med_wall = {key: statistics.median(v) if v else float("nan") for key, v in wall.items()}
    per_module = {}
    for module, kind in modules.items():
        if module in errors:
            per_module[module] = {"kind": kind, "error": errors[module]}
            continue
        cpu_ratio = round(statistics.median(paired[module]), 2)
        per_module[module] = {
            "kind": kind,
            "import_ms": round(med[module] * 1000, 1),
            # the figure held to the target: instructions when valgrind is here, else CPU time (decision 0110)
            "ratio": round(instructions(f"import {module}") / floor_instructions, 3) if counted else cpu_ratio,
            "ratio_cpu_time": cpu_ratio,
            "ratio_of_medians": round(med[module] / med["floor"], 2),
            "paired_ratios": [round(r, 2) for r in paired[module]],
            "ratio_user_time": round(statistics.median(paired_user[module]), 2),
            "paired_ratios_user_time": [round(r, 2) for r in paired_user[module]],
            "wall_ms": round(med_wall[module] * 1000, 1),
            "wall_ratio": round(med_wall[module] / med_wall["floor"], 2),
            "ratio_to_floor_with_instances": round(med[module] / med["floor_with_instances"], 2),
            "ratio_of_minima": round(min(cpu[module]) / min(cpu["floor"]), 2),
            "cpu_ms_runs": [round(v * 1000) for v in cpu[module]],
            "provider_sdks_loaded": sdks.get(module, []),
        }
    return {
        "floor_ms": round(med["floor"] * 1000, 1),
        "floor_wall_ms": round(med_wall["floor"] * 1000, 1),
        "floor_cpu_ms_runs": [round(v * 1000) for v in cpu["floor"]],
        "floor_code": FLOOR,
        "floor_with_instances_ms": round(med["floor_with_instances"] * 1000, 1),
        "floor_with_instances_code": FLOOR_WITH_INSTANCES,
        "runs": runs,
        "modules": per_module,
        "ratio_measure": "instructions (callgrind)" if counted else "CPU time (valgrind not found)",
        "floor_instructions": floor_instructions or None,
        "method": "ratio: instructions a fresh interpreter executes for the import over those of the floor "
        "(valgrind's callgrind, one run each: the count is exact), CPU time when valgrind is missing (decision "
        "0110). Beside it, ratio_cpu_time: a fresh interpreter per sample; CPU time, user and system "
        "(time.process_time), around the import "
        "statement, so other load on the machine does not count; each module sample is paired with a floor sample "
        "taken just before it, and the ratio is the median of the paired ratios; user time alone (the kernel "
        "splits it from system time by sampling at each tick, decision 0090) and wall time beside it",
    }


def _importtime_self(code: str) -> dict[str, int]:
    """module -> self import time in microseconds (``python -X importtime``)."""
    proc = _child([sys.executable, "-X", "importtime", "-c", code], timeout=120)
    found = {}
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "cumulative" not in line:
            own, _, name = line[len("import time:") :].split("|", 2)
            found[name.strip()] = int(own)
    return found


def extra_imports(module: str, runs: int = 3, top: int = 8) -> dict[str, Any]:
    """What ``module`` imports beyond the floor, by top-level package: median self time under ``-X importtime``
    (which inflates every import a little, so compare the packages with each other, not with the CPU figures)."""
    floor_modules = set(_importtime_self(FLOOR))
    samples: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    for _ in range(runs):
        by_package: dict[str, float] = {}
        names = _importtime_self(f"import {module}")
        for name, own in names.items():
            if name not in floor_modules:
                package = name.split(".")[0]
                by_package[package] = by_package.get(package, 0) + own / 1000
        counts = {p: sum(1 for n in names if n not in floor_modules and n.split(".")[0] == p) for p in by_package}
        for package, ms in by_package.items():
            samples.setdefault(package, []).append(ms)
    ranked = sorted(((p, statistics.median(v)) for p, v in samples.items()), key=lambda kv: -kv[1])
    return {
        "module": module,
        "packages_ms": {p: round(ms, 1) for p, ms in ranked[:top]},
        "modules_beyond_floor": sum(counts.values()),
        "total_ms": round(sum(ms for _, ms in ranked), 1),
    }
