"""The API handler's curation routes on the embedded engines: the authorizer's identity, the
caller's role in the legacy, typed refusals as 4xx with reasons (409 for an undo that cannot
happen), and a merge undone through the API leaving the graph as it was."""

from __future__ import annotations

import dataclasses

import pytest

from heirloom.adapters.postgres.curation import PgCurationStore
from heirloom.domain.entity_sync import entity_id
from heirloom_dev.loader import load_dataset
from tests.integration.test_curation import PERSONAL, PRIVATE, PUBLIC, ScriptedExtractor, eid
from tests.support.apigw import legacy_caller
from tests.support.dataset import MiniDataset
from tests.support.services import services_with
from tests.support.snapshot import graph_state

pytestmark = pytest.mark.integration


@pytest.fixture
def api(ports, tmp_path):
    mini = MiniDataset()
    extractor = ScriptedExtractor({"apple": PUBLIC, "lung": PRIVATE, "herself": PERSONAL})
    p = dataclasses.replace(ports, extractor=extractor, extractor_version="scripted-1")
    load_dataset(p, mini.write(tmp_path / "ds"))
    services = services_with(stories=p.stories, graph=p.graph, curation=PgCurationStore(p.stories.db))

    call = legacy_caller(services, mini.legacy)

    return call, mini, p


def test_a_creator_lists_merges_and_undoes_through_the_api(api):
    call, mini, ports = api
    status, found = call("GET", "/merge-suggestions", mini.creator)
    assert status == 200
    pair = next(s for s in found if s["b"]["name"] == "accordion")
    assert pair["a"]["name"] == "Papa Sal's accordion" and pair["evidence"]
    before = graph_state(ports.graph)
    status, merged = call(
        "POST", "/merges", mini.creator, {"survivor_id": pair["a"]["id"], "absorbed_id": pair["b"]["id"]}
    )
    assert status == 200 and merged["moved_edges"] >= 1
    assert graph_state(ports.graph) != before
    status, undone = call("POST", f"/merges/{merged['merge_id']}/undo", mini.creator)
    assert status == 200 and undone["unmerged"] is True
    assert graph_state(ports.graph) == before
    status, again = call("POST", f"/merges/{merged['merge_id']}/undo", mini.creator)
    assert status == 409 and again["error"] == "Conflict" and "already" in again["reason"]


def test_keep_apart_through_the_api(api):
    call, mini, _ = api
    a, b = eid(mini, "Event", "wedding"), eid(mini, "Event", "Uncle Dommie's wedding")
    status, out = call("POST", "/keep-apart", mini.creator, {"entity_a": a, "entity_b": b})
    assert status == 200 and out == {"entity_a": a, "entity_b": b}
    status, found = call("GET", "/merge-suggestions", mini.creator)
    assert not any({s["a"]["id"], s["b"]["id"]} == {a, b} for s in found)


@pytest.mark.parametrize(
    ("method", "path", "body", "who", "status", "error"),
    [
        ("GET", "/merge-suggestions", None, "admirer", 403, "AccessDenied"),
        ("POST", "/merges", {"survivor_id": "x", "absorbed_id": "y"}, "admirer", 403, "AccessDenied"),
        ("POST", "/merges", {"survivor_id": "x"}, "creator", 400, "InvalidRequest"),
        ("POST", "/merges", {"survivor_id": "x y", "absorbed_id": "z"}, "creator", 400, "InvalidRequest"),
        ("POST", "/merges", {"survivor_id": "nope", "absorbed_id": "none"}, "creator", 404, "NotFound"),
        ("POST", "/merges/not-a-uuid/undo", None, "creator", 400, "InvalidRequest"),
        ("POST", "/merges/00000000-0000-4000-8000-000000000000/undo", None, "creator", 404, "NotFound"),
        ("POST", "/keep-apart", {"entity_a": "a", "entity_b": "a"}, "creator", 400, "InvalidRequest"),
    ],
)
def test_refusals_are_typed_4xx_with_reasons(api, method, path, body, who, status, error):
    call, mini, _ = api
    got, out = call(method, path, getattr(mini, who), body)
    assert (got, out["error"]) == (status, error) and out["reason"]


def test_an_entity_only_an_unreadable_story_names_reads_as_missing(api):
    """The admirer's personal story names "Kay's secret accordion": its id follows from the name,
    and the creator's merge or keep-apart with it answers as for a name nothing uses."""
    call, mini, _ = api
    accordion = entity_id(mini.legacy, "Object", "accordion")
    bodies = []
    for name in ("Kay's secret accordion", "an accordion nobody wrote of"):
        guess = entity_id(mini.legacy, "Object", name)
        for path, body in (
            ("/merges", {"survivor_id": accordion, "absorbed_id": guess}),
            ("/keep-apart", {"entity_a": guess, "entity_b": accordion}),
        ):
            status, out = call("POST", path, mini.creator, body)
            assert status == 404, out
            bodies.append({**out, "reason": out["reason"].replace(guess, "<id>")})
    assert bodies[:2] == bodies[2:]


def test_a_merge_counts_only_the_moved_edges_of_stories_the_curator_may_read(ports, tmp_path):
    """The admirer's personal story names "accordion" too: its edges move with the merge, but
    the creator's `moved_edges` (merge and undo, and the changelog's) does not count them."""
    mini = MiniDataset()
    personal = PERSONAL.model_copy(update={"objects": (*PERSONAL.objects, *PUBLIC.objects[:1])})
    extractor = ScriptedExtractor({"apple": PUBLIC, "lung": PRIVATE, "herself": personal})
    p = dataclasses.replace(ports, extractor=extractor, extractor_version="scripted-1")
    load_dataset(p, mini.write(tmp_path / "ds"))
    curation = PgCurationStore(p.stories.db)
    call = legacy_caller(services_with(stories=p.stories, graph=p.graph, curation=curation), mini.legacy)
    survivor, absorbed = (entity_id(mini.legacy, "Object", n) for n in ("Papa Sal's accordion", "accordion"))
    status, merged = call("POST", "/merges", mini.creator, {"survivor_id": survivor, "absorbed_id": absorbed})
    assert status == 200, merged
    added = curation.get_merge(merged["merge_id"]).changes.added_edges
    unreadable = [e for e in added if mini.personal_story in (e.other_id, e.props.get("story_id"))]
    assert unreadable  # the personal story's edge did move
    assert merged["moved_edges"] == len(added) - len(unreadable) >= 1
    status, undone = call("POST", f"/merges/{merged['merge_id']}/undo", mini.creator)
    assert status == 200 and undone["moved_edges"] == merged["moved_edges"]
    status, page = call("GET", "/changelog", mini.creator)
    logged = [c["detail"] for c in page["changes"] if c["action"] in ("merge", "unmerge")]
    assert logged and all(d["moved_edges"] == merged["moved_edges"] for d in logged)
