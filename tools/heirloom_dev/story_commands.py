"""Commands over the embedded stack and a dataset: local, load, stats, eval, demo, ask."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any
from uuid import UUID

from heirloom.contracts.context import MAX_TOKEN_BUDGET, MIN_TOKEN_BUDGET
from heirloom.settings import get_settings
from heirloom_dev.cli_common import EXIT_BAD_INPUT, _use_local_stack


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
    for line in report.warnings:
        print(f"heirloom load: warning: {line}", file=sys.stderr)
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


def output_problems(outputs: list[Path]) -> list[str]:
    """Why each file a command would write at its end cannot be written, said before it starts."""
    return [f"{out}: no folder {out.parent} to write it in" for out in outputs if not out.parent.is_dir()] + [
        f"{out}: a folder, not a file" for out in outputs if out.is_dir()
    ]


def _cmd_facts_eval(args: argparse.Namespace) -> int:
    from heirloom_dev import fact_eval

    root = Path(args.dir)
    if not (root / "facts.json").is_file() or not (root / "stories.jsonl").is_file():
        print(f"heirloom facts-eval: {root} has no facts.json and stories.jsonl", file=sys.stderr)
        return EXIT_BAD_INPUT
    if problems := output_problems([Path(args.json)] if args.json else []):
        print(f"heirloom facts-eval: {'; '.join(problems)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        extract = (
            fact_eval.stubbed_bedrock_extract(Path(args.bedrock_fixture))
            if args.bedrock_fixture
            else fact_eval.local_extract()
        )
        score = fact_eval.evaluate(root, extract)
    except (KeyError, ValueError, OSError) as exc:
        print(f"heirloom facts-eval: bad labels or fixture: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    path = "bedrock (stubbed answers)" if args.bedrock_fixture else "local spaCy rules"
    print(
        f"{path}: labelled {score.labelled}, extracted {score.extracted}, matched {score.matched}: "
        f"precision {score.precision:.3f} recall {score.recall:.3f}"
    )
    for relation, row in sorted(score.by_relation.items()):
        print(
            f"  {relation:12} labelled {row['labelled']:3} extracted {row['extracted']:3} matched {row['matched']:3}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(score.as_dict(), indent=2))
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    from heirloom.settings import get_settings
    from heirloom_dev.eval import dataset_digest, evaluate, format_table, write_path_digest
    from heirloom_dev.loader import DatasetError, load_dataset, read_dataset, read_jsonl
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
    problems += output_problems(outputs)
    if not MIN_TOKEN_BUDGET <= args.budget <= MAX_TOKEN_BUDGET:
        problems.append(f"--budget {args.budget}: between {MIN_TOKEN_BUDGET} and {MAX_TOKEN_BUDGET} tokens")
    if problems:
        print(f"heirloom eval: {'; '.join(problems)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    # one load per (dataset, write path): a change to what a load stores loads the dataset again
    digest = f"{dataset_digest(root)}_{write_path_digest()}"
    # beside the local stack's home (.heirloom/local -> .heirloom/eval unless HEIRLOOM_HOME says)
    home = stack_home(get_settings()).parent / "eval"
    url = ensure_database(LocalStack(home).up().postgres_uri or "", f"eval_{digest}")
    env = {"HEIRLOOM_HOME": str(home), "GRAPH_ENV_PREFIX": f"eval_{digest}", "DATABASE_URL": url}
    runtime = _use_local_stack(write=True, env=env)
    report = load_dataset(runtime.ports, root)
    # stdout holds the table alone; progress goes to stderr
    print(f"dataset {root} ({digest}): {report.changed} records loaded or updated", file=sys.stderr)
    for line in report.warnings:
        print(f"heirloom eval: warning: {line}", file=sys.stderr)
    _use_local_stack(write=False, env=env)  # the queries only read
    result = evaluate(root, args.mode, ks, args.budget, Path(args.per_query) if args.per_query else None)
    print(format_table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


SUM_UP = "Sum up his life for me."


def _cmd_demo(args: argparse.Namespace) -> int:
    from heirloom.contracts.context import ContextRequest
    from heirloom_dev.curation_commands import circles_section, creator_of, demo_curation
    from heirloom_dev.loader import load_dataset
    from heirloom_dev.workflow import LocalContextWorkflow, LocalWorkflows

    root = Path(args.dir)
    runtime = _use_local_stack(write=True)
    report = load_dataset(runtime.ports, root)
    print(f"loaded {root}: {report.changed} records created or updated\n")
    plan = json.loads((root / "demo.json").read_text())
    curator = creator_of(runtime, UUID(plan["legacy_id"]))
    if curator is not None:
        demo_curation(runtime, UUID(plan["legacy_id"]), curator)
    _use_local_stack(
        write=False, env={"DATABASE_URL": runtime.settings.database.url}
    )  # the questions only read
    print_stats(collect_stats())
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
        if curator is not None:
            general = runner.run(
                ContextRequest(
                    legacy_id=plan["legacy_id"], user_id=curator, persona="biographer", query=SUM_UP
                )
            )
            print(f"\n=== [biographer] the creator: {SUM_UP}")
            print(circles_section(general.formatted_context) or "    (no community summary in the context)")
        if "evolution" in plan:
            from heirloom_dev.evolution_demo import show_evolution

            show_evolution(workflows, plan["legacy_id"], plan["evolution"])
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


def add_commands(sub: Any) -> None:
    """This module's subcommands, on the `heirloom` parser's subparsers."""
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

    fe = sub.add_parser(
        "facts-eval", help="precision/recall of extracted facts against DIR/facts.json (hand labels)"
    )
    fe.add_argument("dir")
    fe.add_argument(
        "--bedrock-fixture",
        metavar="FILE",
        help="score the Bedrock extractor on these tool answers through a botocore Stubber "
        "(tests parsing and post-processing, not a model)",
    )
    fe.add_argument("--json", help="write the scores as JSON to this file")
    fe.set_defaults(func=_cmd_facts_eval)
