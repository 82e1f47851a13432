"""The story_connections ASL (opening connections, pre-summary enrichment) and the context ASL in
elicitation mode, with the real handlers on the embedded engines and the sample legacy, per role:
no connection ever comes through a story the caller may not read."""

from pathlib import Path

import pytest

from heirloom.contracts.connections import ConnectionsRequest, StoryConnections
from heirloom.contracts.context import AssembledContext, ContextRequest, Message
from heirloom.domain.evaluation import QueryOutcome, StoryText, leaked
from heirloom.errors import AccessDenied, NotFound
from heirloom_dev.workflow import LocalConnectionsWorkflow, LocalContextWorkflow, LocalWorkflows
from tests.support import oracle
from tests.support.sample import unhurried_graph_names
from tests.support.services import context_services, services_with

SAMPLE = Path(__file__).parents[2] / "examples" / "sample-legacy"
DATA = oracle.load(SAMPLE)
DOM = "f8156de7-80fc-4f32-a0b0-5596b12c22c1"
TITLES = {s["id"]: s["title"] for s in DATA["stories"]}
ID = {s["title"]: s["id"] for s in DATA["stories"]}
MEMBERS = [(m["user_id"], m["role"]) for m in DATA["members"] if m["legacy_id"] == DOM]
#: the sample's users by name (examples/sample-legacy/users.jsonl)
USER = {
    "Tony Ferraro": "f9f73f65-a2af-4fbd-ae39-c336dfc8126b",  # creator of Dom's legacy
    "Tess Kline": "6682da7a-63ea-4dc6-aba7-275b58a47242",  # admin
    "Carol Yates": "efb4bd44-7290-4d28-8581-4dff77293ebd",  # advocate
    "Nicki Kline": "9db349f9-b9b6-4530-bcba-fc2f9e2c57d0",  # admirer
    "Danny Whitacre": "5c8a2de1-c4ec-429f-b24b-5b664b48d661",  # admirer
    "Marisol Vega": "4ebc8838-4d44-41da-9e90-9e3f3b2fe9d8",  # admirer
}


@pytest.fixture(scope="module")
def flows(sample_ports):
    p = sample_ports
    services = context_services(p)  # fmt: skip
    # every test here expects the graph's places and objects matched in the question
    with unhurried_graph_names(), LocalWorkflows(services=services).start() as workflows:
        yield LocalConnectionsWorkflow(workflows, history=True), LocalContextWorkflow(workflows)


def connect(flows, user, **kw) -> StoryConnections:
    return flows[0].run(ConnectionsRequest(legacy_id=DOM, user_id=user, **kw))


def connected_ids(result: StoryConnections) -> set[str]:
    return {str(s.story_id) for e in result.entities for s in e.stories} | {
        str(x.story_id) for x in result.lines
    }


ENRICH = (
    Message(role="user", content="Dad and Uncle Ray played at every wedding in the parish."),
    Message(
        role="assistant", content='That sounds like "The Furnace Street Four". Who else was in the band?'
    ),
    Message(role="user", content="Earl on trumpet. Father Len married half of them at St. Agatha's."),
)
HISTORY = (
    Message(role="user", content="I want to add to the story about the band."),
    Message(role="assistant", content='Of course. "The Furnace Street Four" is a good start.'),
)


def assert_only_readable(result: StoryConnections, user: str) -> None:
    """Every connected story is readable by `user`, and no other story's title or distinctive
    sentence reached the formatted block."""
    allowed = oracle.readable(DATA, user, DOM)
    assert connected_ids(result) <= allowed
    stories = {s["id"]: StoryText(s["id"], s["title"], s["content"]) for s in DATA["stories"]}
    outcome = QueryOutcome("q", None, None, (), (), tuple(connected_ids(result)), result.formatted, None, 0.0)
    readable = [stories[s] for s in allowed]
    for sid, story in stories.items():
        if sid not in allowed:
            assert not leaked(outcome, story, readable), f"{story.title!r} leaked to {user}"


def stories_of(result: StoryConnections, name: str) -> set[str]:
    return {s.title for e in result.entities if e.name == name for s in e.stories}


