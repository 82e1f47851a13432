"""Formatting: the context's sections, story headings with provenance, known-connection
sentences and the note that says what is missing."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from heirloom.contracts.context import (
    Candidate,
    CommunityNote,
    ContextRequest,
    DifferingAccounts,
    FilteredContext,
    GraphFact,
    RetrievalSource,
)
from heirloom.domain.budget import QUOTE, Excerpt, StoryText, clean_text
from heirloom.domain.ranking import ScoredCandidate
from heirloom.fencing import quoted_title, story_close, story_open

CONNECTIONS_HEADER = "## Known Connections"
ACCOUNTS_HEADER = "## Differing Accounts"


CONNECTED_HEADER = "## Stories from Connected Legacies"
COMMUNITIES_HEADER = "## Circles in the Stories"


_FACT_VERBS: dict[str, str] = {
    "KNEW": "knew",
    "WORKED_WITH": "worked with",
    "FRIENDS_WITH": "was friends with",
    "LIVED_IN": "lived in",
    "WORKED_AT": "worked at",
    "PARTICIPATED_IN": "took part in",
    "OWNED": "owned",
}


def _possessive(name: str) -> str:
    return name if name.endswith(("'s", "’s")) else f"{name}'s"


def _period(since: str | None, until: str | None) -> str | None:
    since, until = (clean_text(since) if since else None), (clean_text(until) if until else None)
    if since and until:
        return f"from {since} to {until}"
    if since:
        return f"since {since}"
    if until:
        return f"until {until}"
    return None


#: where a conversation fact comes from: no story title can read like it
CONVERSATION_ORIGIN = " (you said this in an earlier conversation)"


def told_fact_sentence(fact: GraphFact) -> str:
    """A fact a story told: the story's own sentence quoted, with the story it comes from; a
    fact of the user's own conversation says so (outside quotes, so no title can)."""
    said = quoted_title(clean_text(fact.sentence or ""))  # story text: one line, quotes escaped
    if fact.owner_user_id is not None:
        return f'"{said}"{CONVERSATION_ORIGIN}'
    title = quoted_title(clean_text(fact.source_title or ""))
    source = f' (from "{title}")' if title else ""
    return f'"{said}"{source}'


def fact_sentence(fact: GraphFact) -> str:
    """A fact as one plain sentence. `detail` reads as what the object is to the subject."""
    if fact.sentence:
        return told_fact_sentence(fact)
    subject, obj = clean_text(fact.subject), clean_text(fact.object)
    detail = clean_text(fact.detail) if fact.detail and fact.detail.strip() else None
    if fact.predicate == "FAMILY_OF":
        core = f"{_possessive(subject)} {detail} is {obj}" if detail else f"{subject} and {obj} are family"
        extras = [_period(fact.since, fact.until)]
    else:
        verb = _FACT_VERBS.get(fact.predicate)
        core = f"{subject} {verb} {obj}" if verb else f"{subject} is connected to {obj}"
        extras = [detail, _period(fact.since, fact.until)]
    notes = [e for e in extras if e]
    return f"{core} ({', '.join(notes)})." if notes else f"{core}."


def fact_sentences(facts: Iterable[GraphFact]) -> list[str]:
    """One sentence per fact, in the given order; a fact between the same two nodes with the same
    predicate (either direction) is said once."""
    seen_pairs: set[tuple[str, frozenset[str]]] = set()
    out: list[str] = []
    for fact in facts:
        key = (fact.predicate, frozenset({fact.subject_id, fact.object_id}))
        if fact.sentence:  # every telling of a told fact is its own (accounts may differ)
            key = (f"{fact.predicate}|{fact.story_ids}", key[1])
        sentence = fact_sentence(fact)
        if key in seen_pairs or sentence in out:
            continue
        seen_pairs.add(key)
        out.append(sentence)
    return out


#: what a persona may tell the family when a source is missing
MISSING: dict[RetrievalSource, str] = {
    "graph": "known connections (the family relationship graph)",
    "vector": "story search by meaning",
}


