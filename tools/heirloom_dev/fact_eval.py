"""`heirloom facts-eval DIR`: precision and recall of extracted facts against hand labels.

The labels (`DIR/facts.json`, docs/decisions/0012) name, per labelled story, the facts a reader
takes from it, each end as a list of acceptable names. The extractor runs as ingestion runs it
(the story's title and the legacy's known names given, the shared post-processing applied); an extracted fact matches
an unmatched label of its story with the same relation whose source and target forms contain its
names (case-insensitive, "the" ignored; either direction for a symmetric relation). With `--bedrock-fixture`, the Bedrock extractor runs
against a botocore Stubber answering each story with the fixture's tool input: that number tests
parsing and post-processing of a given answer, not a model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heirloom.contracts.extraction import ExtractedEntities, ExtractedFact
from heirloom.domain.fact_resolution import SYMMETRIC
from heirloom_dev.loader import DatasetError, read_jsonl

#: (story id, title, content, known names) -> the story's entities
Extract = Callable[[str, str, str, Sequence[str]], ExtractedEntities]


def _norm(name: str) -> str:
    words = name.casefold().replace("’", "'").split()
    return " ".join(w for w in words if w not in ("the", "a", "an"))


def name_matches(name: str, forms: Iterable[str]) -> bool:
    got = _norm(name)
    return bool(got) and any(got == _norm(f) or (_norm(f) and _norm(f) in got) for f in forms)


@dataclass
class FactScore:
    labelled: int = 0
    extracted: int = 0
    matched: int = 0
    by_relation: dict[str, dict[str, int]] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)
    false_positives: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.matched / self.extracted if self.extracted else 0.0

    @property
    def recall(self) -> float:
        return self.matched / self.labelled if self.labelled else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "labelled": self.labelled,
            "extracted": self.extracted,
            "matched": self.matched,
            "precision": round(self.precision, 3),
            "recall": round(self.recall, 3),
            "by_relation": self.by_relation,
            "misses": self.misses,
            "false_positives": self.false_positives,
        }


def score_story(facts: Sequence[ExtractedFact], labels: Sequence[dict[str, Any]], score: FactScore) -> None:
    open_labels = list(labels)
    score.labelled += len(labels)
    score.extracted += len(facts)
    for lab in labels:
        score.by_relation.setdefault(lab["relation"], {"labelled": 0, "extracted": 0, "matched": 0})
        score.by_relation[lab["relation"]]["labelled"] += 1
    for fact in facts:
        row = score.by_relation.setdefault(fact.relation, {"labelled": 0, "extracted": 0, "matched": 0})
        row["extracted"] += 1
        hit = next(
            (
                lab
                for lab in open_labels
                if lab["relation"] == fact.relation
                and (
                    (name_matches(fact.source, lab["source"]) and name_matches(fact.target, lab["target"]))
                    or (
                        fact.relation in SYMMETRIC
                        and name_matches(fact.target, lab["source"])
                        and name_matches(fact.source, lab["target"])
                    )
                )
            ),
            None,
        )
        if hit is not None:
            open_labels.remove(hit)
            score.matched += 1
            row["matched"] += 1
        else:
            score.false_positives.append(
                f"{fact.source} {fact.relation} {fact.target} | {fact.sentence[:80]}"
            )
    score.misses += [f"{lab['source'][0]} {lab['relation']} {lab['target'][0]}" for lab in open_labels]


def read_labels(path: Path, story_ids: set[str]) -> dict[str, list[dict[str, Any]]]:
    """facts.json's labels, `{"stories": {story id: [{"source": [names], "relation": str,
    "target": [names]}, ...]}}`; DatasetError naming what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{path}: not JSON: {exc}") from exc
    stories = data.get("stories") if isinstance(data, dict) else None
    if not isinstance(stories, dict):
        raise DatasetError(f'{path}: expected {{"stories": {{story id: [labels]}}}}')
    for sid, labels in stories.items():
        if sid not in story_ids:
            raise DatasetError(f"{path}: story {sid} is not in stories.jsonl")
        if not isinstance(labels, list):
            raise DatasetError(f"{path}: story {sid}: expected a list of labels")
        for i, lab in enumerate(labels):
            ok = isinstance(lab, dict) and isinstance(lab.get("relation"), str)
            names = [lab.get(k) for k in ("source", "target")] if ok else []
            if not ok or not all(
                isinstance(n, list) and n and all(isinstance(x, str) for x in n) for n in names
            ):
                raise DatasetError(
                    f'{path}: story {sid}, label {i}: expected {{"source": [names], "relation": text, '
                    '"target": [names]}'
                )
    return stories


def evaluate(dataset: Path, extract: Extract) -> FactScore:
    stories = {s["id"]: s for s in read_jsonl(dataset / "stories.jsonl")}
    labels = read_labels(dataset / "facts.json", set(stories))
    persons, links = _rows(dataset / "persons.jsonl"), _rows(dataset / "links.jsonl")
    score = FactScore()
    for sid, story_labels in labels.items():
        story = stories[sid]
        known = known_names(persons, links, story["legacy_id"])
        entities = extract(sid, story["title"], story["content"], known)
        score_story(entities.facts, story_labels, score)
    return score


def _rows(path: Path) -> list[dict[str, Any]]:
    """`read_jsonl`'s rows; none when the dataset has no such file (a set without links)."""
    return read_jsonl(path) if path.is_file() else []


def known_names(persons: list[dict[str, Any]], links: list[dict[str, Any]], legacy_id: str) -> list[str]:
    """The names extraction is given, as ingestion gives them (`story_graph.extract_story`): the
    persons of the story's legacy and of the legacies actively linked to it (rows of a dataset's
    persons.jsonl and links.jsonl)."""
    legacies = {legacy_id}
    for link in links:
        ends = {link["legacy_a_id"], link["legacy_b_id"]}
        if link.get("status") == "active" and legacy_id in ends:
            legacies |= ends
    people = [p for p in persons if p["legacy_id"] in legacies]
    own = [p for p in people if p["legacy_id"] == legacy_id]  # the story's own legacy's first
    ordered = own + [p for p in people if p["legacy_id"] != legacy_id]
    return list(dict.fromkeys(n for p in ordered for n in (p["name"], *p.get("aliases", []))))


def local_extract() -> Extract:
    from heirloom.adapters.spacy.extractor import SpacyEntityExtractor
    from heirloom.domain.extraction import extract_entities

    extractor = SpacyEntityExtractor()

    def run(_sid: str, title: str, text: str, known: Sequence[str]) -> ExtractedEntities:
        return extract_entities(extractor, text, known_names=known, title=title)

    return run


def stubbed_bedrock_extract(fixture: Path) -> Extract:
    """The Bedrock extractor, each story answered by the fixture's tool input (botocore Stubber)."""
    import boto3
    from botocore.stub import ANY, Stubber

    from heirloom.adapters.bedrock import EXTRACTION_TOOL, BedrockEntityExtractor
    from heirloom.domain.extraction import extract_entities

    data = json.loads(fixture.read_text(encoding="utf-8"))
    answers = data.get("answers") if isinstance(data, dict) else None
    if not isinstance(answers, dict) or not all(isinstance(a, dict) for a in answers.values()):
        raise DatasetError(f'{fixture}: expected {{"answers": {{story id: the tool input}}}}')
    from botocore import UNSIGNED
    from botocore.config import Config

    # no credentials: the Stubber answers before anything is signed or sent
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", config=Config(signature_version=UNSIGNED)
    )
    extractor = BedrockEntityExtractor(client, model_id="anthropic.claude-3-haiku-20240307-v1:0")

    def run(sid: str, title: str, text: str, known: Sequence[str]) -> ExtractedEntities:
        response = {
            "output": {
                "message": {
                    "role": "assistant",
                    "content": [
                        {"toolUse": {"toolUseId": "t1", "name": EXTRACTION_TOOL, "input": answers[sid]}}
                    ],
                }
            },
            "stopReason": "tool_use",
            "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
            "metrics": {"latencyMs": 1},
        }
        with Stubber(client) as stub:
            stub.add_response("converse", response, {k: ANY for k in _converse_keys()})
            return extract_entities(extractor, text, known_names=known, title=title)

    return run


def _converse_keys() -> tuple[str, ...]:
    return ("modelId", "system", "messages", "toolConfig", "inferenceConfig")