# -- 1. opening connections ----------------------------------------------------------------------
@pytest.mark.parametrize("user,role", MEMBERS)
def test_opening_connections_per_role_only_through_readable_stories(flows, user, role):
    result = connect(flows, user, kind="opening", story_id=ID["Heron Lake"], persona="family")
    assert_only_readable(result, user)
    assert flows[0].last.states_entered() == [
        "ConnectionsPlan", "Connect", "IntentAnalysis", "GraphEnabled", "GraphTraversal", "AccessFilter",
        "ConnectionsAssemble",
    ]  # fmt: skip
    # Father Len and the lake connect to the same readable stories for every member
    assert stories_of(result, "Leonard Cusick") == {"Eleven Weeks: The 1974 Strike at Kestrel",
                                                    "June 1964 at St. Agatha's"}  # fmt: skip
    assert stories_of(result, "Heron Lake") == {"Aunt Lucy at Heron Lake"}  # crossed the selective link
    top = [e for e in result.entities if e.count][:5]  # the block's lines, most connected first
    lines = result.formatted.splitlines()[2:]
    assert len(lines) == len(top) and all(
        f"{e.count} other stor" in ln for e, ln in zip(top, lines, strict=True)
    )
    assert result.formatted.startswith("## Connections from This Story\nThis story mentions ")
    assert "Dominic Ferraro" not in {e.name for e in result.entities}  # the subject is every story's
    assert ID["Heron Lake"] not in connected_ids(result)  # never connected to itself
    # the private strike story comes up through Tony only for those who may read it
    via_tony = stories_of(result, "Anthony Ferraro")
    assert ("What the Strike Cost Us" in via_tony) is (role in ("creator", "admin", "advocate"))
    counts = [e.count for e in result.entities if e.kind != "period"]
    assert all(e.count == len(e.stories) for e in result.entities) and counts


def test_opening_connections_are_ranked_and_counted(flows):
    result = connect(flows, USER["Tess Kline"], kind="opening", story_id=ID["Uncle Ray"], persona="family")
    people = {e.name: e for e in result.entities if e.kind == "person"}
    assert people["Raymond Dziedzic"].count == 2  # "June 1964 at St. Agatha's", "The Furnace Street Four"
    assert {s.title for s in people["Raymond Dziedzic"].stories} == {"June 1964 at St. Agatha's",
                                                                     "The Furnace Street Four"}  # fmt: skip
    weights = [e.count * (0.5 if e.kind == "period" or e.name[0].islower() else 1) for e in result.entities]
    assert weights == sorted(weights, reverse=True)
    for entity in result.entities:  # stories sharing more of the seed's entities first
        shared = [s.shared for s in entity.stories]
        assert shared == sorted(shared, reverse=True)


@pytest.mark.parametrize(
    "who,title,error",
    [
        ("Nicki Kline", "Vine Street", NotFound),  # private: an admirer may not read it
        ("Tess Kline", "A Letter to Grandpa", NotFound),  # Nicki's personal story
        ("Tony Ferraro", "Dad's Trumpet", NotFound),  # Earl's legacy: the link is pending
        ("Tony Ferraro", "The Bills", NotFound),  # Lucy's private story does not cross the link
    ],
)
def test_opening_connections_of_an_unreadable_story_are_refused(flows, who, title, error):
    """An unreadable story reads as one that does not exist (the same error and message), so
    the refusal does not tell the caller that a story they may not read exists."""
    import uuid

    with pytest.raises(error) as refused:
        connect(flows, USER[who], kind="opening", story_id=ID[title])
    assert flows[0].last.error == error.__name__
    assert flows[0].last.states_entered() == ["ConnectionsPlan"]
    unknown = uuid.uuid4()
    with pytest.raises(NotFound) as missing:
        connect(flows, USER[who], kind="opening", story_id=unknown)
    assert str(refused.value).replace(ID[title], "<id>") == str(missing.value).replace(str(unknown), "<id>")


def test_opening_connections_of_an_unknown_story_or_for_a_non_member_are_refused(flows):
    import uuid

    with pytest.raises(NotFound):
        connect(flows, USER["Tess Kline"], kind="opening", story_id=uuid.uuid4())
    with pytest.raises(AccessDenied):
        connect(flows, str(uuid.uuid4()), kind="opening", story_id=ID["Heron Lake"])


# -- 3. pre-summary enrichment -------------------------------------------------------------------
@pytest.mark.parametrize("user,role", MEMBERS)
def test_enrichment_lines_per_role_name_stories_not_surfaced(flows, user, role):
    result = connect(flows, user, kind="enrichment", persona="family", messages=ENRICH)
    assert_only_readable(result, user)
    assert result.formatted.startswith("## Additional Context from Connected Stories\n- ")
    titles = [line.title for line in result.lines]
    assert len(titles) == len(set(titles)) and len(titles) <= 8
    for line in result.lines:  # each line names its story and the entity that connects it
        assert f'"{line.title}"' in line.text and line.entity in line.text and line.text in result.formatted
    assert "The Furnace Street Four" not in titles  # the assistant already quoted it
    assert 'Raymond Dziedzic also appears in "June 1964 at St. Agatha\'s"' in result.formatted
    assert "Eleven Weeks: The 1974 Strike at Kestrel" in titles  # through St. Agatha
    private = {"What the Strike Cost Us", "The Diagnosis"}
    assert bool(private & set(titles)) is (role in ("creator", "admin", "advocate"))


def test_enrichment_leaves_out_what_the_caller_says_was_surfaced(flows):
    first = connect(flows, USER["Tess Kline"], kind="enrichment", persona="family", messages=ENRICH)
    shown = first.lines[0].story_id
    again = connect(flows, USER["Tess Kline"], kind="enrichment", persona="family", messages=ENRICH,
                    surfaced_story_ids=(shown,), story_id=ID["Heron Lake"])  # fmt: skip
    assert shown not in {line.story_id for line in again.lines}
    assert ID["Heron Lake"] not in {str(line.story_id) for line in again.lines}


