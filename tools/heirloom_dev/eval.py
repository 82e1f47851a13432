"""`heirloom eval DATASET_DIR`: every query through the context workflow, scored per
docs/dataset-format.md.

With `--per-query FILE`, one JSON line per query (what `per_query_record` builds): every
candidate the ranking scored (those in the context and those the token budget cut) with its
rank, score, source, reasons, similarity and graph paths, the gold, the predicted and expected
intent, and the query's own recall, reciprocal rank and leaks.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from heirloom.contracts.context import AssembledContext, ContextRequest, Message, RankAssembleInput
from heirloom.domain.evaluation import QueryOutcome, StoryText, leaked, score
from heirloom.domain.ranking import ScoredCandidate
from heirloom_dev import heap
from heirloom_dev.loader import read_jsonl
from heirloom_dev.workflow import LocalContextWorkflow, LocalWorkflows

HEADLINE = (
    "queries",
    "recall@1",
    "recall@3",
    "recall@5",
    "recall@10",
    "all_gold@5",
    "mrr",
    "evidence_in_context",
    "leaks",
    "intent_accuracy",
    "latency_p50_ms",
    "latency_p95_ms",
)


def dataset_digest(root: Path) -> str:
    return files_digest([(path.name, path) for path in sorted(root.glob("*.json*"))], length=12)


#: the modules that decide what a load stores (ingestion, the local models' adapters, the
#: stores' adapters, the loader); their own imports of our packages are followed
WRITE_PATH = (
    "heirloom.domain.ingestion",
    "heirloom.adapters.spacy.extractor",
    "heirloom.adapters.embedders",
    "heirloom.adapters.postgres",
    "heirloom.adapters.falkor",
    "heirloom.adapters.neptune",
    "heirloom_dev.loader",
)
#: data the write path reads, by folder of the heirloom package
WRITE_PATH_DATA = ("config/lexicons", "migrations")
_OURS = ("heirloom", "heirloom_dev")


def _source(module: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    origin = spec.origin if spec else None
    return Path(origin) if origin and origin.endswith(".py") else None


def _imported(module: str, path: Path) -> set[str]:
    """Our modules (and packages) that `module`'s source imports, relative imports resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in found if m.split(".")[0] in _OURS}


def write_path_files() -> list[tuple[str, Path]]:
    """(name, file) of every module and data file the write path reads, in a fixed order."""
    sources: dict[str, Path] = {}
    todo = list(WRITE_PATH)
    while todo:
        module = todo.pop()
        if module in sources or (path := _source(module)) is None:
            continue
        sources[module] = path
        todo.extend(_imported(module, path))
    package = Path(str(importlib.util.find_spec("heirloom").origin)).parent  # type: ignore[union-attr]
    data = sorted(p for folder in WRITE_PATH_DATA for p in (package / folder).rglob("*") if p.is_file())
    return [*sorted(sources.items()), *((str(p.relative_to(package)), p) for p in data)]


def files_digest(files: list[tuple[str, Path]], length: int = 8) -> str:
    """The first `length` hex digits of a hash of each file's name and bytes, in order."""
    digest = hashlib.sha256()
    for name, path in files:
        digest.update(name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:length]


def write_path_digest() -> str:
    """A hash of the code and data that decide what loading a dataset stores: `heirloom eval`
    keeps a dataset's load per (dataset, write path), so a change to how stories are extracted,
    resolved or written is measured on a fresh load, and a change to ranking reuses the load."""
    return files_digest(write_path_files())


@dataclass(frozen=True)
class QueryRun:
    outcome: QueryOutcome
    assembled: AssembledContext
    #: what RankAssemble got (the readable candidates) and its order of them before the token
    #: budget cut (`run_queries(explain=True)`; the context carries only the stories that fit)
    ranked_input: RankAssembleInput | None = None
    ranking: tuple[ScoredCandidate, ...] = ()


#: how long an evaluation waits for the learned intent classifier to be built before its first
#: question (the rules answer if it is not ready by then)
WARM_UP_S = 60.0


