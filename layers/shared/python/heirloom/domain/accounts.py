"""Differing accounts (issue 18 item 6): readable stories whose narrators disagree on a fact are
shown side by side, each credited to its narrator and story, instead of choosing one.

The graph marks a telling `conflicting` against every other narrator's telling, readable or not,
so that mark is never shown as is: `credit_readable` recomputes the dispute among the facts the
user may read (fact_resolution's rule: a denial, or stated years that differ), so an account whose
only dissent sits in a story the user may not read reads as a plain fact. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from uuid import UUID

from heirloom.contracts.context import Account, DifferingAccounts, GraphFact
from heirloom.domain.fact_resolution import FactEdge, contradicts, pair_key

#: how an account reads when its author has no name on record
UNNAMED = "A family member"


def _edge(i: int, fact: GraphFact) -> FactEdge:
    return FactEdge(
        fact_id=str(i),
        source_id=fact.subject_id,
        target_id=fact.object_id,
        relation=fact.predicate,
        story_id=fact.story_ids[0] if fact.story_ids else "",
        narrator=fact.narrator_id or "",
        told_at="",
        negated=fact.negated,
        years=fact.years,
    )


def credit_readable(facts: Sequence[GraphFact], author_names: Mapping[str, str]) -> tuple[GraphFact, ...]:
    """The readable facts with each told fact's narrator named (from its story's author) and
    `conflicting` true only when another readable narrator's telling contradicts it."""
    edges = [_edge(i, f) for i, f in enumerate(facts)]
    disputed: set[int] = set()
    for i, a in enumerate(edges):
        if not facts[i].sentence:
            continue
        for j in range(i + 1, len(edges)):
            b = edges[j]
            if facts[j].sentence and a.narrator != b.narrator and contradicts(a, b):
                disputed |= {i, j}
    out: list[GraphFact] = []
    for i, fact in enumerate(facts):
        if not fact.sentence:
            out.append(fact.model_copy(update={"conflicting": False}))
            continue
        story = fact.story_ids[0] if fact.story_ids else ""
        name = " ".join(author_names.get(story, "").split()) or UNNAMED
        out.append(fact.model_copy(update={"narrator": name, "conflicting": i in disputed}))
    return tuple(out)


def group_accounts(facts: Sequence[GraphFact]) -> tuple[list[DifferingAccounts], list[GraphFact]]:
    """(the disputed facts as side-by-side groups, in first-seen order; every other fact). A group
    needs two readable tellings by different narrators; otherwise its facts stay plain."""
    groups: dict[tuple[str, str, str], list[GraphFact]] = {}
    for fact in facts:
        if fact.conflicting and fact.sentence and fact.story_ids:
            groups.setdefault(pair_key(_edge(0, fact)), []).append(fact)
    grouped: list[DifferingAccounts] = []
    in_group: set[int] = set()
    for tellings in groups.values():
        if len({t.narrator_id for t in tellings}) < 2:
            continue
        first = tellings[0]
        grouped.append(
            DifferingAccounts(
                subject=first.subject,
                relation=first.predicate,
                object=first.object,
                accounts=tuple(
                    Account(
                        narrator=t.narrator or UNNAMED,
                        story_id=UUID(t.story_ids[0]),
                        title=t.source_title or "",
                        sentence=t.sentence or "",
                    )
                    for t in tellings
                ),
            )
        )
        in_group |= {id(t) for t in tellings}
    plain = [f for f in facts if id(f) not in in_group]
    return grouped, plain
