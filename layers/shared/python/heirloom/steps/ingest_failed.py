"""IngestFailed: a story whose ingestion failed for good goes in the failure ledger (error and
cause, never story text); the IngestionFailures alarm counts them (replay: docs/reliability.md)."""

from __future__ import annotations

from heirloom.contracts.ingestion import IngestFailure, IngestFailureRecorded
from heirloom.services import Services


def run(failure: IngestFailure, services: Services) -> IngestFailureRecorded:
    services.stories.record_ingest_failure(failure.story_id, failure.error, failure.cause)
    return IngestFailureRecorded(story_id=failure.story_id)