def run_queries(root: Path, mode: str, budget: int, *, explain: bool = False) -> list[QueryRun]:
    """Every query through the workflow: its outcome for scoring and the context it got; with
    `explain`, also RankAssemble's input (from the execution history) ranked again by the step's
    own `ranking` (same settings, same code) for the per-query file."""
    from heirloom.domain.intent_step import WarmingIntentClassifier
    from heirloom.services import default_services
    from heirloom.steps.rank_assemble import ranking

    queries = read_jsonl(root / "queries.jsonl")
    outcomes: list[QueryRun] = []
    # the learned intent classifier built before the first question: an evaluation scores the
    # answers, not a cold container's first seconds (`heirloom bench --cold-path` measures those)
    local = default_services().local_intent_classifier
    if isinstance(local, WarmingIntentClassifier):
        local.wait_ready(WARM_UP_S)
    with LocalWorkflows().start() as workflows, heap.between_runs() as collect:
        runner = LocalContextWorkflow(workflows)
        for q in queries:
            collect()  # between questions: a full collection inside one cut its traversal off
            request = ContextRequest(
                legacy_id=q["legacy_id"],
                user_id=q["user_id"],
                persona=q["persona"],
                query=q["query"],
                history=tuple(Message(**m) for m in q.get("history") or []),
                token_budget=budget,
                mode=mode,
            )
            started = time.monotonic()
            assembled: AssembledContext = runner.run(request)
            latency = (time.monotonic() - started) * 1000
            payload = runner.last.task_payload("RankAssemble") if explain and runner.last else None
            ranked_input = RankAssembleInput.model_validate(payload) if payload is not None else None
            outcomes.append(QueryRun(
                QueryOutcome(
                    query_id=q["id"],
                    category=q.get("category"),
                    expected_intent=q.get("expected_intent"),
                    gold=tuple(q["gold_story_ids"]),
                    forbidden=tuple(q["forbidden_story_ids"]),
                    ranked=tuple(str(s) for s in assembled.ranked_story_ids),
                    context=assembled.formatted_context,
                    intent=assembled.metadata.intent.intent.value,
                    latency_ms=latency,
                ),
                assembled,
                ranked_input,
                tuple(ranking(ranked_input, default_services())) if ranked_input else (),
            ))  # fmt: skip
    return outcomes


def per_query_record(
    run: QueryRun,
    query: dict[str, Any],
    stories: dict[str, StoryText],
    readable: set[str],
    ks: tuple[int, ...],
) -> dict[str, Any]:
    """One query for debugging: the same ranked list `score` reads, and every candidate the
    ranking scored, in its order, with why it ranked there and whether it reached the context."""
    outcome, assembled = run.outcome, run.assembled
    gold = set(outcome.gold)
    candidates = _candidate_rows(run, gold)
    ranks = {sid: rank for rank, sid in enumerate(outcome.ranked, start=1)}
    gold_ranks = {g: ranks.get(g) for g in outcome.gold}
    found = [r for r in gold_ranks.values() if r is not None]
    record: dict[str, Any] = {
        "query_id": outcome.query_id,
        "query": query["query"],
        "user_id": query["user_id"],
        "persona": query["persona"],
        "category": outcome.category,
        "expected_intent": outcome.expected_intent,
        "intent": outcome.intent,
        "intent_source": assembled.metadata.intent.source,
        "intent_correct": None if not outcome.expected_intent else outcome.intent == outcome.expected_intent,
        "gold": list(outcome.gold),
        "ranked": list(outcome.ranked),
        "gold_ranks": gold_ranks,
    }
    if outcome.gold:
        for k in ks:
            record[f"recall@{k}"] = len(gold & set(outcome.ranked[:k])) / len(gold)
            record[f"all_gold@{k}"] = gold <= set(outcome.ranked[:k])
        record["reciprocal_rank"] = 1.0 / min(found) if found else 0.0
    readable_texts = [stories[s] for s in readable if s in stories]
    record["leaked"] = [
        f for f in outcome.forbidden if f in stories and leaked(outcome, stories[f], readable_texts)
    ]
    record |= {
        "candidates": candidates,
        "traversals": [t.model_dump(mode="json") for t in assembled.metadata.traversals],
        "vector_status": assembled.metadata.vector_status,
        "graph_status": assembled.metadata.graph_status,
        "tokens_used": assembled.metadata.tokens_used,
        "latency_ms": round(outcome.latency_ms, 1),
    }
    return record


