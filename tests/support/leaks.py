"""What docs/dataset-format.md forbids in an assembled context, checked against a generated world.

`violations` reads the context as the user receives it (formatted text, sources, the chunks and
graph hits that made it in) and reports, as plain sentences:
- a story the oracle does not let the user read, by id (ranked list, sources, chunks, hits,
  differing accounts);
- the same story as text: its planted token in any of those fields;
- a place, event or object that no readable story names, as text;
- a "Known Connections" sentence, or an ambient memory line, that no allowed fact states
  (checked positively: each must name the two ends of a fact the oracle allows, with that
  fact's wording); an ambient line naming a story the user may not read as its source.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.support import oracle
from tests.support.worlds import FACT_VERBS, LABEL_OF, World, mentions

#: how a fact reads in a "Known Connections" sentence (the oracle's own copy of the wording)
PHRASES = {"KNEW": "knew", "WORKED_WITH": "worked with", "FRIENDS_WITH": "was friends with", **FACT_VERBS}


def phrase(fact: dict[str, Any]) -> str:
    if fact["predicate"] == "FAMILY_OF":
        return f"'s {fact['detail']} is" if fact["detail"] else "are family"
    return PHRASES[fact["predicate"]]


def connection_sentences(text: str) -> list[str]:
    match = re.search(r"^## Known Connections\n(.*?)(?:\n\n## |\Z)", text, re.S | re.M)
    if not match:
        return []
    # one "- " line per sentence
    return [line[2:] for line in match.group(1).split("\n") if line.startswith("- ")]


def ambient_sentences(text: str) -> list[str]:
    """The ambient memory section's data lines (without their "- ")."""
    match = re.search(r"^## Also Comes to Mind\n(.*?)(?:\n\n## |\Z)", text, re.S | re.M)
    if not match:
        return []
    return [line[2:] for line in match.group(1).split("\n") if line.startswith("- ")]


def violations(world: World, user: str, legacy: str, out: dict[str, Any]) -> list[str]:
    """Everything in `out` (an AssembledContext as JSON) that `user` reading `legacy` may not see."""
    data = world.data()
    allowed = oracle.readable(data, user, legacy)
    stories = {s["id"]: s for s in data["stories"]}
    problems: list[str] = []

    def name(story_id: str) -> str:
        return world.tokens.get(story_id, story_id)

    ids = {
        "ranked_story_ids": [str(s) for s in out["ranked_story_ids"]],
        "sources": [str(s["story_id"]) for s in out["metadata"]["sources"]],
        "embedding_results": [str(c["story_id"]) for c in out["embedding_results"]],
        "graph_results": [str(h["story_id"]) for h in out["graph_results"]],
        "accounts": [str(a["story_id"]) for g in out.get("accounts", []) for a in g["accounts"]],
    }
    for where, values in ids.items():
        problems += [f"{where}: story {name(s)} ({s})" for s in dict.fromkeys(values) if s not in allowed]
    for source in out["metadata"]["sources"]:
        story = stories.get(str(source["story_id"]))
        if story is not None and source["title"] != story["title"]:
            problems.append(f"sources: title {source['title']!r} is not the story's {story['title']!r}")

    text = "\n".join(
        [
            out["formatted_context"],
            json.dumps(out["metadata"]["sources"]),
            json.dumps(out["embedding_results"]),
            json.dumps(out["graph_results"]),
            json.dumps(out.get("accounts", [])),
            json.dumps(out.get("ambient", [])),
        ]
    )
    for sid, token in world.tokens.items():
        if sid not in allowed and mentions(text, token):
            problems.append(f"text: story {token} ({sid})")
    for entity in LABEL_OF:
        support = [s["id"] for s in data["stories"] if mentions(s["content"], entity)]
        if not set(support) & allowed and mentions(text, entity):
            problems.append(f"text: {entity}, named only by stories the user may not read")

    persons = world.person_names()
    facts = [f for f in world.facts() if _fact_ok(data, user, legacy, f)]
    for line in out.get("ambient", []):
        problems += [f"ambient: story {name(s)} ({s})" for s in line["story_ids"] if s not in allowed]
    sentences = connection_sentences(out["formatted_context"]) + ambient_sentences(out["formatted_context"])
    for sentence in sentences:
        ends = {n for n in persons.values() if mentions(sentence, n)} | {
            e for e in LABEL_OF if mentions(sentence, e)
        }
        justified = any(
            ends == {persons[f["a"]], persons.get(f["b"], f["b"])} and phrase(f) in sentence for f in facts
        )
        if not justified:
            problems.append(f"connection: {sentence!r} is stated by no fact the user may see")
    return problems


def _fact_ok(data: dict[str, list[dict[str, Any]]], user: str, legacy: str, fact: dict[str, Any]) -> bool:
    between = (fact["a"], fact["b"]) if fact["known"] else None
    return oracle.fact_allowed(data, user, legacy, story_ids=fact["story_ids"], known_between=between)
