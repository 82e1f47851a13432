"""PgStoryStore: the permission source of truth, composed of its parts."""

from __future__ import annotations

from heirloom.adapters.postgres.ledger import ProcessingLedger
from heirloom.adapters.postgres.reads import AccessReads
from heirloom.adapters.postgres.records import RecordWrites


class PgStoryStore(RecordWrites, AccessReads, ProcessingLedger):
    """Record writes, access reads and the processing ledger over one PgDatabase."""