def _candidate_rows(run: QueryRun, gold: set[str]) -> list[dict[str, Any]]:
    """Every readable candidate RankAssemble got, in its ranking's order (then the ones it left
    out: a story only bridge hits reached while they do not count, or one the mode does not
    see); `rank` is the rank in the context (None: cut by the token budget or never ranked)."""
    if run.ranked_input is None:
        raise RuntimeError(f"{run.outcome.query_id}: no RankAssemble input in the execution history")
    mode = run.ranked_input.request.mode
    readable = {str(c.story_id): c for c in run.ranked_input.filtered.candidates}
    scored = {str(s.candidate.story_id): s for s in run.ranking}
    order = [*scored, *(sid for sid in readable if sid not in scored)]
    in_context = {sid: rank for rank, sid in enumerate(run.outcome.ranked, start=1)}
    rows = []
    for at, sid in enumerate(order, start=1):
        candidate, ranked = readable[sid], scored.get(sid)
        chunks = candidate.chunks if candidate.embedding_score is not None and mode != "graph" else ()
        counted = ranked.hits if ranked else ()
        rows.append({
            "rank": in_context.get(sid),
            "ranking_rank": at if ranked else None,
            "in_context": sid in in_context,
            "story_id": sid,
            "title": candidate.title,
            "gold": sid in gold,
            "score": ranked.score if ranked else None,
            "source": ranked.source if ranked else None,
            "reasons": list(ranked.reasons) if ranked else [],
            "similarity": max((c.similarity for c in chunks), default=None),
            "lexical": max((c.lexical for c in chunks), default=None),
            "graph_paths": [
                hit.model_dump(mode="json", exclude={"story_id"}) | {"counted": hit in counted}
                for hit in (candidate.graph_hits if mode != "vector" else ())
            ],
        })  # fmt: skip
    return rows


def evaluate(
    root: Path, mode: str, ks: tuple[int, ...], budget: int, per_query: Path | None = None
) -> dict[str, Any]:
    """Scores overall, by category and by intent; with `per_query`, also one JSON line per query."""
    stories = {
        s["id"]: StoryText(id=s["id"], title=s["title"], content=s["content"])
        for s in read_jsonl(root / "stories.jsonl")
    }
    runs = run_queries(root, mode, budget, explain=per_query is not None)
    outcomes = [r.outcome for r in runs]
    # known relationships are readable facts: their wording is never a leak
    rel_path = root / "relationships.jsonl"
    for i, rel in enumerate(read_jsonl(rel_path) if rel_path.exists() else []):
        if rel.get("detail"):
            stories[f"relationship:{i}"] = StoryText(id=f"relationship:{i}", title="", content=rel["detail"])
    readable = {o.query_id: set(stories) - set(o.forbidden) for o in outcomes}
    if per_query is not None:
        queries = {q["id"]: q for q in read_jsonl(root / "queries.jsonl")}
        with per_query.open("w") as out:
            for run in runs:
                query_id = run.outcome.query_id
                record = per_query_record(run, queries[query_id], stories, readable[query_id], ks)
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
    name = (
        json.loads((root / "dataset.json").read_text()).get("name", root.name)
        if (root / "dataset.json").exists()
        else root.name
    )
    return {"dataset": name, "mode": mode, "queries": len(outcomes), **score(outcomes, stories, readable, ks)}


def format_table(result: dict[str, Any]) -> str:
    cols = [c for c in HEADLINE if c in result["metrics"]]
    # every column as wide as its header plus a space, so headers and figures stay aligned
    widths = [max(8, len(c) + 1) for c in cols]
    groups = (
        ("overall", {"all": result["metrics"]}),
        ("by category", result["by_category"]),
        ("by expected intent", result["by_intent"]),
    )
    first = max([len(name) + 2 for _, rows in groups for name in rows] + [22])
    lines = [f"dataset {result['dataset']}  mode {result['mode']}  queries {result['queries']}", ""]
    header = f"{'':<{first}}" + "".join(f"{c:>{w}}" for c, w in zip(cols, widths, strict=True))
    for title, rows in groups:
        lines += [title, header]
        for name, m in rows.items():
            cells = "".join(
                f"{m.get(c, float('nan')):>{w}.0f}"
                if c in ("queries", "leaks") or c.startswith("latency")
                else f"{m.get(c, float('nan')):>{w}.3f}"
                for c, w in zip(cols, widths, strict=True)
            )
            lines.append(f"{name:<{first}}{cells}")
        lines.append("")
    return "\n".join(lines)
