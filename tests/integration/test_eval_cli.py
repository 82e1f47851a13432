"""`heirloom eval --per-query` on the sample legacy: one JSON line per query holding what a
ranking decision needs (every candidate the ranking scored, in or out of the context, and never
a story the asker may not read), ranked lists that are the very ones the scores came from, and
a stdout that is the aligned table alone."""

import json
import shutil
import statistics
from pathlib import Path

import pytest

from heirloom_dev.cli import EXIT_BAD_INPUT, main
from heirloom_dev.eval import format_table
from heirloom_dev.stack import LocalStack
from tests.support.services import UNHURRIED
from tests.support.stack import stack_home

SAMPLE = Path(__file__).parents[2] / "examples" / "sample-legacy"
FIELDS = {"query_id", "query", "category", "expected_intent", "intent", "intent_correct", "gold",
          "ranked", "gold_ranks", "leaked", "candidates", "traversals", "latency_ms"}  # fmt: skip
CANDIDATE_FIELDS = {"rank", "ranking_rank", "in_context", "story_id", "title", "gold", "score", "source",
                    "reasons", "similarity", "lexical", "graph_paths"}  # fmt: skip


@pytest.fixture
def eval_env(monkeypatch):
    from heirloom.services import default_services
    from heirloom.settings import get_settings

    base = stack_home()
    monkeypatch.setenv("HEIRLOOM_HOME", str(base / "local"))
    monkeypatch.setenv("EMBEDDING_PROVIDER", "fake")
    monkeypatch.setenv("EXTRACTOR_PROVIDER", "none")
    # content, not speed: a traversal cut by its budget on a loaded machine logs a warning to stdout
    for key, value in UNHURRIED.items():
        monkeypatch.setenv(key, value)
    # the CLI points these at its eval stack; set-then-delete makes monkeypatch undo that too
    for key in ("GRAPH_ENV_PREFIX", "DATABASE_URL", "FALKOR_SOCKET"):
        monkeypatch.setenv(key, "unset")
        monkeypatch.delenv(key)
    get_settings.cache_clear()
    yield base
    LocalStack(base / "eval").down()
    shutil.rmtree(base, ignore_errors=True)
    get_settings.cache_clear()
    default_services.cache_clear()


def test_per_query_lines_agree_with_the_scores_and_stdout_is_the_table(eval_env, tmp_path, capsys):
    per_query, scores = tmp_path / "per_query.jsonl", tmp_path / "scores.json"
    code = main(["eval", str(SAMPLE), "--per-query", str(per_query), "--json", str(scores)])
    out = capsys.readouterr().out
    assert code == 0
    result = json.loads(scores.read_text())
    assert out == format_table(result) + "\n"
    # aligned: every header and row of the table is as wide as the others
    table = [line for line in out.splitlines()[2:] if line.startswith(" ") or "  " in line]
    assert len({len(line) for line in table}) == 1, table

    queries = [
        json.loads(line) for line in (SAMPLE / "queries.jsonl").read_text().splitlines() if line.strip()
    ]
    records = [json.loads(line) for line in per_query.read_text().splitlines()]
    assert [r["query_id"] for r in records] == [q["id"] for q in queries]
    for record, query in zip(records, queries, strict=True):
        assert set(record) >= FIELDS, FIELDS - set(record)
        assert record["gold"] == query["gold_story_ids"]
        assert record["expected_intent"] == query["expected_intent"]
        in_context = [c for c in record["candidates"] if c["in_context"]]
        assert [c["story_id"] for c in in_context] == record["ranked"]
        assert [c["rank"] for c in in_context] == list(range(1, len(in_context) + 1))
        scored = [c["ranking_rank"] for c in record["candidates"] if c["ranking_rank"] is not None]
        assert scored == list(range(1, len(scored) + 1))
        forbidden = set(query["forbidden_story_ids"])
        for c in record["candidates"]:
            assert set(c) == CANDIDATE_FIELDS
            assert c["gold"] == (c["story_id"] in record["gold"])
            assert c["story_id"] not in forbidden, "a story the asker may not read is in the file"
            assert not {p["source_story_id"] for p in c["graph_paths"]} & forbidden
            if c["in_context"]:
                assert c["score"] is not None and c["source"]
    assert any(c["graph_paths"] for r in records for c in r["candidates"]), "no graph path recorded"
    assert any(not c["in_context"] for r in records for c in r["candidates"]), "no candidate cut"
    assert sum(len(set(q["forbidden_story_ids"])) for q in queries) > 0, "no leak probe to check"

    # the overall scores, recomputed from the lines alone
    with_gold = [r for r in records if r["gold"]]
    metrics = result["metrics"]
    for k in (1, 3, 5, 10):
        recall = statistics.fmean(
            len(set(r["gold"]) & set(r["ranked"][:k])) / len(r["gold"]) for r in with_gold
        )
        assert recall == pytest.approx(metrics[f"recall@{k}"])
        assert statistics.fmean(r[f"recall@{k}"] for r in with_gold) == pytest.approx(recall)
    assert statistics.fmean(float(r["all_gold@5"]) for r in with_gold) == pytest.approx(metrics["all_gold@5"])
    assert statistics.fmean(r["reciprocal_rank"] for r in with_gold) == pytest.approx(metrics["mrr"])
    judged = [r for r in records if r["expected_intent"]]
    assert statistics.fmean(float(r["intent_correct"]) for r in judged) == pytest.approx(
        metrics["intent_accuracy"]
    )
    assert sum(len(r["leaked"]) for r in records) == metrics["leaks"]


@pytest.mark.parametrize(
    ("extra", "reason"),
    [(["--per-query", "{tmp}/nowhere/q.jsonl"], "nowhere"), (["--k", "5,x"], "--k"), (["--k", "0"], "--k")],
)
def test_bad_options_are_refused_before_any_work(tmp_path, capsys, extra, reason):
    code = main(["eval", str(SAMPLE), *(a.format(tmp=tmp_path) for a in extra)])
    assert code == EXIT_BAD_INPUT
    assert reason in capsys.readouterr().err
