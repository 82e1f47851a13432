"""`heirloom eval DATASET_DIR`: every query through the context workflow, scored per docs/dataset-format.md."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from heirloom.contracts.context import AssembledContext, ContextRequest, Message
from heirloom.domain.evaluation import QueryOutcome, StoryText, score
from heirloom.local.loader import DatasetError
from heirloom.local.workflow import LocalContextWorkflow, LocalWorkflows

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
    digest = hashlib.sha256()
    for path in sorted(root.glob("*.json*")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The objects of a JSON-lines file; DatasetError with `file:line: reason` for a line that
    is not UTF-8, not JSON or not an object."""
    rows: list[dict[str, Any]] = []
    for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
        where = f"{path.name}:{number}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetError(
                f"{where}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
            ) from exc
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, a 5,000-digit number, nesting
            raise DatasetError(f"{where}: not valid JSON: {getattr(exc, 'msg', type(exc).__name__)}") from exc
        if not isinstance(row, dict):
            raise DatasetError(f"{where}: expected a JSON object")
        rows.append(row)
    return rows


def run_queries(root: Path, mode: str, budget: int) -> list[QueryOutcome]:
    queries = read_jsonl(root / "queries.jsonl")
    outcomes = []
    with LocalWorkflows().start() as workflows:
        runner = LocalContextWorkflow(workflows)
        for q in queries:
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
            outcomes.append(
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
                )
            )
    return outcomes


def evaluate(root: Path, mode: str, ks: tuple[int, ...], budget: int) -> dict[str, Any]:
    stories = {
        s["id"]: StoryText(id=s["id"], title=s["title"], content=s["content"])
        for s in read_jsonl(root / "stories.jsonl")
    }
    outcomes = run_queries(root, mode, budget)
    # known relationships are readable facts: their wording is never a leak
    rel_path = root / "relationships.jsonl"
    for i, rel in enumerate(read_jsonl(rel_path) if rel_path.exists() else []):
        if rel.get("detail"):
            stories[f"relationship:{i}"] = StoryText(id=f"relationship:{i}", title="", content=rel["detail"])
    readable = {o.query_id: set(stories) - set(o.forbidden) for o in outcomes}
    name = (
        json.loads((root / "dataset.json").read_text()).get("name", root.name)
        if (root / "dataset.json").exists()
        else root.name
    )
    return {"dataset": name, "mode": mode, "queries": len(outcomes), **score(outcomes, stories, readable, ks)}


def format_table(result: dict[str, Any]) -> str:
    cols = [c for c in HEADLINE if c in result["metrics"]]
    lines = [f"dataset {result['dataset']}  mode {result['mode']}  queries {result['queries']}", ""]
    header = f"{'':<22}" + "".join(f"{c:>12}" for c in cols)
    for title, rows in (
        ("overall", {"all": result["metrics"]}),
        ("by category", result["by_category"]),
        ("by expected intent", result["by_intent"]),
    ):
        lines += [title, header]
        for name, m in rows.items():
            cells = "".join(
                f"{m.get(c, float('nan')):>12.0f}"
                if c in ("queries", "leaks") or c.startswith("latency")
                else f"{m.get(c, float('nan')):>12.3f}"
                for c in cols
            )
            lines.append(f"{name:<22}{cells}")
        lines.append("")
    return "\n".join(lines)
