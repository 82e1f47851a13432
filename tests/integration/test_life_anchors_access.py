"""The life timeline's anchors ("after she retired": the year of her retirement party) come
only from events the asking user's readable stories name: a year only a private story gives
must not place an admirer's question (its periods steer retrieval and reach admin debug)."""

from __future__ import annotations

import dataclasses

import pytest

from heirloom.contracts.context import ContextRequest
from heirloom.contracts.extraction import ExtractedEntities, ExtractedEvent
from heirloom_dev.loader import load_dataset
from tests.integration.test_curation import PUBLIC, ScriptedExtractor
from tests.support import pipeline
from tests.support.dataset import MiniDataset
from tests.support.services import context_services

pytestmark = pytest.mark.integration

#: the private story dates the retirement; Ada was born in 1930 and died in 2010 (MiniDataset)
RETIRED = ExtractedEntities(events=(ExtractedEvent(name="retirement party", date="1988", confidence=0.9),))
QUESTION = "What did she do after she retired?"


def periods(services, mini: MiniDataset, user: str, **more: object) -> tuple[str, ...]:
    request = ContextRequest(
        legacy_id=mini.legacy, user_id=user, persona="biographer", query=QUESTION, **more
    )
    plan = pipeline.call("intent_analysis", {"request": request.model_dump(mode="json")}, services)
    return tuple(plan["entities"]["time_periods"])


def test_an_anchor_only_an_unreadable_story_dates_does_not_place_the_question(ports, tmp_path):
    mini = MiniDataset()
    p = dataclasses.replace(ports, extractor=ScriptedExtractor({"apple": PUBLIC, "lung": RETIRED}),
                            extractor_version="scripted-1")  # fmt: skip
    load_dataset(p, mini.write(tmp_path / "ds"))
    services = context_services(p)
    assert periods(services, mini, mini.creator) == ("1988-2010",)  # the creator reads the private story
    assert periods(services, mini, mini.admirer) == ("1995-2010",)  # the admirer: the age of 65
