"""The cold path of each context function, measured as Lambda pays it.

A fresh interpreter (`python -I -B`: no user site, no environment-set paths, no bytecode
written) imports the handler from a layer folder built like `make build` builds it, then handles
one real event: the ports are built, the first database statement and the first graph query run.
Two layer folders: precompiled (`compileall --invalidation-mode unchecked-hash`, as `make build`
ships them) and without bytecode (the old `--no-compile` layers on read-only `/opt`).

The layer holds the runtime dependencies' installed files (the closure of pyproject's
[project].dependencies in this environment) and the heirloom package without `local/`. boto3 and
botocore are in it too, compiled or not with the rest: on Lambda the runtime's copy is always
precompiled, so the no-bytecode rows overstate by their share where a function imports them. The local stand-ins the handlers
talk to here (FalkorDB client, the ONNX embedder) are not in the layer: they come from this
environment after it, with their bytecode, in both variants.

The events are those the context workflow hands each function: one run of the real ASL in moto's
interpreter (`capture_events`), read from its history.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

#: the five functions of the context workflow (the ones with tight Task timeouts)
CONTEXT_FUNCTIONS = ("intent_analysis", "vector_search", "graph_traversal", "access_filter", "rank_assemble")
#: the ingestion and backfill Tasks' functions (a story already current: their cold part only)
INGESTION_FUNCTIONS = ("chunk_embed", "extract_entities", "graph_sync", "backfill_plan")
#: Task functions not measured, and why
NOT_MEASURED = {
    "ingest_failed": "runs only after a failure and records one: measuring it would write a failure record",
    "connections_plan": "story_connections is not in this bench yet; its path is AccessFilter's (the read"
    " scope and one story read), with AccessFilter's timeout and retry",
    "connections_assemble": "story_connections is not in this bench yet; pure grouping and formatting,"
    " lighter than RankAssemble (no tokenizer), with its timeout and retry",
    "communities_rebuild": "a scheduled background rebuild, not on a user's path: its 600 s Task"
    " timeout bounds a whole run of every legacy's detection, not a cold start",
}

SNIPPET = """
import importlib.util, json, sys, time
layer, handler_path, event_path = sys.argv[1:4]
sys.path[:0] = [layer]
sys.path.append(sys.argv[4])  # this environment's site-packages: the local stand-ins only
t0 = time.perf_counter()
spec = importlib.util.spec_from_file_location("handler", handler_path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
t1 = time.perf_counter()

class Context:
    function_name = "cold"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:cold"
    memory_limit_in_mb = 1024
    aws_request_id = "cold-path"
    log_group_name = "/aws/lambda/cold"
    log_stream_name = "cold"
    def get_remaining_time_in_millis(self):
        return 3000

with open(event_path) as fh:
    event = json.load(fh)
module.handler(event, Context())
t2 = time.perf_counter()
sys.stdout.flush()
print(json.dumps({"import_ms": (t1 - t0) * 1000, "invoke_ms": (t2 - t1) * 1000}))
"""


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def dependency_closure(requirements: Iterable[str]) -> list[metadata.Distribution]:
    """The installed distributions `requirements` need, extras and markers evaluated."""
    from packaging.requirements import Requirement

    seen: dict[str, set[str]] = {}
    dists: dict[str, metadata.Distribution] = {}
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = _canonical(req.name)
        extras = set(req.extras)
        if name in seen and extras <= seen[name]:
            continue
        seen[name] = seen.get(name, set()) | extras
        dist = dists.setdefault(name, metadata.distribution(req.name))
        for text in dist.requires or []:
            sub = Requirement(text)
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in {"", *seen[name]}):
                todo.append(sub)
    return list(dists.values())


def build_layer(dest: Path, root: Path, *, compiled: bool) -> Path:
    """A layer folder (`dest`) of this environment's runtime dependencies and the heirloom
    package, compiled as `make build` compiles it when `compiled`."""
    with (root / "pyproject.toml").open("rb") as fh:
        requirements = tomllib.load(fh)["project"]["dependencies"]
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    site = Path(sysconfig.get_paths()["purelib"]).resolve()
    for dist in dependency_closure(requirements):
        for file in dist.files or []:
            source = Path(str(dist.locate_file(file))).resolve()
            if "__pycache__" in source.parts or source.suffix == ".pyc" or not source.is_file():
                continue
            try:
                relative = source.relative_to(site)
            except ValueError:  # scripts and data outside site-packages
                continue
            target = dest / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    # as the shared layer ships it (cdk.build_layers.copy_shared): no caches
    shutil.copytree(
        root / "layers" / "shared" / "python" / "heirloom",
        dest / "heirloom",
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
    )
    if compiled:
        from cdk.build_layers import compile_tree

        compile_tree(dest)
    return dest


def capture_events(history: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """function folder -> the Payload its Task sent, from a context execution's history."""
    from heirloom_dev.functions import function_names, state_name

    by_state = {state_name(f): f for f in function_names()}
    out: dict[str, Any] = {}
    for event in history:
        details = event.get("taskScheduledEventDetails")
        if not details:
            continue
        params = json.loads(details["parameters"])
        function = str(params.get("FunctionName", "")).rsplit(":", 1)[-1]
        if function in by_state:
            out.setdefault(by_state[function], params["Payload"])
    return out


def summary(values: Sequence[float]) -> dict[str, float]:
    from heirloom_dev.bench.stats import percentile

    return {
        "p50": round(percentile(values, 50), 1),
        "p95": round(percentile(values, 95), 1),
        "max": round(max(values), 1),
    }


def measure(
    root: Path,
    layer: Path,
    events: Mapping[str, Any],
    env: Mapping[str, str],
    runs: int,
    workdir: Path,
) -> dict[str, dict[str, Any]]:
    """Per function: import, first invocation and their sum over `runs` fresh interpreters."""
    site = sysconfig.get_paths()["purelib"]
    out: dict[str, dict[str, Any]] = {}
    for folder, event in sorted(events.items()):
        event_path = workdir / f"{folder}.json"
        event_path.write_text(json.dumps(event))
        handler = root / "functions" / folder / "handler.py"
        imports: list[float] = []
        invokes: list[float] = []
        for _ in range(max(1, runs)):
            proc = subprocess.run(
                [sys.executable, "-I", "-B", "-c", SNIPPET, str(layer), str(handler), str(event_path), site],
                capture_output=True,
                text=True,
                env=dict(env),
                cwd=workdir,
                timeout=120,
                check=False,
            )
            if proc.returncode != 0:
                raise RuntimeError(f"cold path of {folder} failed: {proc.stderr[-2000:]}")
            last = json.loads(proc.stdout.strip().splitlines()[-1])
            imports.append(last["import_ms"])
            invokes.append(last["invoke_ms"])
        totals = [a + b for a, b in zip(imports, invokes, strict=True)]
        out[folder] = {
            "import_ms": summary(imports),
            "first_invocation_ms": summary(invokes),
            "total_ms": summary(totals),
            "runs": len(totals),
        }
    return out


def cold_path(
    root: Path, events: Mapping[str, Any], env: Mapping[str, str], runs: int, workdir: Path
) -> dict[str, Any]:
    """Both variants: {"precompiled": {...}, "no_bytecode": {...}} (see `measure`)."""
    result: dict[str, Any] = {"runs": runs, "functions": sorted(events)}
    for variant, compiled in (("precompiled", True), ("no_bytecode", False)):
        layer = build_layer(workdir / f"layer-{variant}", root, compiled=compiled)
        try:
            result[variant] = measure(root, layer, events, env, runs, workdir)
        finally:
            shutil.rmtree(layer, ignore_errors=True)
    return result


#: docs/benchmarks.md keeps the cold-path section between these lines across full bench runs
SECTION_START = "<!-- cold-path: heirloom bench --cold-path -->"
SECTION_END = "<!-- /cold-path -->"
#: margin each Task's TimeoutSeconds keeps over the measured cold p95 (x86, 1024 MB here vs
#: Lambda's 512-1024 MB share of a vCPU, a VPC ENI already attached, TLS to RDS Proxy / Neptune)
TIMEOUT_MARGIN = 1.5


def render_section(result: Mapping[str, Any]) -> str:
    lines = [
        SECTION_START,
        "## Cold path per function",
        "",
        f"Written by `heirloom bench --cold-path --runs {result['runs']}` on {result.get('date', '?')} "
        f"(JSON: `docs/cold-path.json`, read by tests/statemachines/test_cold_path_timeouts.py). A fresh "
        "interpreter (`python -I -B`) imports the handler from a layer folder built as `make build` builds "
        "it, then handles the event its workflow gave it (the sample legacy's first demo question, and "
        "the ingestion of its first story, already current) on the local stack: ports built, first "
        "PostgreSQL statement, first graph query. "
        "`precompiled`: the layer's `.pyc` files (unchecked-hash); `no bytecode`: what the layers "
        "built with `--no-compile` cost on read-only `/opt`. The local stand-ins (FalkorDB client, ONNX "
        "embedder) keep their bytecode in both. The first call here includes loading the local ONNX "
        "embedder (VectorSearch), where Lambda builds a Bedrock client and calls Titan.",
        "",
        f"1-minute load average {result.get('load_avg', ['?', '?'])[0]} when the run started and "
        f"{result.get('load_avg', ['?', '?'])[-1]} when it ended, on {result.get('cpus', '?')} CPUs shared "
        "with other work: the figures are upper bounds of this machine's cold path.",
        "",
        "| function | variant | import p50 | import p95 | first call p50 | first call p95 | total p50 | total p95 |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for function in result["functions"]:
        for variant, label in (("precompiled", "precompiled"), ("no_bytecode", "no bytecode")):
            row = result[variant][function]
            lines.append(
                f"| {function} | {label} | {row['import_ms']['p50']} | {row['import_ms']['p95']} | "
                f"{row['first_invocation_ms']['p50']} | {row['first_invocation_ms']['p95']} | "
                f"{row['total_ms']['p50']} | {row['total_ms']['p95']} |"
            )
    lines += [
        "",
        f"Each Task's `TimeoutSeconds` in `statemachines/*.asl.json` is at least the precompiled total "
        f"p95 times {TIMEOUT_MARGIN:g} (Lambda's CPU share at 512-1024 MB, the Secrets Manager fetch and "
        "TLS handshakes this machine does not pay), rounded up to whole seconds; a test reads both. "
        "Not measured: " + "; ".join(f"`{k}` ({v})" for k, v in NOT_MEASURED.items()) + ".",
        SECTION_END,
    ]
    return "\n".join(lines) + "\n"


def merge_section(document: str, section: str) -> str:
    """`document` with its cold-path section replaced by `section` (appended if it has none)."""
    if SECTION_START in document and SECTION_END in document:
        head, rest = document.split(SECTION_START, 1)
        tail = rest.split(SECTION_END, 1)[1].lstrip("\n")
        return head + section + ("\n" + tail if tail else "")
    return document.rstrip("\n") + "\n\n" + section


def section_of(document: str) -> str | None:
    """The cold-path section of `document` (markers included), if it has one."""
    if SECTION_START not in document or SECTION_END not in document:
        return None
    return SECTION_START + document.split(SECTION_START, 1)[1].split(SECTION_END, 1)[0] + SECTION_END + "\n"
