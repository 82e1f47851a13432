"""Relinking reads every story of a legacy for its transcript speakers: the legacy's known names
are normalised once per relink, not once per story, with the same stories chosen."""

import json
from collections import Counter
from pathlib import Path

from heirloom.domain import speakers
from heirloom.domain.relink import stories_narrated_by_either
from heirloom_dev.loader import load_dataset

EXAMPLES = Path(__file__).parents[2] / "examples"


def test_known_names_are_normalised_once_per_legacy_and_the_same_stories_chosen(ports, monkeypatch):
    legacy_ids = []
    for name in ("sample-legacy", "conversations"):  # 30 of the conversations' 33 stories are transcripts
        load_dataset(ports, EXAMPLES / name)
        rows = (EXAMPLES / name / "legacies.jsonl").read_text().splitlines()
        legacy_ids += [json.loads(row)["id"] for row in rows]
    store = ports.stories
    legacies = [store.persons_of([legacy_id]) for legacy_id in legacy_ids]
    assert len(legacies) >= 2 and all(legacies)
    chosen = [p.id for known in legacies for p in known[::3]]
    # the stories as each one alone reads them (its author, or a speaker of its turns)
    expected = []
    for known in legacies:
        for story in store.stories_of(known[0].legacy_id):
            user = store.get_user(story.author_user_id)
            narrators = {user.person_id} if user else set()
            if (narrators | speakers.speaker_persons(story.content, known)) & set(chosen):
                expected.append(story.id)
    assert len(expected) > len(legacies)

    calls: Counter[str] = Counter()
    normalize = speakers.normalize_name

    def counting(name: str, **kwargs: bool) -> str:
        calls[name] += 1
        return normalize(name, **kwargs)

    monkeypatch.setattr(speakers, "normalize_name", counting)
    assert [s.id for s in stories_narrated_by_either(ports, *chosen)] == expected
    names = Counter(n for known in legacies for p in known for n in (p.name, *p.aliases))
    assert {n: calls[n] for n in names} == dict(names)  # each legacy's names once, not once a story