# -- 2. one suggestion per turn (the context workflow in elicitation mode) ----------------------
def ask(flows, user, query, **kw) -> AssembledContext:
    return flows[1].run(ContextRequest(legacy_id=DOM, user_id=user, persona="family", query=query, **kw))


@pytest.mark.parametrize("user,role", MEMBERS)
def test_elicitation_marks_one_readable_suggestion_not_in_the_history(flows, user, role):
    query = "Did Uncle Ray ever play at St. Agatha's?"
    result = ask(flows, user, query, elicitation=True, history=HISTORY)
    suggestion = result.suggestion
    assert suggestion is not None and str(suggestion.story_id) in oracle.readable(DATA, user, DOM)
    assert suggestion.title not in " ".join(m.content for m in HISTORY)
    assert suggestion.entity in ("Raymond Dziedzic", "St. Agatha")  # what the message is about
    text = result.formatted_context
    assert text.count("## Suggested Connection") == 1 and suggestion.sentence in text
    assert text.rstrip().endswith("when that section is present, and none when it is absent.")
    assert result.metadata.tokens_used <= 4000
    plain = ask(flows, user, query, history=HISTORY)
    assert plain.suggestion is None and "## Graph Suggestion Directive" not in plain.formatted_context


def test_a_suggestion_the_conversation_already_named_is_not_made_again(flows):
    query = "Did Uncle Ray ever play at St. Agatha's?"
    first = ask(flows, USER["Tess Kline"], query, elicitation=True, history=HISTORY)
    assert first.suggestion is not None
    named = (*HISTORY, Message(role="assistant", content=f'"{first.suggestion.title}" tells of that.'))
    second = ask(flows, USER["Tess Kline"], query, elicitation=True, history=named)
    assert second.suggestion is None or second.suggestion.story_id != first.suggestion.story_id
    assert "## Graph Suggestion Directive" in second.formatted_context


def test_no_suggestion_when_the_message_names_nothing_the_graph_knows(flows):
    result = ask(flows, USER["Tess Kline"], "What should we write about next?", elicitation=True)
    assert result.suggestion is None
    assert "## Suggested Connection" not in result.formatted_context
    assert "## Graph Suggestion Directive" in result.formatted_context


def test_enrichment_of_a_story_traverses_only_what_the_conversation_named(flows):
    result = connect(flows, USER["Tess Kline"], kind="enrichment", persona="family", messages=ENRICH,
                     story_id=ID["Uncle Ray"])  # fmt: skip
    named = {e.name for e in result.entities}
    assert "Orchard Street" not in named and "Harlan City" not in named  # the story's, not the chat's
    assert ID["Uncle Ray"] not in {str(line.story_id) for line in result.lines}


# -- the API routes over the real workflows ------------------------------------------------------
def api_event(path: str, resource: str, params: dict, body: dict, user: str) -> dict:
    import json

    event = json.loads((SAMPLE.parents[1] / "events" / "api.json").read_text())
    event.update(path=path, resource=resource, pathParameters=params, body=json.dumps(body))
    event["requestContext"]["authorizer"]["claims"]["sub"] = user
    return event


@pytest.mark.parametrize("who,status", [("Tess Kline", 200), ("Nicki Kline", 404)])
def test_the_api_routes_answer_through_the_story_connections_workflow(flows, sample_ports, who, status):
    import json

    from heirloom_dev.functions import LambdaContext, load_handler

    services = services_with(stories=sample_ports.stories, graph=sample_ports.graph)
    story = ID["Vine Street"]  # private: the admin may read it, the admirer may not
    opening = api_event(f"/legacies/{DOM}/stories/{story}/connections",
                        "/legacies/{legacy_id}/stories/{story_id}/connections",
                        {"legacy_id": DOM, "story_id": story}, {"persona": "family"}, USER[who])  # fmt: skip
    response = load_handler("api")(opening, LambdaContext("Api"), services=services, connections=flows[0])
    body = json.loads(response["body"])
    assert response["statusCode"] == status, body
    if status == 200:
        assert body["story_title"] == "Vine Street" and body["formatted"].startswith(
            "## Connections from This Story"
        )
    else:
        assert body == {"error": "NotFound", "reason": f"story {story} does not exist in this legacy"}
    enrichment = api_event(f"/legacies/{DOM}/enrichment", "/legacies/{legacy_id}/enrichment", {"legacy_id": DOM},
                           {"messages": [m.model_dump() for m in ENRICH]}, USER[who])  # fmt: skip
    response = load_handler("api")(enrichment, LambdaContext("Api"), services=services, connections=flows[0])
    body = json.loads(response["body"])
    assert response["statusCode"] == 200 and body["formatted"].startswith("## Additional Context")
    assert {line["story_id"] for line in body["lines"]} <= oracle.readable(DATA, USER[who], DOM)
