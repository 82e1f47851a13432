"""The logical labels and relationship types of the knowledge graph (the whitelist)."""

from __future__ import annotations

NODE_LABELS: frozenset[str] = frozenset({"Legacy", "Person", "Story", "Place", "Event", "Object"})

#: Known social edges between persons (relationships.jsonl).
SOCIAL_TYPES: tuple[str, ...] = ("FAMILY_OF", "KNEW", "WORKED_WITH", "FRIENDS_WITH")

RELATIONSHIP_TYPES: frozenset[str] = frozenset(
    {
        *SOCIAL_TYPES,
        "BELONGS_TO",  # (Story|Person)-[:BELONGS_TO]->(Legacy)
        "LINKED_TO",  # (Legacy)-[:LINKED_TO]->(Legacy), for a link not revoked
        "REMEMBERS",  # (member's Person)-[:REMEMBERS {legacy_id, user_id, role}]->(legacy subject's Person)
        "MENTIONS",  # (Story)-[:MENTIONS]->(Person)
        "TOOK_PLACE_AT",  # (Story|Event)-[:TOOK_PLACE_AT]->(Place)
        "REFERENCES",  # (Story)-[:REFERENCES]->(Event|Object)
        "PARTICIPATED_IN",  # (Person)-[:PARTICIPATED_IN]->(Event)
        "LIVED_IN",  # (Person)-[:LIVED_IN]->(Place)
        "WORKED_AT",  # (Person)-[:WORKED_AT]->(Place)
        "OWNED",  # (Person)-[:OWNED]->(Object)
        "FACT",  # (Person)-[:FACT {relation, verb, sentence, story_id, ...}]->(Person|Place|Event|Object)
    }
)

#: (relationship type, property) pairs FalkorDB indexes (`FalkorGraphStore.ensure_indexes`;
#: Neptune indexes every property itself): a legacy's membership edges are found by their
#: `legacy_id` (graph_sync.DROP_STALE_REMEMBERS), a link's edges by their `link_id`
#: (graph_sync.DROP_MOVED_LINK, DROP_LINK; decision 0035)
EDGE_INDEXES: tuple[tuple[str, str], ...] = (("REMEMBERS", "legacy_id"), ("LINKED_TO", "link_id"))

#: joins the names of a display-only string property (`aliases`, `periods`, `unresolved_people`):
#: Neptune's openCypher has no list property values (docs/decisions/0007)
DISPLAY_SEPARATOR = "; "
