"""Statistics, the targets they are judged by, the machine they ran on, cold imports and layer sizes."""

from __future__ import annotations

import contextlib
import os
import platform
import resource
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

IMPORT_RUNS = 5

#: p95 targets (ms) at 10k stories on a 2-core machine; "traversal." applies to every template
STAGE_TARGETS_MS: dict[str, float] = {
    "vector_search": 15.0,
    "traversal.": 15.0,
    "access_filter": 10.0,
    "rank_budget_format": 10.0,
    "domain_pipeline": 60.0,
    "domain_pipeline_parallel": 60.0,
}
COLD_IMPORT_TARGET_MS = 300.0
INGEST_TARGET_STORIES_PER_S = 20.0
#: layers that `make build` writes under build/layers/
BUILT_LAYERS = ("deps", "tiktoken")

ProgressFn = Callable[[str], None]


# -- statistics and environment ---------------------------------------------------------------
def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100), linear interpolation between closest ranks (numpy's default)."""
    if not values:
        raise ValueError("no values")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _summary(values: Sequence[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values, 50), 2), "p95_ms": round(percentile(values, 95), 2)}


def stage_target(stage: str) -> float | None:
    for prefix, target in STAGE_TARGETS_MS.items():
        if stage == prefix or (prefix.endswith(".") and stage.startswith(prefix)):
            return target
    return None


def verdict(value: float, target: float, *, higher_is_better: bool = False, unit: str = "ms") -> str:
    missed = value < target if higher_is_better else value > target
    if not missed:
        return "ok"
    gap = abs(value - target)
    return f"missed by {gap:.1f} {unit} ({gap / target * 100:.0f}%)"


def _load_average() -> float:
    """The 1-minute load average (runnable processes; 2.0 fills two cores)."""
    with contextlib.suppress(OSError, AttributeError):
        return round(os.getloadavg()[0], 2)
    return 0.0


def machine_info() -> dict[str, Any]:
    model = platform.processor() or platform.machine()
    mem_gb = 0.0
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_gb = int(line.split()[1]) / 1024 / 1024
    return {
        "cpus": os.cpu_count() or 0,
        "cpu_model": model,
        "memory_gb": round(mem_gb, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # KiB on Linux


def layer_sizes(root: Path) -> tuple[dict[str, float], list[str]]:
    """MB (2^20 bytes, as Lambda's 250 MB limit counts) of each layer folder, without caches;
    and the built layers that are missing."""
    from cdk.build_layers import dir_mb

    sizes = {"shared": dir_mb(root / "layers" / "shared" / "python")}
    missing = []
    for name in BUILT_LAYERS:
        path = root / "build" / "layers" / name
        if path.is_dir() and any(path.iterdir()):
            sizes[name] = dir_mb(path)
        else:
            missing.append(name)
    return sizes, missing


IMPORT_SNIPPET = """
import importlib.util, sys, time
t = time.perf_counter()
spec = importlib.util.spec_from_file_location("bench_handler", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print((time.perf_counter() - t) * 1000)
"""


def lambda_import_env(root: Path) -> dict[str, str]:
    """The environment a handler module is imported in on Lambda: the runtime's variables make
    the X-Ray SDK take its Lambda path (the trace context comes from the runtime, no sampling
    client); elsewhere its recorder builds a botocore X-Ray client at import, ~300 ms that a
    function never pays on Lambda."""
    return {
        **os.environ,
        "LAMBDA_TASK_ROOT": str(root),
        "AWS_LAMBDA_FUNCTION_NAME": "bench",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.11",
        "POWERTOOLS_SERVICE_NAME": "heirloom",
        "POWERTOOLS_METRICS_NAMESPACE": "Heirloom",
        "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
    }


def cold_imports(root: Path, runs: int, functions: Sequence[str] | None = None) -> dict[str, float]:
    """Median over `runs` fresh interpreters of the time to import each handler module by path
    in Lambda's environment (interpreter start-up excluded; bytecode caches and the OS page cache
    are warm)."""
    env = lambda_import_env(root)
    names = sorted(
        functions
        if functions is not None
        else (p.name for p in (root / "functions").iterdir() if (p / "handler.py").is_file())
    )
    return {
        name: _median_ms([IMPORT_SNIPPET, str(root / "functions" / name / "handler.py")], env, root, runs)
        for name in names
    }


def _median_ms(args: Sequence[str], env: dict[str, str], root: Path, runs: int) -> float:
    """Median over `runs` fresh interpreters (`python -c *args`) of the ms each one prints last."""
    times = []
    for _ in range(max(1, runs)):
        proc = subprocess.run(
            [sys.executable, "-c", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=root,
            timeout=120,
            check=True,
        )
        times.append(float(proc.stdout.strip().splitlines()[-1]))
    return round(statistics.median(times), 1)


#: what every handler's cold import is made of, each part timed after the ones before it in a
#: fresh interpreter; the "first use" ones are what a function pays when it first builds its
#: ports, not at import
IMPORT_PARTS: tuple[tuple[str, str], ...] = (
    (
        "Powertools Logger + Metrics",
        "from aws_lambda_powertools import Logger, Metrics\nLogger(); Metrics()",
    ),
    (
        "Powertools Tracer (X-Ray SDK, no patching)",
        "from aws_lambda_powertools import Tracer\nTracer(auto_patch=False)",
    ),
    (
        "contracts + settings (pydantic models)",
        "import heirloom.contracts.context, heirloom.settings, heirloom.edges, heirloom.ports",
    ),
    (
        "first use: PostgreSQL adapter (psycopg, pgvector)",
        "import heirloom.adapters.postgres, pgvector.psycopg",
    ),
    ("first use: FalkorDB adapter (falkordb, redis)", "import heirloom.adapters.falkor, falkordb"),
    (
        "first use: X-Ray patches (botocore, requests)",
        "from heirloom.observability import trace_library_calls\ntrace_library_calls()",
    ),
)

PART_SNIPPET = """
import sys, time
setup, code = sys.argv[1], sys.argv[2]
exec(setup)
t = time.perf_counter()
exec(code)
print((time.perf_counter() - t) * 1000)
"""


def import_parts(root: Path, runs: int) -> dict[str, float]:
    """Median ms of each `IMPORT_PARTS` entry, in a fresh interpreter after the entries before it."""
    env = lambda_import_env(root)
    return {
        name: _median_ms([PART_SNIPPET, "\n".join(c for _, c in IMPORT_PARTS[:i]), code], env, root, runs)
        for i, (name, code) in enumerate(IMPORT_PARTS)
    }


class _Sink:
    """Swallows what handlers print (Powertools metrics and log lines) during the workflow stage."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        return None
