"""The CLI on a private stack: load twice (second reports no changes), stats as JSON."""

import json
from datetime import UTC, datetime
from uuid import UUID

import pytest

from heirloom_dev.cli import main
from tests.support.dataset import MiniDataset
from tests.support.stack import stack_home


@pytest.fixture
def cli_env(monkeypatch, tmp_path):
    from heirloom.settings import get_settings

    monkeypatch.setenv("HEIRLOOM_HOME", str(stack_home() / "home"))
    # commands point the handlers at the stack through these (as Lambda's environment would):
    # restored after each test
    for name in ("DATABASE_URL", "FALKOR_SOCKET", "GRAPH_ENV_PREFIX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EMBEDDING_PROVIDER", "fake")
    monkeypatch.setenv("EXTRACTOR_PROVIDER", "none")
    get_settings.cache_clear()
    yield tmp_path
    main(["local", "down"])
    get_settings.cache_clear()


def test_load_twice_and_stats(cli_env, capsys):
    root = MiniDataset().write(cli_env / "ds")
    assert main(["load", str(root)]) == 0
    assert "16 records created or updated" in capsys.readouterr().out
    assert main(["load", str(root)]) == 0
    assert "(no changes)" in capsys.readouterr().out
    assert main(["stats", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["stories"] == 4 and stats["chunks"] == 5
    assert stats["graph_nodes"] == {"Legacy": 2, "Person": 3, "Story": 4}
    assert main(["local", "status"]) == 0
    assert "running" in capsys.readouterr().out


def test_load_refuses_a_record_moving_another_legacy_s_story(cli_env, capsys):
    """Only story events move a story between legacies: a dataset naming a stored story of
    another legacy is bad input (exit 2, the record's file:line), and the story stays put."""
    mini = MiniDataset()
    root = mini.write(cli_env / "ds")
    assert main(["load", str(root)]) == 0
    capsys.readouterr()
    rows = mini.files()["stories"]
    rows[0] = {**rows[0], "legacy_id": mini.other_legacy, "updated_at": "2024-06-01T10:00:00Z"}
    assert main(["load", str(mini.write(cli_env / "moved", {"stories": rows}))]) == 2
    err = capsys.readouterr().err
    assert "stories.jsonl:1: id: story" in err and "another legacy" in err
    assert main(["load", str(root)]) == 0  # the original again: nothing to change
    assert "(no changes)" in capsys.readouterr().out


def test_load_warns_of_a_story_whose_author_is_no_member_of_its_legacy(cli_env, capsys):
    """Decision 0028: an S3 import refuses such a story; a dataset is the operator's and loads
    whole, with a warning naming the record's file:line and why."""
    mini = MiniDataset()
    rows = mini.files()["stories"]
    forged = {**rows[-1], "id": str(UUID(int=7)), "author_user_id": mini.admirer}  # not of other_legacy
    assert main(["load", str(mini.write(cli_env / "forged", {"stories": [*rows, forged]}))]) == 0
    err = capsys.readouterr().err
    assert (
        f"warning: stories.jsonl:{len(rows) + 1}: author_user_id: user {mini.admirer} is not a member" in err
    )
    assert main(["stats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stories"] == len(rows) + 1


def test_load_again_lists_what_story_events_changed_since(cli_env, capsys):
    from heirloom_dev.runtime import open_runtime

    mini = MiniDataset()
    root = mini.write(cli_env / "ds")
    assert main(["load", str(root)]) == 0
    # a Member Removed event for the admirer, after the first load
    open_runtime(write=True, repair=False).ports.stories.remove_member(
        UUID(mini.legacy), UUID(mini.admirer), datetime(2025, 1, 1, tzinfo=UTC)
    )
    capsys.readouterr()
    assert main(["load", str(root)]) == 0
    out = capsys.readouterr().out
    assert "(no changes)" in out
    assert "skipped 1 records that story events changed since:\n  members.jsonl:2: a story event" in out


def _stores(prefix: str):
    """The CLI stack's database and the graph under `prefix`, opened directly (not through the
    code under test)."""
    from heirloom.adapters.falkor import FalkorGraphStore
    from heirloom.adapters.postgres import PgDatabase
    from heirloom.settings import get_settings
    from heirloom_dev.runtime import stack_home as cli_home
    from heirloom_dev.stack import LocalStack

    status = LocalStack(cli_home(get_settings())).status()
    assert status.postgres_uri and status.falkor_socket
    db = PgDatabase(status.postgres_uri, embedding_dim=get_settings().embedding.dimension)
    return db, FalkorGraphStore(status.falkor_socket, get_settings().graph.graph_name, prefix)


def _use_prefix(monkeypatch, prefix: str) -> None:
    from heirloom.settings import get_settings

    monkeypatch.setenv("GRAPH_ENV_PREFIX", prefix)
    get_settings.cache_clear()


@pytest.fixture
def loaded(cli_env, monkeypatch, capsys):
    """The mini dataset loaded with entity extraction (so stories carry graph sync marks)."""
    from heirloom.settings import get_settings

    monkeypatch.setenv("EXTRACTOR_PROVIDER", "local")  # the people a story names enter the graph
    get_settings.cache_clear()
    data = MiniDataset()
    assert main(["load", str(data.write(cli_env / "ds"))]) == 0
    capsys.readouterr()
    db, graph = _stores("local")
    assert (
        db.connection()
        .execute("SELECT count(*) AS n FROM story_processing WHERE graph_hash IS NOT NULL")
        .fetchone()["n"]
        == 4
    )
    yield data, db, graph
    db.close()


def test_read_only_commands_with_another_graph_prefix_write_nothing(loaded, monkeypatch, capsys):
    # `stats` with another GRAPH_ENV_PREFIX found no Story nodes there and unmarked every story
    from tests.support.fuzz import differences, snapshot

    data, db, graph = loaded
    _, other = _stores("other")
    before, other_before, indexes = snapshot(db, graph), snapshot(db, other), _indexes(graph)
    _use_prefix(monkeypatch, "other")
    assert main(["stats", "--json"]) == 0
    question = ["ask", "What did Ada do?", "--legacy", data.legacy, "--user", data.creator]
    assert main(question) == 0
    capsys.readouterr()
    assert differences(before, snapshot(db, graph)) == []
    assert differences(other_before, snapshot(db, other)) == []
    assert _indexes(graph) == indexes  # not even an index for the other prefix's labels


def _indexes(graph) -> list[str]:
    return sorted(row["label"] for row in graph.run("CALL db.indexes() YIELD label RETURN label"))


def test_the_lost_graph_repair_never_compares_another_prefixs_graph(loaded, cli_env, monkeypatch, capsys):
    # a write command under another prefix: this database's marks describe the `local` graph
    from tests.support.fuzz import snapshot

    _, db, graph = loaded
    marks = snapshot(db, graph)["story_processing"]
    _use_prefix(monkeypatch, "other")
    with pytest.warns(UserWarning, match="marks describe GRAPH_ENV_PREFIX='local'"):
        assert main(["load", str(cli_env / "ds")]) == 0
    assert snapshot(db, graph)["story_processing"] == marks


def test_load_still_repairs_a_lost_graph(loaded, cli_env, capsys):
    _, _, graph = loaded
    graph.delete_all()  # FalkorDB lost everything (or restarted from an older state)
    with pytest.warns(UserWarning, match="lost data"):
        assert main(["load", str(cli_env / "ds")]) == 0
    assert graph.count_nodes().get("Story") == 4
    assert graph.count_nodes().get("Person", 0) >= 3


def test_a_read_only_command_on_a_fresh_database_says_what_to_run(cli_env, capsys):
    # it used to create the schema (a write) and print zeros
    assert main(["stats"]) == 1
    assert "run `heirloom load DIR`" in capsys.readouterr().err


def test_invoking_one_write_step_never_repairs_the_graph(loaded, cli_env, capsys):
    # the repair (unmark every story) belongs to `load` and `backfill`, not to one step
    from tests.support.fuzz import snapshot

    data, db, graph = loaded
    graph.delete_all()
    marks = snapshot(db, graph)["story_processing"]
    event = cli_env / "chunk_embed.json"
    event.write_text(json.dumps({"story_id": data.public_story}))
    assert main(["invoke", "chunk_embed", "-e", str(event)]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "up_to_date"
    assert snapshot(db, graph)["story_processing"] == marks


def test_a_title_naming_an_entity_marks_its_edge_and_the_rebuild_keeps_it(cli_env, capsys, monkeypatch):
    """Topic evidence (docs/decisions/0024): the edge from a story whose title names a person (by
    an alias the text does not use) or a place is `in_title` (a scalar, as Neptune requires), the
    person_mentions template returns it as `topic`, and `backfill --rebuild-graph` writes it again."""
    from heirloom.domain.graph_queries import TEMPLATES, finish
    from heirloom.settings import get_settings
    from heirloom_dev.runtime import open_runtime

    monkeypatch.setenv("EXTRACTOR_PROVIDER", "local")  # the entities a story names enter the graph
    get_settings.cache_clear()
    data = MiniDataset()
    stories = data.files()["stories"]
    stories[0]["title"] = "Nana Ada by the river"  # "Ada planted apple trees by the river. ..."
    assert main(["load", str(data.write(cli_env / "ds", {"stories": stories}))]) == 0
    graph = open_runtime().graph

    def marks() -> dict[tuple[str, str, str], object]:
        query = "MATCH (s:Story)-[r]->(x) WHERE r.kind <> 'BELONGS_TO' RETURN s.id AS sid, r.kind AS k, x.name AS x, r.in_title AS t"
        return {(r["sid"], r["k"], r["x"]): r["t"] for r in graph.run(query)}

    loaded = marks()
    assert loaded[(data.public_story, "MENTIONS", "Ada Marsh")] is True
    assert loaded[(data.public_story, "TOOK_PLACE_AT", "river")] is True
    assert loaded[(data.public_story, "TOOK_PLACE_AT", "barn")] is False
    assert loaded[(data.private_story, "MENTIONS", "Ada Marsh")] is False  # "The long illness"
    params = {"ids": [data.subject], "legacy_ids": [data.legacy], "limit": 50}
    rows = finish("person_mentions", graph.run(TEMPLATES["person_mentions"], params), params)
    assert {r["story_id"]: r["topic"] for r in rows} == {data.public_story: True, data.private_story: False}
    capsys.readouterr()
    assert main(["backfill", "--rebuild-graph"]) == 0
    assert marks() == loaded


def test_backfill_rebuild_graph_twice_gives_the_same_graph(cli_env, capsys):
    from heirloom_dev.runtime import open_runtime
    from tests.support.snapshot import graph_state

    root = MiniDataset().write(cli_env / "ds")
    assert main(["load", str(root)]) == 0
    graph = open_runtime().graph
    loaded = graph_state(graph)
    capsys.readouterr()
    assert main(["backfill", "--rebuild-graph"]) == 0
    assert "graph rebuilt: 2 legacies, 3 persons" in capsys.readouterr().out
    assert graph_state(graph) == loaded
    assert main(["backfill", "--rebuild-graph"]) == 0
    assert graph_state(graph) == loaded


def test_bench_cold_path_no_write_keeps_every_docs_file(cli_env, capsys, monkeypatch):
    """`--no-write`: a measurement under other settings leaves docs/ as committed (cold-path.json
    included); without it, both files the cold path writes are rewritten. The measurement itself
    (two layers built, 18 fresh interpreters, ~40 s) stands in as main's committed figures."""
    from heirloom_dev import coldpath, runtime

    real = runtime.project_root()
    root = cli_env / "checkout"  # the checkout, with a docs/ of its own
    root.mkdir()
    for entry in real.iterdir():
        if entry.name not in {"docs", ".git"}:
            (root / entry.name).symlink_to(entry)
    (root / "docs").mkdir()
    for name in ("cold-path.json", "benchmarks.md"):
        (root / "docs" / name).write_bytes((real / "docs" / name).read_bytes())
    committed = json.loads((real / "docs" / "cold-path.json").read_text())
    measured = {k: committed[k] for k in ("runs", "functions", "precompiled", "no_bytecode")}
    monkeypatch.setattr(runtime, "project_root", lambda: root)
    monkeypatch.setattr(coldpath, "cold_path", lambda *_a, **_k: measured)

    def docs() -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted((root / "docs").iterdir())}

    before = docs()
    assert main(["bench", "--cold-path", "--runs", "1", "--no-write"]) == 0
    assert "## Cold path per function" in capsys.readouterr().out
    assert docs() == before
    assert main(["bench", "--cold-path", "--runs", "1"]) == 0
    after = docs()
    assert after.keys() == before.keys()
    assert all(after[name] != before[name] for name in before)
