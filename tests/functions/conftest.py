"""Fixtures shared by the story-event and API tests."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from heirloom.adapters.postgres.conversations import PgConversationStore
from heirloom.adapters.postgres.curation import PgCurationStore
from heirloom.contracts.connections import ConnectionsRequest, StoryConnections
from heirloom.contracts.context import AssembledContext, ContextRequest
from heirloom.contracts.records import User
from heirloom_dev.functions import LambdaContext, load_handler
from heirloom_dev.loader import load_dataset
from tests.support import pipeline
from tests.support.dataset import MiniDataset
from tests.support.services import context_services, services_with

SAMPLE = Path(__file__).parents[2] / "examples" / "sample-legacy"


@pytest.fixture
def send(ports):
    """Deliver one EventBridge story event to the real StoryEvents handler over the loaded
    sample legacy; returns the handler's `change`."""
    load_dataset(ports, SAMPLE)
    services = services_with(ingestion=ports)
    handler = load_handler("story_events")

    def deliver(event):
        return handler(event, LambdaContext("StoryEvents"), services=services)["change"]

    return deliver


class InProcess:
    """The context and story_connections workflows, run in process (tests/support/pipeline)."""

    def __init__(self, services: Any):
        self.services = services

    def run(self, request: Any) -> Any:
        if isinstance(request, ConnectionsRequest):
            return StoryConnections.model_validate(pipeline.connections(self.services, request))
        assert isinstance(request, ContextRequest)
        return AssembledContext.model_validate(pipeline.assemble(self.services, request))


@pytest.fixture
def member_api(ports, tmp_path):
    """(services, mini, stranger): the mini legacy behind every route of the API handler, the
    workflows run in process; `stranger` a user who is a member of no legacy."""
    mini = MiniDataset()
    load_dataset(ports, mini.write(tmp_path / "ds"))
    stranger = uuid.uuid4()  # a user of the system, member of no legacy
    ports.stories.upsert_user(User(id=stranger, name="Stranger", person_id=None))
    services = context_services(
        ports,
        curation=PgCurationStore(ports.stories.db),
        conversations=PgConversationStore(ports.stories.db),
        start_ingestion=lambda story_id: None,
    )
    services.__dict__["context_workflow"] = services.__dict__["connections_workflow"] = InProcess(services)
    return services, mini, str(stranger)
