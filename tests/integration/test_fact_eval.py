"""`heirloom facts-eval`: fact precision/recall against the sample legacy's hand labels, on the
local extractor and on the Bedrock path with stubbed answers (that one tests parsing and
post-processing: the answers are a fixture, not a model)."""

import json
from pathlib import Path

import pytest

from heirloom.contracts.extraction import ExtractedFact
from heirloom_dev.cli import main
from heirloom_dev.fact_eval import FactScore, score_story

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample-legacy"
ANSWERS = ROOT / "tests" / "support" / "bedrock_facts_answers.json"


def _fact(source, relation, target):
    return ExtractedFact(
        source=source, relation=relation, target=target, verb="v", sentence="s", confidence=0.9
    )


def test_scoring_matches_names_by_form_once_and_symmetric_either_way():
    labels = [
        {"source": ["Uncle Ray", "Ray"], "relation": "MET", "target": ["Uncle Dommie"]},
        {"source": ["Mom"], "relation": "MADE", "target": ["dress"]},
    ]
    score = FactScore()
    got = [_fact("Uncle Dommie", "MET", "Uncle Ray"), _fact("Mom", "MADE", "the wedding dress"),
           _fact("Mom", "MADE", "dress"), _fact("Mom", "KEPT", "dress")]  # fmt: skip
    score_story(got, labels, score)
    assert (score.labelled, score.extracted, score.matched) == (2, 4, 2)  # a label matches once
    assert score.precision == 0.5 and score.recall == 1.0


def test_the_bedrock_path_keeps_what_the_vocabulary_and_the_floor_allow(tmp_path, capsys):
    out = tmp_path / "bedrock.json"
    assert main(["facts-eval", str(SAMPLE), "--bedrock-fixture", str(ANSWERS), "--json", str(out)]) == 0
    score = json.loads(out.read_text())
    labelled = sum(len(v) for v in json.loads((SAMPLE / "facts.json").read_text())["stories"].values())
    # every labelled fact parses and survives; of the four noisy ones only the wrong fact in the
    # vocabulary is kept (out-of-vocabulary, under 0.7 and unlisted-target facts are dropped)
    assert score["labelled"] == labelled and score["matched"] == labelled
    assert score["extracted"] == labelled + 1
    assert score["false_positives"] == [
        "Uncle Walt GAVE dock | the next summer Uncle Walt built the dock out of old railroad ties"
    ]
    assert "bedrock (stubbed answers)" in capsys.readouterr().out


def test_the_local_extractor_is_scored_on_the_labels(tmp_path):
    out = tmp_path / "local.json"
    assert main(["facts-eval", str(SAMPLE), "--json", str(out)]) == 0
    score = json.loads(out.read_text())
    assert score["extracted"] == score["matched"] + len(score["false_positives"])
    assert score["labelled"] == score["matched"] + len(score["misses"])


def test_a_folder_without_labels_is_refused(tmp_path, capsys):
    assert main(["facts-eval", str(tmp_path)]) != 0
    assert "no facts.json" in capsys.readouterr().err


def test_each_labelled_story_reaches_the_extractor_with_its_title():
    """As ingestion does, facts-eval hands each story's title to extraction (the title rules of
    decisions 0024 and 0026 are exercised)."""
    from heirloom.contracts.extraction import ExtractedEntities
    from heirloom_dev.fact_eval import evaluate

    stories = [json.loads(line) for line in (SAMPLE / "stories.jsonl").read_text().splitlines() if line]
    titles = {s["id"]: s["title"] for s in stories}
    seen: dict[str, str] = {}

    def recording(sid, title, text, known):
        seen[sid] = title
        return ExtractedEntities()

    evaluate(SAMPLE, recording)
    labelled = json.loads((SAMPLE / "facts.json").read_text())["stories"]
    assert seen and seen == {sid: titles[sid] for sid in labelled}


def test_extraction_is_given_the_names_of_actively_linked_legacies_as_ingestion_gives_them(tmp_path):
    from heirloom_dev.fact_eval import _rows, known_names

    rows = {
        "persons": [
            {"id": "p1", "legacy_id": "A", "name": "Rosa Ferraro", "aliases": ["Nonna"]},
            {"id": "p2", "legacy_id": "B", "name": "Virginia Ferraro"},
            {"id": "p3", "legacy_id": "C", "name": "Tavi Bruni"},
        ],
        "links": [
            {"legacy_a_id": "B", "legacy_b_id": "A", "status": "active"},
            {"legacy_a_id": "A", "legacy_b_id": "C", "status": "pending"},
        ],
    }
    persons, links = rows["persons"], rows["links"]
    assert known_names(persons, links, "A") == ["Rosa Ferraro", "Nonna", "Virginia Ferraro"]
    assert known_names(persons, links, "C") == ["Tavi Bruni"]  # a pending link gives no names
    assert _rows(tmp_path / "links.jsonl") == []  # a set with no links file has no links
    assert known_names(persons, [], "B") == ["Virginia Ferraro"]


def test_every_label_file_names_stories_of_its_set_and_relations_of_the_vocabulary():
    from typing import get_args

    from heirloom.contracts.extraction import FactRelation

    files = sorted((ROOT / "examples").glob("*/facts.json"))
    assert len(files) >= 2  # the sample legacy's, and linked-family's held-out labels
    for path in files:
        ids = {
            json.loads(line)["id"]
            for line in (path.parent / "stories.jsonl").read_text().splitlines()
            if line
        }
        stories = json.loads(path.read_text())["stories"]
        assert stories and set(stories) <= ids, path
        for labels in stories.values():
            for label in labels:
                assert label["relation"] in get_args(FactRelation), (path, label)
                assert label["source"] and label["target"] and label["note"], (path, label)


@pytest.mark.parametrize(
    "labels,reason",
    [
        ([], '"stories"'),
        ({"stories": []}, '"stories"'),
        ({"stories": {"no-such-story": []}}, "not in stories.jsonl"),
        ({"stories": {"STORY": [5]}}, "label 0"),
        ({"stories": {"STORY": [{"source": ["Dom"], "target": ["Peg"]}]}}, "label 0"),
        ({"stories": {"STORY": [{"source": "Dom", "relation": "MET", "target": ["Peg"]}]}}, "label 0"),
    ],
)
def test_a_bad_labels_file_is_one_line_and_exit_2(tmp_path, capsys, labels, reason):
    """A labels file of the wrong shape gave a TypeError or AttributeError traceback."""
    import shutil

    shutil.copy(SAMPLE / "stories.jsonl", tmp_path / "stories.jsonl")
    story = json.loads((SAMPLE / "stories.jsonl").read_text().splitlines()[0])["id"]
    (tmp_path / "facts.json").write_text(json.dumps(labels).replace("STORY", story))
    assert main(["facts-eval", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert reason in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_json_file_in_no_folder_is_refused_before_the_evaluation(capsys):
    assert main(["facts-eval", str(SAMPLE), "--json", "/nonexistent/x.json"]) == 2
    assert "no folder /nonexistent" in capsys.readouterr().err
