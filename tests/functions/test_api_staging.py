"""The API handler's staging and changelog routes on the embedded engines: the switch, the staged
list, approve (with an edit) and reject through the API, the changelog paged; everything for a
legacy's creator or admins only (403 for other roles), bad input as 4xx with a reason."""

from __future__ import annotations

import dataclasses
from uuid import UUID

import pytest

from heirloom.adapters.postgres.curation import PgCurationStore
from heirloom.domain import story_graph
from heirloom.domain.chunking import story_digest
from heirloom_dev.loader import load_dataset
from tests.integration.test_curation import ScriptedExtractor
from tests.integration.test_staging import ORCHARD, SECRET, nodes
from tests.support.apigw import legacy_caller
from tests.support.dataset import MiniDataset
from tests.support.services import services_with

pytestmark = pytest.mark.integration


@pytest.fixture
def api(ports, tmp_path):
    mini = MiniDataset()
    curation = PgCurationStore(ports.stories.db)
    p = dataclasses.replace(ports, curation=curation)
    load_dataset(p, mini.write(tmp_path / "ds"))
    services = services_with(stories=p.stories, graph=p.graph, curation=curation)

    call = legacy_caller(services, mini.legacy)

    def extract() -> None:
        q = dataclasses.replace(
            p,
            extractor=ScriptedExtractor({"apple": ORCHARD, "herself": SECRET}),
            extractor_version="scripted-1",
        )
        for sid in (mini.public_story, mini.personal_story):
            story = q.stories.get_story(UUID(sid))
            assert story is not None and story_graph.enrich_story(
                q, story, story_digest(story.title, story.content)
            )

    return call, extract, mini, p


def test_a_creator_turns_staging_on_and_decides_through_the_api(api):
    call, extract, mini, ports = api
    assert call("GET", "/staging", mini.creator) == (200, {"enabled": False})
    assert call("POST", "/staging", mini.creator, {"enabled": True}) == (200, {"enabled": True})
    extract()
    status, staged = call("GET", "/staged", mini.creator)
    assert status == 200
    assert sorted(i["name"] for i in staged) == ["apple trees", "barn", "cider"]  # not the personal story's
    by_name = {i["name"]: i for i in staged}
    assert by_name["barn"]["sentences"] == ["Every autumn the family pressed cider in the barn."]
    assert nodes(ports.graph, "Object") == set()

    status, out = call(
        "POST", f"/staged/{by_name['apple trees']['id']}/approve", mini.creator, {"name": "orchard"}
    )
    assert status == 200 and out["status"] == "approved" and out["final_name"] == "orchard"
    assert nodes(ports.graph, "Object") == {"orchard"}
    status, out = call("POST", f"/staged/{by_name['cider']['id']}/reject", mini.creator)
    assert status == 200 and out["status"] == "rejected"
    status, left = call("GET", "/staged", mini.creator)
    assert [i["name"] for i in left] == ["barn"]
    status, rejected = call("GET", "/staged", mini.creator, query={"status": "rejected"})
    assert [i["name"] for i in rejected] == ["cider"]

    status, page = call("GET", "/changelog", mini.creator, query={"limit": "2"})
    assert status == 200 and [c["action"] for c in page["changes"]] == ["story_synced", "staged_rejected"]
    status, rest = call("GET", "/changelog", mini.creator, query={"before": str(page["next_before"])})
    assert (
        status == 200
        and "staging_on" in {c["action"] for c in rest["changes"]}
        and rest["next_before"] is None
    )
    # approved with no body: as extracted
    status, out = call("POST", f"/staged/{by_name['barn']['id']}/approve", mini.creator)
    assert status == 200 and out["status"] == "approved" and out["final_name"] is None
    status, left = call("GET", "/staged", mini.creator)
    assert status == 200 and left == []


@pytest.mark.parametrize(
    ("method", "path", "body", "query", "who", "status", "error"),
    [
        ("GET", "/staging", None, None, "admirer", 403, "AccessDenied"),
        ("POST", "/staging", {"enabled": False}, None, "admirer", 403, "AccessDenied"),
        ("GET", "/staged", None, None, "admirer", 403, "AccessDenied"),
        ("POST", "/staged/{item}/approve", {}, None, "admirer", 403, "AccessDenied"),
        ("POST", "/staged/{item}/reject", None, None, "admirer", 403, "AccessDenied"),
        ("GET", "/changelog", None, None, "admirer", 403, "AccessDenied"),
        ("POST", "/staging", {"enabled": "maybe"}, None, "creator", 400, "InvalidRequest"),
        # a switch is a JSON boolean: "off" or 0 were read as one (as `elicitation` never was)
        ("POST", "/staging", {"enabled": "off"}, None, "creator", 400, "InvalidRequest"),
        ("POST", "/staging", {"enabled": 0}, None, "creator", 400, "InvalidRequest"),
        ("POST", "/staging", {}, None, "creator", 400, "InvalidRequest"),
        ("GET", "/staged", None, {"status": "odd"}, "creator", 400, "InvalidRequest"),
        ("POST", "/staged/not-a-uuid/approve", {}, None, "creator", 400, "InvalidRequest"),
        ("POST", "/staged/{item}/approve", {"type": "spaceship"}, None, "creator", 400, "InvalidRequest"),
        ("POST", "/staged/{item}/approve", {"name": ""}, None, "creator", 400, "InvalidRequest"),
        (
            "POST",
            "/staged/00000000-0000-4000-8000-000000000000/reject",
            None,
            None,
            "creator",
            404,
            "NotFound",
        ),
        ("POST", "/staged/{secret}/approve", {}, None, "creator", 404, "NotFound"),
        ("GET", "/changelog", None, {"limit": "0"}, "creator", 400, "InvalidRequest"),
        ("GET", "/changelog", None, {"before": "x"}, "creator", 400, "InvalidRequest"),
    ],
)
def test_refusals_are_typed_4xx_with_reasons(api, method, path, body, query, who, status, error):
    call, extract, mini, ports = api
    call("POST", "/staging", mini.creator, {"enabled": True})
    extract()
    items = ports.curation.staged(UUID(mini.legacy))
    barn = next(i for i in items if i.name == "barn")
    secret = next(i for i in items if i.name == "secret note")
    got, out = call(method, path.format(item=barn.id, secret=secret.id), getattr(mini, who), body, query)
    assert (got, out["error"]) == (status, error) and out["reason"]
    assert next(i for i in ports.curation.staged(UUID(mini.legacy)) if i.name == "barn").status == "pending"
    assert nodes(ports.graph, "Place") == set()
