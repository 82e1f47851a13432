"""Ambient memory (seed 003): plain sentences about the known entities the user's message just
named, in a small section of their own, so the persona "just knows" them.

Built only from facts AccessFilter kept (a known record touching a legacy the user belongs to,
or a fact a readable story states; each fact names only its readable stories), never from story
text. A line is a fact touching a node the message named (a 1-hop walk from the gazetteer's
matches), scored by its support: 1.0 a known record, else 0.5 per readable story stating it, up
to 1.0; lines under the threshold are left out. At most `max_lines` lines and `token_budget`
tokens (never more than 5% of the request's budget), best first; a sentence the rest of the
context already states (Known Connections) is not repeated.

Each line is data ("- " then the sentence, fenced like every fact part) with its own
"Source:" line, so no name, detail or title can start a line or forge the section.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from heirloom.contracts.context import AmbientLine, GraphFact, QueryIntent
from heirloom.domain.format import fact_sentence
from heirloom.fencing import quoted_title
from heirloom.ports import Tokenizer
from heirloom.settings import AmbientSettings

AMBIENT_HEADER = "## Also Comes to Mind"
#: the section's share of the request's token budget at most
AMBIENT_MAX_SHARE = 0.05
#: support per readable story that states a fact (a known record: 1.0)
STORY_SUPPORT = 0.5
#: titles a source line names before "and N more"
SOURCE_TITLES = 2


def ambient_cap(settings: AmbientSettings, token_budget: int) -> int:
    return min(settings.token_budget, int(token_budget * AMBIENT_MAX_SHARE))


def support(fact: GraphFact) -> float:
    if fact.known:
        return 1.0
    return min(1.0, STORY_SUPPORT * len(fact.story_ids))


def candidates(
    intent: QueryIntent, facts: Iterable[GraphFact], settings: AmbientSettings, said: Iterable[str] = ()
) -> list[AmbientLine]:
    """The lines worth saying, best first (support, then the order the message named the
    nodes, then the facts' order): each fact once, touching a named node, at or above the
    threshold, and not a sentence in `said`."""
    order = {m.node_id: i for i, m in reversed(list(enumerate(intent.matches)))}
    seen = set(said)
    ranked: list[tuple[float, int, int, AmbientLine]] = []
    for i, fact in enumerate(facts):
        ends = [n for n in (fact.subject_id, fact.object_id) if n in order]
        score = support(fact)
        if not ends or score < settings.min_score:
            continue
        sentence = fact_sentence(fact)
        if sentence in seen:
            continue
        seen.add(sentence)
        node = min(ends, key=order.__getitem__)
        line = AmbientLine(
            sentence=sentence,
            score=score,
            node_id=node,
            source="records" if fact.known else "stories",
            story_ids=() if fact.known else fact.story_ids,
            titles=() if fact.known else fact.titles,
        )
        ranked.append((-score, order[node], i, line))
    return [line for *_, line in sorted(ranked, key=lambda r: r[:3])]


def source_line(line: AmbientLine) -> str:
    if line.source == "records":
        return "Source: the family's records"
    shown = ", ".join(f'"{quoted_title(t)}"' for t in line.titles[:SOURCE_TITLES])
    more = len(line.titles) - SOURCE_TITLES
    return f"Source: the stories {shown} and {more} more" if more > 0 else f"Source: {shown}"


def ambient_block(lines: Sequence[AmbientLine]) -> str:
    if not lines:
        return ""
    return AMBIENT_HEADER + "\n" + "\n".join(f"- {line.sentence}\n{source_line(line)}" for line in lines)


def fit(
    lines: Sequence[AmbientLine], settings: AmbientSettings, cap: int, tokenizer: Tokenizer
) -> list[AmbientLine]:
    """The best lines, in order, while there are at most `max_lines` and the block fits `cap`."""
    kept: list[AmbientLine] = []
    for line in lines:
        if len(kept) >= settings.max_lines or tokenizer.count(ambient_block([*kept, line])) > cap:
            break
        kept.append(line)
    return kept
