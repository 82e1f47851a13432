"""IngestObject: each story file dropped in the import bucket, parsed and stored (one bad or
missing object never stops the others)."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import unquote_plus

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.parser.models import S3RecordModel

from heirloom.contracts.ingestion import ImportResult, ImportResults
from heirloom.contracts.records import MAX_STORY_CHARS
from heirloom.domain import ingestion
from heirloom.domain.imports import MAX_OBJECT_BYTES, parse_document, tag_value
from heirloom.domain.ingestion import AuthorNotAllowed, IngestionPorts, StoryOfAnotherLegacy, UnknownReference
from heirloom.errors import InvalidRequest, NotFound
from heirloom.ports import Change, ObjectStore
from heirloom.services import Services

logger = Logger(child=True)


def run(records: Sequence[S3RecordModel], services: Services) -> ImportResults:
    return ImportResults(results=tuple(_import_one(record, services) for record in records))


def _import_one(record: S3RecordModel, services: Services) -> ImportResult:
    if record.s3.object is None:
        return ImportResult(key="", status="rejected", reason="the record names no object")
    bucket, key = record.s3.bucket.name, unquote_plus(record.s3.object.key)
    try:
        change = import_object(services.ingestion, services.objects, bucket, key)
    except InvalidRequest as exc:
        logger.warning("import_rejected", key=key, reason=str(exc))
        return ImportResult(key=key, status="rejected", reason=str(exc))
    except NotFound as exc:  # the object is gone: the other records still go in
        logger.warning("import_missing", key=key, reason=str(exc))
        return ImportResult(key=key, status="missing", reason=str(exc))
    return ImportResult(key=key, status="imported", change=change.value)


def import_object(ports: IngestionPorts, objects: ObjectStore, bucket: str, key: str) -> Change:
    """Validate and ingest one object; tag it imported or rejected (with the reason)."""
    try:
        size = objects.size(bucket, key)
        if size > MAX_OBJECT_BYTES:
            raise InvalidRequest(f"object is {size} bytes; the limit is {MAX_OBJECT_BYTES}")
        story = parse_document(bucket, key, objects.read(bucket, key))
        if len(story.content) > MAX_STORY_CHARS:  # pragma: no cover - the model enforces it
            raise InvalidRequest("story content is too long")
        try:
            # its author a member who may write it, never a personal story (decision 0028)
            change = ingestion.import_story(ports, story)
        except (UnknownReference, StoryOfAnotherLegacy, AuthorNotAllowed) as exc:
            raise InvalidRequest(str(exc)) from exc
    except InvalidRequest as exc:
        objects.tag(bucket, key, {"heirloom-status": "rejected", "heirloom-reason": tag_value(str(exc))})
        raise
    if change is Change.SKIPPED:  # heirloom.domain.ordering: a newer version, or deleted for good
        why = "a newer version of this story is stored or it was deleted"
        objects.tag(bucket, key, {"heirloom-status": "skipped", "heirloom-story": str(story.id),
                                  "heirloom-reason": why})  # fmt: skip
        return change
    objects.tag(bucket, key, {"heirloom-status": "imported", "heirloom-story": str(story.id)})
    return change
