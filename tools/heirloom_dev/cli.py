"""The `heirloom` command line: the local stack, loading, statistics."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from heirloom.errors import GraphUnavailable
from heirloom.settings import SettingsError, get_settings

EXIT_BAD_INPUT = 2
#: a store a command cannot do without (the graph for load, stats, backfill) did not answer
EXIT_UNAVAILABLE = 3


def _cmd_local(args: argparse.Namespace) -> int:
    from heirloom_dev.runtime import stack_home
    from heirloom_dev.stack import LocalStack

    stack = LocalStack(stack_home(get_settings()))
    if args.action == "up":
        status = stack.up()
    elif args.action == "down":
        stack.down()
        status = stack.status()
    else:
        status = stack.status()
    print(f"home:     {stack.home}")
    print(
        f"postgres: {'running pid ' + str(status.postgres_pid) if status.postgres_pid else 'stopped'}"
        + (f"  {status.postgres_uri}" if status.postgres_uri else "")
    )
    print(
        f"falkordb: {'running pid ' + str(status.falkor_pid) if status.falkor_pid else 'stopped'}"
        + (f"  {status.falkor_socket}" if status.falkor_socket else "")
    )
    return 0


def _cmd_load(args: argparse.Namespace) -> int:
    from heirloom_dev.loader import DatasetError, load_dataset, read_dataset
    from heirloom_dev.runtime import open_runtime

    root = Path(args.dir)
    try:
        read_dataset(root)  # validate before starting anything
        runtime = open_runtime(write=True)
        report = load_dataset(runtime.ports, root, progress=lambda line: print(f"  {line}"))
    except DatasetError as exc:
        print(f"heirloom load: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(
        f"loaded {root}: {report.changed} records created or updated"
        + (" (no changes)" if report.changed == 0 else "")
    )
    if report.skipped:
        print(f"skipped {len(report.skipped)} records that story events changed since:")
        for line in report.skipped:
            print(f"  {line}")
    return 0


#: the most-mentioned entities of each kind, for a quick look at what extraction found
EXAMPLE_QUERIES = {
    "Person": "MATCH (s:Story)-[:MENTIONS]->(e:Person) RETURN e.name AS name, count(s) AS n ORDER BY n DESC, name LIMIT 4",
    **{
        label: f"MATCH (s:Story)-[:{'TOOK_PLACE_AT' if label == 'Place' else 'REFERENCES'}]->(e:{label})"
        " RETURN e.name AS name, count(s) AS n ORDER BY n DESC, name LIMIT 4"
        for label in ("Place", "Event", "Object")
    },
}


def collect_stats() -> dict[str, Any]:
    from heirloom_dev.runtime import open_runtime

    runtime = open_runtime()
    counts = runtime.ports.stories.counts()
    return {
        "legacies": counts["legacies"],
        "persons": counts["persons"],
        "users": counts["users"],
        "members": counts["legacy_members"],
        "relationships": counts["person_relationships"],
        "links": counts["legacy_links"],
        "stories": counts["stories"],
        "chunks": counts["story_chunks"],
        "graph_nodes": dict(sorted(runtime.graph.count_nodes().items())),
        "graph_edges": dict(sorted(runtime.graph.count_edges().items())),
        "entity_examples": {
            label: [f"{row['name']} ({row['n']} stories)" for row in runtime.graph.run(query)]
            for label, query in EXAMPLE_QUERIES.items()
        },
    }


def print_stats(stats: dict[str, Any]) -> None:
    for key, value in stats.items():
        if isinstance(value, dict):
            print(f"{key}:")
            for name, count in value.items():
                shown = ", ".join(count) if isinstance(count, list) else count
                print(f"  {name:<16} {shown}")
        else:
            print(f"{key:<18} {value}")


def _cmd_stats(args: argparse.Namespace) -> int:
    stats = collect_stats()
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        print_stats(stats)
    return 0


def _use_local_stack(*, write: bool, repair: bool | None = None, env: dict[str, str] | None = None) -> Any:
    """Point the handlers' settings at the embedded stack (env vars, as Lambda would get them).
    Without `write`, their PostgreSQL sessions refuse writes; see `open_runtime` for `repair`."""
    import os

    from heirloom.services import default_services
    from heirloom.settings import get_settings
    from heirloom_dev.runtime import open_runtime

    os.environ.update(env or {})
    get_settings.cache_clear()
    runtime = open_runtime(write=write, repair=repair)
    os.environ["DATABASE_URL"] = runtime.settings.database.url
    os.environ["FALKOR_SOCKET"] = runtime.settings.graph.falkor_socket
    get_settings.cache_clear()
    default_services.cache_clear()
    return runtime


def _cmd_eval(args: argparse.Namespace) -> int:
    from heirloom.settings import get_settings
    from heirloom_dev.eval import dataset_digest, evaluate, format_table, read_jsonl
    from heirloom_dev.loader import DatasetError, load_dataset, read_dataset
    from heirloom_dev.runtime import stack_home
    from heirloom_dev.stack import LocalStack, ensure_database

    root = Path(args.dataset)
    outputs = [Path(p) for p in (args.json, args.per_query) if p]
    try:
        read_dataset(root)
        if not (root / "queries.jsonl").is_file():
            raise DatasetError(f"{root}/queries.jsonl: missing")
        read_jsonl(root / "queries.jsonl")
    except DatasetError as exc:
        print(f"heirloom eval: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        ks = tuple(int(k) for k in args.k.split(","))
    except ValueError:
        ks = ()
    problems = (
        [f"--k {args.k!r}: positive whole numbers separated by commas"] if min(ks, default=0) < 1 else []
    )
    problems += [
        f"{out}: no folder {out.parent} to write it in" for out in outputs if not out.parent.is_dir()
    ]
    if problems:
        print(f"heirloom eval: {'; '.join(problems)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    digest = dataset_digest(root)
    # beside the local stack's home (.heirloom/local -> .heirloom/eval unless HEIRLOOM_HOME says)
    home = stack_home(get_settings()).parent / "eval"
    url = ensure_database(LocalStack(home).up().postgres_uri or "", f"eval_{digest}")
    env = {"HEIRLOOM_HOME": str(home), "GRAPH_ENV_PREFIX": f"eval_{digest}", "DATABASE_URL": url}
    runtime = _use_local_stack(write=True, env=env)
    report = load_dataset(runtime.ports, root)
    # stdout holds the table alone; progress goes to stderr
    print(f"dataset {root} ({digest}): {report.changed} records loaded or updated", file=sys.stderr)
    _use_local_stack(write=False, env=env)  # the queries only read
    result = evaluate(root, args.mode, ks, args.budget, Path(args.per_query) if args.per_query else None)
    print(format_table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from heirloom.contracts.context import ContextRequest
    from heirloom_dev.loader import load_dataset
    from heirloom_dev.workflow import LocalContextWorkflow, LocalWorkflows

    root = Path(args.dir)
    runtime = _use_local_stack(write=True)
    report = load_dataset(runtime.ports, root)
    print(f"loaded {root}: {report.changed} records created or updated\n")
    _use_local_stack(
        write=False, env={"DATABASE_URL": runtime.settings.database.url}
    )  # the questions only read
    print_stats(collect_stats())
    plan = json.loads((root / "demo.json").read_text())
    with LocalWorkflows().start() as workflows:
        runner = LocalContextWorkflow(workflows)
        for q in plan["questions"]:
            base = {
                "legacy_id": plan["legacy_id"],
                "user_id": q["user_id"],
                "persona": q["persona"],
                "query": q["query"],
            }
            hybrid = runner.run(ContextRequest(**base))
            seconds = runner.last.seconds if runner.last else 0.0
            vector = runner.run(ContextRequest(**base, mode="vector"))
            intent = hybrid.metadata.intent
            print(f"\n=== [{q['persona']}] {q['who']}: {q['query']}")
            print(
                f"    intent {intent.intent.value} ({intent.confidence:.2f}); matched: "
                + (", ".join(sorted({m.name for m in intent.matches})) or "-")
                + f"; {seconds * 1000:.0f} ms"
            )
            by_id = {s.story_id: s for s in hybrid.metadata.sources}
            top = [by_id[i] for i in hybrid.ranked_story_ids[:5]]
            for source in top:
                print(f"    {source.score:5.2f}  {source.title[:48]:<48}  {'; '.join(source.reasons)}")
            top_v = set(vector.ranked_story_ids[:5])
            added = [s.title for s in top if s.story_id not in top_v]
            facts = hybrid.formatted_context.split("## Relevant", 1)[0].count(". ")
            print(
                f"    graph added to the top 5: {', '.join(added) or 'nothing'}; known connections: {facts} facts;"
                f" context {hybrid.metadata.tokens_used}/{hybrid.metadata.token_budget} tokens"
            )
    return 0


def _cmd_ask(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from heirloom.contracts.context import ContextRequest, Message
    from heirloom.errors import HeirloomError
    from heirloom.settings import get_settings
    from heirloom_dev.workflow import LocalContextWorkflow, LocalWorkflows

    try:
        history = tuple(
            Message(role="user" if i % 2 == 0 else "assistant", content=text)
            for i, text in enumerate(args.said)
        )
        request = ContextRequest(
            legacy_id=args.legacy,
            user_id=args.user,
            persona=args.persona,
            query=args.question,
            history=history,
            token_budget=args.budget,
            debug=args.debug,
            mode=args.mode,
            graph_enabled=get_settings().graph.augmentation_enabled,
        )
    except ValidationError as exc:
        from heirloom.edges import reason

        print(f"heirloom ask: {reason(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _use_local_stack(write=False)  # reads only; a graph that is down or hung degrades the answer
    with LocalWorkflows().start() as workflows:
        runner = LocalContextWorkflow(workflows)
        try:
            assembled = runner.run(request)
        except HeirloomError as exc:
            print(f"heirloom ask: {type(exc).__name__}: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        finally:
            if args.history and runner.last:
                for event in runner.last.history:
                    details = {k: v for k, v in event.items() if k.endswith("EventDetails")}
                    print(f"{event['id']:>3} {event['type']:<28} {json.dumps(details, default=str)[:160]}")
    print(assembled.formatted_context)
    if args.debug:
        print(json.dumps(assembled.metadata.model_dump(mode="json"), indent=2))
    return 0


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
    from heirloom_dev.bench import lambda_import_env
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
    (root / "docs" / "cold-path.json").write_text(json.dumps(result, indent=2) + "\n")
    section = coldpath.render_section(result)
    if not args.no_write:
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
    except (SeedError, SmokeFailed, DatasetError, OSError, json.JSONDecodeError, KeyError) as exc:
        print(f"heirloom seed: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"{args.stack}: sent " + ", ".join(f"{n} {t}" for t, n in counts.items()))
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from heirloom_dev.bench import format_report, run_bench

    if args.cold_path:
        return _cmd_cold_path(args)

    result = run_bench(args.stories, args.queries, Path(args.json) if args.json else None, not args.no_write)
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
    from heirloom.domain.intent_model import summary, train, weights_file
    from heirloom.settings import get_settings

    embedder = factory.build_embedder(get_settings())
    result = summary(embedder)
    print("  ".join(f"{k} {v}" for k, v in result.items()))
    if args.out:
        model = train(embedder)
        path = weights_file(Path(args.out), f"{model.model_id}-{embedder.dimension}", model.data_sha256)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(model.to_json())
        print(f"weights written to {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="heirloom", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    local = sub.add_parser("local", help="the embedded PostgreSQL + FalkorDB stack")
    local.add_argument("action", choices=["up", "down", "status"])
    local.set_defaults(func=_cmd_local)

    load = sub.add_parser("load", help="load a docs/dataset-format.md dataset folder")
    load.add_argument("dir")
    load.set_defaults(func=_cmd_load)

    stats = sub.add_parser("stats", help="counts of what is stored")
    stats.add_argument("--json", action="store_true")
    stats.set_defaults(func=_cmd_stats)

    demo = sub.add_parser("demo", help="load a dataset and answer its demo.json questions, hybrid vs vector")
    demo.add_argument("dir")
    demo.set_defaults(func=_cmd_demo)

    ask = sub.add_parser("ask", help="assemble context for a question through the real workflow")
    ask.add_argument("question")
    ask.add_argument("--legacy", required=True)
    ask.add_argument("--user", required=True)
    ask.add_argument("--persona", default="biographer")
    ask.add_argument("--budget", type=int, default=4000)
    ask.add_argument("--mode", choices=["hybrid", "vector", "graph"], default="hybrid")
    ask.add_argument(
        "--said", action="append", default=[], help="earlier messages, oldest first (repeatable)"
    )
    ask.add_argument("--debug", action="store_true", help="print the debug metadata")
    ask.add_argument("--history", action="store_true", help="print the execution's event history")
    ask.set_defaults(func=_cmd_ask)

    ev = sub.add_parser("eval", help="score the context workflow on a dataset's queries")
    ev.add_argument("dataset")
    ev.add_argument("--mode", choices=["hybrid", "vector", "graph"], default="hybrid")
    ev.add_argument("--k", default="1,3,5,10")
    ev.add_argument("--budget", type=int, default=4000)
    ev.add_argument("--json", help="write the scores as JSON to this file")
    ev.add_argument(
        "--per-query",
        metavar="FILE",
        help="write one JSON line per query: ranked stories with scores, sources and graph paths, "
        "gold, predicted and expected intent",
    )
    ev.set_defaults(func=_cmd_eval)

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
    bench.add_argument("--no-write", action="store_true", help="do not rewrite docs/benchmarks.md")
    bench.add_argument(
        "--cold-path",
        action="store_true",
        help="only the context functions' cold path (fresh interpreter, built layer, first call):"
        " docs/cold-path.json and its section of docs/benchmarks.md",
    )
    bench.add_argument("--runs", type=int, default=7, help="fresh interpreters per function (--cold-path)")
    bench.add_argument("--no-cold-path", action="store_true", help="skip the cold-path rows of a full run")
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    import os
    import warnings

    warnings.filterwarnings("ignore", message="No application metrics to publish")
    os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "heirloom")
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Heirloom")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    # the handlers' structured logs and EMF lines are for CloudWatch; keep the terminal readable
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    args = build_parser().parse_args(argv)
    from heirloom_dev.stack import NotSetUp

    try:
        code: int = args.func(args)
    except SettingsError as exc:
        print(f"heirloom: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except GraphUnavailable as exc:  # `ask` answers without the graph; the others need it
        print(f"heirloom: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except NotSetUp as exc:
        print(f"heirloom {args.command}: {exc}", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
