"""`load` through the domain's ingestion path: PostgreSQL, chunks and the structural graph."""

from heirloom_dev.loader import load_dataset
from tests.support.dataset import MiniDataset


def test_load_writes_records_chunks_and_graph_then_reload_changes_nothing(ports, tmp_path):
    mini = MiniDataset()
    root = mini.write(tmp_path / "ds")
    report = load_dataset(ports, root)
    assert report.changed == 2 + 3 + 2 + 3 + 1 + 1 + 4
    counts = ports.stories.counts()
    assert counts["stories"] == 4 and counts["story_chunks"] == 5
    assert ports.graph.count_nodes() == {"Legacy": 2, "Person": 3, "Story": 4}
    assert ports.graph.count_edges() == {"BELONGS_TO": 7, "FAMILY_OF": 1, "LINKED_TO": 1}
    rel = ports.graph.run(
        "MATCH (a:Person {id: $a})-[r:FAMILY_OF]->(b:Person) RETURN b.name AS name, r.detail AS detail, r.known AS k",
        {"a": mini.subject},
    )
    assert rel == [{"name": "Ivy Marsh", "detail": "sister", "k": True}]
    link = ports.graph.run(
        "MATCH (:Legacy {id: $a})-[r:LINKED_TO]->(b:Legacy) RETURN b.id AS b, r.status AS s",
        {"a": mini.legacy},
    )
    assert link == [{"b": mini.other_legacy, "s": "active"}]

    again = load_dataset(ports, root)
    assert again.changed == 0
    assert ports.stories.counts() == counts


def test_an_edited_story_is_rechunked_and_an_unchanged_one_is_not(ports, tmp_path):
    mini = MiniDataset()
    load_dataset(ports, mini.write(tmp_path / "a"))
    rows = mini.files()["stories"]
    rows[0] = {
        **rows[0],
        "content": "A new first paragraph.\n\nA second.\n\nA third.",
        "updated_at": "2024-06-01T10:00:00Z",
    }
    calls = []
    original = ports.embedder.embed
    ports.embedder.embed = lambda texts: calls.append(list(texts)) or original(texts)  # type: ignore[method-assign]
    report = load_dataset(ports, mini.write(tmp_path / "b", {"stories": rows}))
    assert report.changes["stories"]["updated"] == 1 and report.changes["stories"]["unchanged"] == 3
    paragraphs = ["A new first paragraph.", "A second.", "A third."]
    assert calls == [[f"The orchard\n\n{p}" for p in paragraphs]]  # embedded under the title
    assert [c.text for c in ports.vectors.chunks_of(rows[0]["id"])] == paragraphs
