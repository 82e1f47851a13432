"""Edge resolution for facts (docs/decisions/0012): which fact edges are current, which a later
telling superseded, and which are conflicting accounts.

Two facts of one relation between the same pair contradict when one denies what the other
states (`negated`) or both give years and the years differ. The same narrator restating a fact
differently supersedes the earlier telling: it stays in the graph with `valid_to` (the telling
that replaced it), `invalid_reason` and `superseded_by`, so an "as of" view can read it. Different
narrators disagreeing keep both, each marked `conflicting`, for a side-by-side view.

The state is recomputed from every telling of the pairs involved, never patched: a story that is
edited or deleted is withdrawn first, so what it superseded becomes current again. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: relations that read the same both ways ("A married B" is "B married A")
SYMMETRIC = frozenset({"MARRIED", "SIBLING_OF", "FRIEND_OF", "WORKED_WITH", "MET"})


@dataclass(frozen=True)
class FactEdge:
    """One telling of a fact: the edge `fact_id` from `source_id` to `target_id`."""

    fact_id: str
    source_id: str
    target_id: str
    relation: str
    story_id: str
    narrator: str
    told_at: str  # ISO timestamp of the story's writing; compares in time order
    negated: bool = False
    years: str = ""  # "|1950|1951|" or ""
    sentence: str = ""


@dataclass(frozen=True)
class FactState:
    """What the resolution writes on a fact edge ('' / False when current and undisputed)."""

    valid_to: str = ""
    invalid_reason: str = ""
    superseded_by: str = ""
    conflicting: bool = False


CURRENT = FactState()


def pair_key(fact: FactEdge) -> tuple[str, str, str]:
    ends = (fact.source_id, fact.target_id)
    if fact.relation in SYMMETRIC:
        ends = (min(ends), max(ends))
    return (ends[0], ends[1], fact.relation)


def contradicts(a: FactEdge, b: FactEdge) -> bool:
    """Same pair and relation, and one denies the other or their stated years differ."""
    if pair_key(a) != pair_key(b):
        return False
    return a.negated != b.negated or bool(a.years and b.years and a.years != b.years)


def _reason(newer: FactEdge) -> str:
    return f"restated by the same narrator in story {newer.story_id}: {newer.sentence}"[:400]


def resolve_edges(facts: Iterable[FactEdge]) -> dict[str, FactState]:
    """fact_id -> its state, for every telling given (pass all tellings of the pairs involved)."""
    groups: dict[tuple[str, str, str], list[FactEdge]] = {}
    for f in facts:
        groups.setdefault(pair_key(f), []).append(f)
    out: dict[str, FactState] = {}
    for tellings in groups.values():
        ordered = sorted(tellings, key=lambda f: (f.told_at, f.story_id, f.fact_id))
        superseded: dict[str, FactEdge] = {}
        for i, old in enumerate(ordered):
            newer = next(
                (
                    n
                    for n in ordered[i + 1 :]
                    if n.narrator == old.narrator and n.story_id != old.story_id and contradicts(old, n)
                ),
                None,
            )
            if newer is not None:
                superseded[old.fact_id] = newer
        current = [f for f in ordered if f.fact_id not in superseded]
        disputed = _disputed(current)
        for f in ordered:
            newer = superseded.get(f.fact_id)
            if newer is not None:
                out[f.fact_id] = FactState(
                    valid_to=newer.told_at, invalid_reason=_reason(newer), superseded_by=newer.story_id
                )
            else:
                out[f.fact_id] = FactState(conflicting=f.fact_id in disputed)
    return out


def _disputed(current: Sequence[FactEdge]) -> set[str]:
    """Current tellings some other narrator's current telling contradicts."""
    out: set[str] = set()
    for i, a in enumerate(current):
        for b in current[i + 1 :]:
            if a.narrator != b.narrator and contradicts(a, b):
                out |= {a.fact_id, b.fact_id}
    return out
