"""A deployment without a graph (GRAPH_PROVIDER=none) still ingests: records and chunks land in
PostgreSQL, the graph writes go nowhere, and a second load reports no changes."""

import dataclasses

from heirloom.adapters.nograph import NoGraphStore
from heirloom_dev.loader import load_dataset
from tests.support.dataset import MiniDataset


def test_a_dataset_loads_without_a_graph(ports, tmp_path):
    root = MiniDataset().write(tmp_path / "ds")
    no_graph = dataclasses.replace(ports, graph=NoGraphStore("prod"), extractor=None, extractor_version="")
    first = load_dataset(no_graph, root)
    stories = ports.stories.counts()["stories"]
    assert stories == 4 and ports.stories.counts()["story_chunks"] > 0
    assert ports.graph.count_nodes() == {}  # the real graph of this test was never written
    assert first.changed > 0
    assert load_dataset(no_graph, root).changed == 0
    assert ports.stories.counts()["stories"] == stories
