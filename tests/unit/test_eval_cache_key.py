"""`heirloom eval` keeps a dataset's load per (dataset, write path): the write path is every
module and data file that decides what a load stores, found by following our imports."""

import shutil
from pathlib import Path

from heirloom_dev.eval import files_digest, write_path_digest, write_path_files


def test_the_write_path_follows_imports_to_what_stores_and_stops_short_of_ranking():
    names = {name for name, _ in write_path_files()}
    # reached only through imports: ingestion -> entity sync -> named things, the extractor's parts
    assert {"heirloom.domain.entity_sync", "heirloom.domain.named_things", "heirloom.domain.graph_sync",
            "heirloom.adapters.spacy.facts", "heirloom_dev.loader"} <= names  # fmt: skip
    assert "config/lexicons/kin.json" in names and any(n.startswith("migrations/") for n in names)
    # reading and ranking change no load
    assert not names & {"heirloom.domain.ranking", "heirloom.domain.traversal", "heirloom.domain.assembly"}


def test_the_digest_is_stable_and_moves_with_any_file_of_the_write_path(tmp_path: Path):
    assert write_path_digest() == write_path_digest()
    files = write_path_files()
    copies = []
    for i, (name, path) in enumerate(files):
        copy = tmp_path / f"{i}_{path.name}"
        shutil.copyfile(path, copy)
        copies.append((name, copy))
    assert files_digest(copies) == write_path_digest()
    name, deep = next((n, p) for n, p in copies if n == "heirloom.domain.named_things")
    deep.write_text(deep.read_text() + "\n# one line more\n")
    assert files_digest(copies) != write_path_digest()
