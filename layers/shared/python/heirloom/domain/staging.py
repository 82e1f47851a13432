"""Staging (docs/architecture.md#staging): while a legacy has staging on, the places, events and
objects a story's extraction names are staged in PostgreSQL, not written to the graph, so no
retrieval (traversal, gazetteer, connections, communities, merge suggestions) can see them. The
graph sync writes only the approved ones (with a curator's edit of name or type), their person
edges with them; a decision re-syncs the story from its saved extraction.

A rejection is kept with the story's content hash: re-extracting the same text stages the same
item id, which stays rejected; changed text stages it again as pending. An approval carries over
to the story's later texts (heirloom.ports.CurationStore.stage).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from pydantic import ValidationError

from heirloom.contracts.curation import EntityLabel, StagedItem
from heirloom.contracts.extraction import (
    EVENT_TYPES,
    OBJECT_TYPES,
    PLACE_TYPES,
    ExtractedEntities,
    ExtractedEvent,
    ExtractedObject,
    ExtractedPlace,
)
from heirloom.contracts.records import Story
from heirloom.domain.entity_sync import PREDICATE_TARGET
from heirloom.domain.names import name_key
from heirloom.errors import InvalidRequest
from heirloom.ports import CurationStore

STAGING_NAMESPACE = uuid.UUID("0b7f3c1e-5d2a-4a8e-9c61-1f4e2d7a9b35")
#: the staged labels, their field in ExtractedEntities and their model
STAGED: tuple[tuple[EntityLabel, str, type[ExtractedPlace | ExtractedEvent | ExtractedObject]], ...] = (
    ("Place", "places", ExtractedPlace),
    ("Event", "events", ExtractedEvent),
    ("Object", "objects", ExtractedObject),
)
TYPES = {"Place": PLACE_TYPES, "Event": EVENT_TYPES, "Object": OBJECT_TYPES}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def item_id(story_id: UUID, digest: str, label: str, name: str) -> UUID:
    return uuid.uuid5(STAGING_NAMESPACE, f"{story_id}|{digest}|{label}|{name_key(name)}")


def sentences_naming(text: str, name: str, limit: int = 3) -> tuple[str, ...]:
    """The sentences of `text` that contain `name` (case folded), at most `limit`."""
    wanted = name.casefold()
    found = [s.strip() for s in _SENTENCE_END.split(text) if wanted in s.casefold()]
    return tuple(found[:limit])


def items_of(story: Story, entities: ExtractedEntities, digest: str) -> list[StagedItem]:
    items: dict[UUID, StagedItem] = {}
    for label, field, _ in STAGED:
        for entity in getattr(entities, field):
            key = item_id(story.id, digest, label, entity.name)
            items.setdefault(
                key,
                StagedItem(
                    id=key,
                    legacy_id=story.legacy_id,
                    story_id=story.id,
                    content_hash=digest,
                    label=label,
                    name=entity.name,
                    type=entity.type,
                    sentences=sentences_naming(story.content, entity.name),
                ),
            )
    return list(items.values())


def check_edit(item: StagedItem) -> None:
    """InvalidRequest unless the item's edit fits its label's contract (a known type, a name)."""
    if item.final_type is not None and item.final_type not in TYPES[item.label]:
        known = ", ".join(sorted(TYPES[item.label]))
        raise InvalidRequest(f"type: {item.final_type!r} is not a {item.label} type ({known})")
    edited(item.label, {"name": item.name, "type": item.type, "confidence": 1.0}, item)


def edited(label: str, entity: Any, item: StagedItem) -> Any:
    """`entity` (a model or its fields) with the item's edit of its name and type;
    InvalidRequest if the edit does not fit the label's contract."""
    model = next(m for lbl, _, m in STAGED if lbl == label)
    data = dict(entity) if isinstance(entity, dict) else entity.model_dump()
    data.update(name=item.final_name or data["name"], type=item.final_type or data["type"])
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        reason = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:2])
        raise InvalidRequest(f"the edit does not fit a {label}: {reason}") from exc


def admitted(entities: ExtractedEntities, items: Sequence[StagedItem]) -> ExtractedEntities:
    """`entities` with only the approved places, events and objects (edited as decided); the
    relationships to an edited one follow its new name, those to the others find no target."""
    decided = {(i.label, name_key(i.name)): i for i in items if i.status == "approved"}
    renamed: dict[tuple[str, str], str] = {}
    update: dict[str, Any] = {}
    for label, field, _ in STAGED:
        kept = []
        for entity in getattr(entities, field):
            item = decided.get((label, name_key(entity.name)))
            if item is None:
                continue
            new = edited(label, entity, item)
            if new.name != entity.name:
                renamed[(label, name_key(entity.name))] = new.name
            kept.append(new)
        update[field] = tuple(kept)
    staged_keys = {(label, name_key(e.name)) for label, field, _ in STAGED for e in getattr(entities, field)}
    relationships = []
    for rel in entities.relationships:
        key = (PREDICATE_TARGET.get(rel.predicate, ""), name_key(rel.object))
        if key in staged_keys and key not in decided:
            continue  # its target waits or was rejected
        relationships.append(rel.model_copy(update={"object": renamed[key]}) if key in renamed else rel)
    update["relationships"] = tuple(relationships)
    return entities.model_copy(update=update)


def admit(
    curation: CurationStore, story: Story, entities: ExtractedEntities, digest: str, version: str
) -> tuple[ExtractedEntities, int]:
    """Stage what `entities` names (kept decisions stand), save the extraction for re-syncs, and
    return what the graph may hold now with the number of items still pending."""
    curation.save_extraction(story.id, digest, version, entities)
    curation.stage(story.id, digest, items_of(story, entities, digest))
    items = curation.staged_of_story(story.id, digest)
    return admitted(entities, items), sum(1 for i in items if i.status == "pending")