def source_report(
    request: ContextRequest, filtered: FilteredContext
) -> tuple[tuple[RetrievalSource, ...], tuple[RetrievalSource, ...]]:
    """(sources used, sources degraded). A source the request did not want (vector or graph
    mode, graph augmentation off) is neither; a graph skipped although wanted was behind an
    open breaker."""
    used: list[RetrievalSource] = []
    degraded: list[RetrievalSource] = []
    wanted = {
        "vector": request.mode != "graph",
        "graph": request.mode != "vector" and request.graph_enabled,
    }
    source: RetrievalSource
    for source, status in (("vector", filtered.vector_status), ("graph", filtered.graph_status)):
        if status == "ok":
            used.append(source)
        elif wanted[source] and (status != "skipped" or filtered.intent.breaker_state != "closed"):
            degraded.append(source)
    return tuple(used), tuple(degraded)


def degradation_note(degraded: Sequence[RetrievalSource]) -> str:
    if not degraded:
        return ""
    missing = " and ".join(MISSING[d] for d in degraded)
    verb = "is" if len(degraded) == 1 else "are"
    return f"Note: {missing} {verb} unavailable for this answer, so what follows may be incomplete."


def connections_block(sentences_: Sequence[str]) -> str:
    """One "- " line per sentence: a name that starts a fact cannot start one of our lines."""
    return f"{CONNECTIONS_HEADER}\n" + "\n".join(f"- {s}" for s in sentences_) if sentences_ else ""


def account_line(group: DifferingAccounts) -> str:
    """One disputed fact as a "- " line (so no name or sentence in it starts one of our lines):
    each telling quoted and credited to its narrator and story, none preferred."""
    told = []
    for a in group.accounts:
        title = quoted_title(clean_text(a.title))
        story = f' (story "{title}")' if title else ""
        said = quoted_title(clean_text(a.sentence))
        narrator = quoted_title(clean_text(a.narrator))  # a display name: quoted like a title
        told.append(f'"{narrator}" recalls{story}: "{said}"')
    return "- " + ". ".join(told)


def accounts_block(lines: Sequence[str]) -> str:
    return f"{ACCOUNTS_HEADER}\n" + "\n".join(lines) if lines else ""


def community_lines(note: CommunityNote) -> str:
    """A community summary as data (a "- " line, so no name in it can start one of our lines)
    and its provenance: the stories it was built from."""
    titles = ", ".join(f'"{quoted_title(t)}"' for t in note.titles)
    return f"- {clean_text(note.summary)}\nSource: community summary, from the stories {titles}"


def communities_block(notes: Sequence[CommunityNote]) -> str:
    return f"{COMMUNITIES_HEADER}\n" + "\n".join(community_lines(n) for n in notes) if notes else ""


def legacy_label(name: str) -> str:
    """A legacy's name (its creator chose it) in our headers and source lines: quoted, its
    quotes escaped, so it cannot end the parenthesis or the line it sits in."""
    return f'"{quoted_title(clean_text(name))}"'


def story_heading(candidate: Candidate) -> str:
    title = quoted_title(candidate.title)
    if not candidate.primary:
        return f'### "{title}" — from {legacy_label(candidate.legacy_name)}'
    return f'### "{title}" ({candidate.year})' if candidate.year is not None else f'### "{title}"'


def provenance_lines(scored: ScoredCandidate) -> list[str]:
    candidate = scored.candidate
    matched = " + ".join(scored.reasons)
    if candidate.primary:
        return [f"Source: Primary legacy, matched by: {matched}"]
    lines = [f"Source: Linked legacy ({legacy_label(candidate.legacy_name)}), matched by: {matched}"]
    if candidate.shared_via:
        shared = "all stories shared" if candidate.shared_via == "all" else "selected stories shared"
        lines.append(f"Shared via: Legacy link ({shared})")
    return lines


@dataclass
class Slot:
    scored: ScoredCandidate
    text: StoryText
    #: heading + fence + provenance + the newlines around the excerpt and between blocks
    meta: int
    heading: str
    provenance: list[str]
    fence: str
    excerpt: Excerpt | None = None

    @property
    def primary(self) -> bool:
        return self.scored.candidate.primary

    def block(self) -> str:
        assert self.excerpt is not None
        return "\n".join(
            [
                self.heading,
                story_open(self.fence),
                QUOTE + self.excerpt.text,
                story_close(self.fence),
                *self.provenance,
            ]
        )


def render(note: str, connections: str, primary_header: str, slots: Sequence[Slot]) -> str:
    sections = [part for part in (note, connections) if part]
    for header, primary in ((primary_header, True), (CONNECTED_HEADER, False)):
        blocks = [s.block() for s in slots if s.excerpt is not None and s.primary is primary]
        if blocks:
            sections.append(header + "\n" + "\n\n".join(blocks))
    return "\n\n".join(sections)
