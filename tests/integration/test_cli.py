"""The CLI on a private stack: load twice (second reports no changes), stats as JSON."""

import json

import pytest

from heirloom.local.cli import main
from tests.support.dataset import MiniDataset
from tests.support.stack import stack_home


@pytest.fixture
def cli_env(monkeypatch, tmp_path):
    from heirloom.settings import get_settings

    monkeypatch.setenv("HEIRLOOM_HOME", str(stack_home() / "home"))
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


def test_backfill_rebuild_graph_twice_gives_the_same_graph(cli_env, capsys):
    from heirloom.local.runtime import open_runtime
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
