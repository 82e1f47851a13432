"""The communities ASL in moto's interpreter with the real handler on the embedded engines: a
scheduled run (every legacy, by impact) rebuilds where the thresholds are crossed and nowhere
else; a second run has nothing to do."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from heirloom.adapters.postgres.curation import PgCurationStore
from heirloom_dev.loader import load_dataset
from heirloom_dev.workflow import LocalWorkflows
from tests.integration.test_curation import PERSONAL, PRIVATE, PUBLIC, ScriptedExtractor
from tests.support.dataset import MiniDataset
from tests.support.services import services_with

ROOT = Path(__file__).parents[2]


def test_the_scheduled_run_rebuilds_by_impact(ports, tmp_path):
    mini = MiniDataset()
    curation = PgCurationStore(ports.stories.db)
    extractor = ScriptedExtractor({"apple": PUBLIC, "lung": PRIVATE, "herself": PERSONAL})
    p = dataclasses.replace(ports, extractor=extractor, extractor_version="scripted-1", curation=curation)
    load_dataset(p, mini.write(tmp_path / "ds"))
    impacts = {lid: curation.impact(lid).impact for lid in p.stories.legacy_ids()}
    services = services_with(
        {"COMMUNITY_PARTIAL_THRESHOLD": "5", "COMMUNITY_FULL_THRESHOLD": "1000"},
        stories=p.stories, graph=p.graph, curation=curation,
    )  # fmt: skip
    # what the schedule sends (cdk/events.py): every legacy, by impact
    scheduled = {"legacy_ids": [], "force": None}
    with LocalWorkflows(services=services).start() as wf:
        first = wf.run("communities", scheduled)
        second = wf.run("communities", scheduled)
    assert first.status == "SUCCEEDED", first.cause
    kinds = {r["legacy_id"]: r["kind"] for r in first.output["rebuilt"]}
    assert kinds == {str(lid): "partial" if n >= 5 else "none" for lid, n in impacts.items()}
    assert kinds[mini.legacy] == "partial"
    assert curation.communities(mini.legacy, "private")  # type: ignore[arg-type]
    assert {r["kind"] for r in second.output["rebuilt"]} == {"none"}  # the impact was spent


def test_the_sample_event_is_the_workflow_input():
    event = json.loads((ROOT / "events" / "communities_rebuild.json").read_text())
    assert set(event) == {"legacy_ids", "force"}
