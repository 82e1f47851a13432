"""Fixtures shared by the story-event tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from heirloom_dev.functions import LambdaContext, load_handler
from heirloom_dev.loader import load_dataset
from tests.support.services import services_with

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
