"""Operations commands: backfill, bench (and its cold path), smoke, seed, invoke, intent-model."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from heirloom.settings import get_settings
from heirloom_dev.cli_common import EXIT_BAD_INPUT, _use_local_stack


def _cmd_backfill(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from heirloom.contracts.ingestion import BackfillRequest
    from heirloom.edges import reason
    from heirloom_dev.workflow import LocalWorkflows

    if args.rebuild_graph:
        from heirloom.domain.graph_rebuild import rebuild_graph
        from heirloom_dev.runtime import list_legacy_ids

        runtime = _use_local_stack(write=True)
        report = rebuild_graph(runtime.ports, list_legacy_ids(runtime.db))
        print(
            f"graph rebuilt: {report.legacies} legacies, {report.persons} persons,"
            f" {report.relationships} relationships, {report.links} links, {report.stories} stories"
            f" ({report.enriched} with their entities extracted again)"
        )
        return 0
    try:  # refused here, before the workflow starts, with the contract's reason
        cursor = BackfillRequest(page_size=args.page_size, stories_per_execution=args.stories_per_execution)
    except ValidationError as exc:
        print(f"heirloom backfill: {reason(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _use_local_stack(write=True)  # its runtime unmarks the stories whose graph facts were lost
    payload = {
        "next": cursor.model_dump(mode="json", exclude={"planned", "continued_from"}),
        "pace_seconds": args.pace,
    }
    with LocalWorkflows().start() as workflows:
        chain = workflows.run_chain("backfill", payload, timeout_s=3600)
        execution = chain[-1]
        processed = workflows.invocations.count("GraphSync")
        failed = workflows.invocations.count("IngestFailed")
    print(
        f"backfill {execution.status.lower()}: {processed} stories processed, {failed} failed"
        + (f" in {len(chain)} executions" if len(chain) > 1 else "")
        + (" (nothing to do)" if processed == 0 and failed == 0 else "")
    )
    return 0 if execution.status == "SUCCEEDED" and failed == 0 else 1


def _cmd_cold_path(args: argparse.Namespace) -> int:
    """Cold path of the five context functions on the local stack with the sample legacy."""
    import tempfile
    from datetime import UTC, datetime

    from heirloom.contracts.context import ContextRequest
    from heirloom_dev import coldpath
    from heirloom_dev.bench.stats import lambda_import_env
    from heirloom_dev.loader import load_dataset
    from heirloom_dev.runtime import project_root
    from heirloom_dev.workflow import LocalContextWorkflow, LocalWorkflows

    root = project_root()
    sample = root / "examples" / "sample-legacy"
    runtime = _use_local_stack(write=True)  # loads the sample legacy when it is not there yet
    load_dataset(runtime.ports, sample)
    plan = json.loads((sample / "demo.json").read_text())
    question = plan["questions"][0]
    request = ContextRequest(
        legacy_id=plan["legacy_id"],
        user_id=question["user_id"],
        persona=question["persona"],
        query=question["query"],
    )
    story_id = json.loads((sample / "stories.jsonl").read_text().splitlines()[0])["id"]
    with LocalWorkflows().start() as workflows:
        runner = LocalContextWorkflow(workflows, history=True)
        runner.run(request)
        assert runner.last is not None
        events = coldpath.capture_events(runner.last.history)
        ingest = workflows.run("ingest_story", {"story_id": story_id}, timeout_s=120)
        events.update(coldpath.capture_events(ingest.history))
    # the plan alone: with `execution` it would list executions in a real account
    events["backfill_plan"] = {"request": {"after": None, "page_size": 50}}
    measured = (*coldpath.CONTEXT_FUNCTIONS, *coldpath.INGESTION_FUNCTIONS)
    events = {f: e for f, e in events.items() if f in measured}
    env = {**lambda_import_env(root), **{k: v for k, v in os.environ.items() if k.isupper()}}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="heirloom-cold-") as work:
        result = coldpath.cold_path(root, events, env, args.runs, Path(work))
    result["date"] = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    result["load_avg"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    result["cpus"] = os.cpu_count()
    section = coldpath.render_section(result)
    if not args.no_write:  # a measurement under other settings leaves the committed figures alone
        (root / "docs" / "cold-path.json").write_text(json.dumps(result, indent=2) + "\n")
        docs = root / "docs" / "benchmarks.md"
        docs.write_text(coldpath.merge_section(docs.read_text(), section))
    print(section)
    return 0


def _cmd_smoke(args: argparse.Namespace) -> int:
    from heirloom_dev.smoke import SmokeFailed, smoke

    password = os.environ.get("HEIRLOOM_SMOKE_PASSWORD", "")
    if not password:
        print("heirloom smoke: set HEIRLOOM_SMOKE_PASSWORD (the user's password)", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        print(
            smoke(
                stack=args.stack,
                legacy_id=args.legacy,
                username=args.username,
                password=password,
                query=args.question,
                persona=args.persona,
                totp_secret=os.environ.get("HEIRLOOM_SMOKE_TOTP_SECRET", ""),
            )
        )
    except SmokeFailed as exc:
        print(f"heirloom smoke: {exc}", file=sys.stderr)
        return 1
    return 0


def _cmd_seed(args: argparse.Namespace) -> int:
    import boto3

    from heirloom_dev.loader import DatasetError
    from heirloom_dev.seed import SeedError, seed
    from heirloom_dev.smoke import SmokeFailed, outputs_of

    try:
        usernames = json.loads(Path(args.users).read_text())
        if not isinstance(usernames, dict):
            raise SeedError(f"{args.users}: expected {{dataset user id: Cognito username}}")
        outputs = outputs_of(boto3.client("cloudformation"), args.stack)
        counts = seed(
            Path(args.dataset),
            usernames,
            outputs=outputs,
            cognito=boto3.client("cognito-idp"),
            events=boto3.client("events"),
            create=args.create,
        )
    except (
        SeedError,
        SmokeFailed,
        DatasetError,
        OSError,
        UnicodeDecodeError,
        json.JSONDecodeError,
        KeyError,
    ) as exc:
        print(f"heirloom seed: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"{args.stack}: sent " + ", ".join(f"{n} {t}" for t, n in counts.items()))
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from heirloom_dev.bench.report import format_report
    from heirloom_dev.bench.run import run_bench

    if args.cold_path:
        return _cmd_cold_path(args)
    if args.graph_http:
        from heirloom_dev.bench.run import run_graph_http

        print(json.dumps(run_graph_http(args.stories, args.queries), indent=2))
        return 0

    result = run_bench(
        args.stories,
        args.queries,
        Path(args.json) if args.json else None,
        not args.no_write,
        reranker=args.reranker,
    )
    print(format_report(result))
    # the cold-path rows: their own stack (the sample legacy on the local stack), after the rest
    return 0 if args.no_cold_path else _cmd_cold_path(args)


def _cmd_invoke(args: argparse.Namespace) -> int:
    from heirloom_dev.functions import function_names
    from heirloom_dev.invoke import READ_ONLY, invoke, objects_beside

    if args.function not in function_names():
        print(
            f"heirloom invoke: no function {args.function!r}; one of {', '.join(function_names())}",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    event_file = Path(args.event) if args.event else None
    try:
        event = json.loads(event_file.read_text()) if event_file else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        print(f"heirloom invoke: {args.event}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    # one step never repairs a lost graph: `load` and `backfill` do
    runtime = _use_local_stack(write=args.function not in READ_ONLY, repair=False)
    objects = objects_beside(event_file) if event_file else None
    try:
        result = invoke(args.function, event, runtime.settings, objects=objects)
    except Exception as exc:  # what Lambda would report for the invocation
        print(json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc)}, indent=2))
        return 1
    print(json.dumps(result, indent=2, default=str))
    return 0


def _cmd_intent_model(args: argparse.Namespace) -> int:
    from heirloom.adapters import factory
    from heirloom.domain.intent_model import model_key, summary, train, weights_file

    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        print(f"heirloom intent-model: --out {args.out} is a file; name a folder", file=sys.stderr)
        return EXIT_BAD_INPUT
    embedder = factory.build_embedder(get_settings())
    result = summary(embedder)
    print("  ".join(f"{k} {v}" for k, v in result.items()))
    if args.out:
        model = train(embedder)
        path = weights_file(Path(args.out), model_key(model.model_id, embedder.dimension), model.data_sha256)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(model.to_json())
        print(f"weights written to {path}")
    return 0


def add_commands(sub: Any) -> None:
    """This module's subcommands, on the `heirloom` parser's subparsers."""
    backfill = sub.add_parser("backfill", help="ingest every story whose index or graph is behind")
    backfill.add_argument("--page-size", type=int, default=50)
    backfill.add_argument("--pace", type=int, default=0, help="seconds to wait between pages (rate limit)")
    backfill.add_argument(
        "--stories-per-execution",
        type=int,
        default=500,
        help="stories an execution plans before it continues as a new one (at most 600)",
    )
    backfill.add_argument(
        "--rebuild-graph",
        action="store_true",
        help="drop this prefix's graph and write it again from PostgreSQL (structure, then every"
        " story's entities extracted again); running it twice gives the same graph",
    )
    backfill.set_defaults(func=_cmd_backfill)

    bench = sub.add_parser(
        "bench", help="synthetic corpus at scale: per-stage latencies, throughput, imports"
    )
    bench.add_argument("--stories", type=int, default=10_000)
    bench.add_argument("--queries", type=int, default=200)
    bench.add_argument("--json")
    bench.add_argument(
        "--no-write",
        action="store_true",
        help="write no docs file (docs/benchmarks.md, docs/cold-path.json): print the figures only",
    )
    bench.add_argument(
        "--cold-path",
        action="store_true",
        help="only the context functions' cold path (fresh interpreter, built layer, first call):"
        " docs/cold-path.json and its section of docs/benchmarks.md",
    )
    bench.add_argument("--runs", type=int, default=7, help="fresh interpreters per function (--cold-path)")
    bench.add_argument("--no-cold-path", action="store_true", help="skip the cold-path rows of a full run")
    bench.add_argument(
        "--graph-http",
        action="store_true",
        help="only graph_traversal_step over HTTP (Neptune adapter, local openCypher server),"
        " sequential and TRAVERSAL_CONCURRENCY at a time; prints JSON, writes nothing",
    )
    bench.add_argument(
        "--reranker",
        choices=("off", "lexical", "bedrock"),
        default="off",
        help="also time this reranking stage on its own (row rerank.<name>); domain_pipeline stays without it",
    )
    smoke = sub.add_parser(
        "smoke",
        help="one question against a deployed stack as a user (HEIRLOOM_SMOKE_PASSWORD, "
        "HEIRLOOM_SMOKE_TOTP_SECRET from the environment; AWS credentials for AdminInitiateAuth)",
    )
    smoke.add_argument("--stack", default="Heirloom", help="stack name (Heirloom, Heirloom-<stage>)")
    smoke.add_argument("--legacy", required=True, help="legacy id the user is a member of")
    smoke.add_argument("--username", required=True, help="the Cognito user (e-mail)")
    smoke.add_argument("--question", default="Tell me about her early years.")
    smoke.add_argument("--persona", default="family")
    smoke.set_defaults(func=_cmd_smoke)
    seed = sub.add_parser(
        "seed",
        help="a dataset (docs/dataset-format.md) into a deployed stack, users keyed to their Cognito sub",
    )
    seed.add_argument("dataset")
    seed.add_argument("--stack", default="Heirloom")
    seed.add_argument("--users", required=True, help='JSON {"<dataset user id>": "<Cognito username>"}')
    seed.add_argument("--create", action="store_true", help="invite users missing from the pool")
    seed.set_defaults(func=_cmd_seed)
    bench.set_defaults(func=_cmd_bench)

    intent = sub.add_parser(
        "intent-model", help="train the intent classifier on config/intents: held-out and 5-fold accuracy"
    )
    intent.add_argument("--out", help="also write the weights (the training split's) to this directory")
    intent.set_defaults(func=_cmd_intent_model)

    invoke = sub.add_parser("invoke", help="run one function's handler in process with a Lambda-like context")
    invoke.add_argument("function", help="folder name under functions/")
    invoke.add_argument("-e", "--event", help="event JSON file (see events/)")
    invoke.set_defaults(func=_cmd_invoke)
