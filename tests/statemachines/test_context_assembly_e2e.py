"""The context-assembly ASL with the real handlers on the embedded engines and the sample
legacy: every role and every link state, checked against an independent oracle of docs/dataset-format.md."""

import copy
from pathlib import Path

import pytest

from heirloom.contracts.context import AssembledContext, ContextRequest
from heirloom.contracts.records import Link
from heirloom.domain import ingestion
from heirloom.domain.evaluation import QueryOutcome, StoryText, leaked
from heirloom_dev.loader import load_dataset
from heirloom_dev.workflow import LocalContextWorkflow, LocalWorkflows
from tests.support import oracle
from tests.support.services import context_services

SAMPLE = Path(__file__).parents[2] / "examples" / "sample-legacy"
DATA = oracle.load(SAMPLE)
DOM = "f8156de7-80fc-4f32-a0b0-5596b12c22c1"
QUESTIONS = [
    ("family", "What happened during the flood, and who helped?"),
    ("biographer", "Tell me about money trouble, illness and the family rift."),
    ("friend", "Who were his friends in the band?"),
    ("colleague", "What happened at the glass works and the strike?"),
]


@pytest.fixture(scope="module")
def module_ports(local_stack, tmp_path_factory):
    # one database and graph for the module: loading the sample takes a few seconds
    import uuid

    import psycopg

    from heirloom.adapters.embedders import HashingEmbedder
    from heirloom.adapters.postgres import PgDatabase, PgStoryStore, PgVectorIndex
    from heirloom.adapters.tokenizer import TiktokenTokenizer
    from heirloom.domain.ingestion import IngestionPorts
    from tests.support.stack import _with_database, new_graph

    name = f"e2e_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(local_stack.postgres_uri, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    db = PgDatabase(_with_database(local_stack.postgres_uri, name), embedding_dim=64)
    db.migrate()
    embedder = HashingEmbedder(64)
    graph = new_graph(local_stack)
    ports = IngestionPorts(stories=PgStoryStore(db), vectors=PgVectorIndex(db, model_id=embedder.model_id),
                           graph=graph, embedder=embedder, tokenizer=TiktokenTokenizer())  # fmt: skip
    load_dataset(ports, SAMPLE)
    yield ports
    graph.delete_all()
    db.close()


@pytest.fixture(scope="module")
def ask(module_ports):
    p = module_ports
    services = context_services(p)  # fmt: skip
    with LocalWorkflows(services=services).start() as workflows:
        runner = LocalContextWorkflow(workflows)

        def run(user, persona, query, legacy=DOM, **kw) -> AssembledContext:
            return runner.run(
                ContextRequest(legacy_id=legacy, user_id=user, persona=persona, query=query, **kw)
            )

        run.runner = runner
        yield run


def assert_nothing_forbidden(result: AssembledContext, user: str, legacy: str = DOM):
    allowed = oracle.readable(DATA, user, legacy)
    stories = {s["id"]: StoryText(s["id"], s["title"], s["content"]) for s in DATA["stories"]}
    assert {str(s) for s in result.ranked_story_ids} <= allowed
    assert {str(s.story_id) for s in result.metadata.sources} <= allowed
    outcome = QueryOutcome("q", None, None, (), (), tuple(str(s) for s in result.ranked_story_ids),
                           result.formatted_context, None, 0.0)  # fmt: skip
    readable = [stories[s] for s in allowed]
    for sid, story in stories.items():
        if sid not in allowed:
            assert not leaked(outcome, story, readable), f"{story.title!r} leaked to {user}"


MEMBERS = [(m["user_id"], m["role"]) for m in DATA["members"] if m["legacy_id"] == DOM]


@pytest.mark.parametrize("user,role", MEMBERS)
def test_every_role_sees_only_what_format_md_allows(ask, user, role):
    seen = set()
    for persona, query in QUESTIONS:
        result = ask(user, persona, query)
        assert_nothing_forbidden(result, user)
        seen |= {str(s) for s in result.ranked_story_ids}
    assert seen  # every member gets some context


def test_a_non_member_is_refused_with_a_typed_error(ask):
    import uuid

    from heirloom.errors import AccessDenied

    outsider = str(uuid.uuid4())  # not a member of the legacy (not a user at all)
    with pytest.raises(AccessDenied):
        ask(outsider, "family", "Tell me about the flood.")
    assert ask.runner.last.error == "AccessDenied"


def test_the_answer_comes_from_the_real_functions_with_provenance(ask):
    user = next(u for u, r in MEMBERS if r == "creator")
    result = ask(user, "family", "What happened to the punch bowl during the flood?", debug=True)
    assert result.formatted_context.startswith("## Known Connections")
    assert "Source: Primary legacy, matched by:" in result.formatted_context
    assert result.metadata.tokens_used <= 4000 and result.metadata.vector_status == "ok"
    assert {t.template for t in result.metadata.traversals} >= {"legacy_context", "facts"}
    states = ask.runner.last.states_entered()
    assert states[:1] == ["Retrieve"] and states[-2:] == ["AccessFilter", "RankAssemble"]


@pytest.mark.parametrize("status,mode", [("active", "all"), ("active", "selective"), ("pending", "all"),
                                         ("revoked", "all"), ("revoked", "selective")])  # fmt: skip
def test_every_link_state(ask, module_ports, status, mode):
    original = next(link for link in DATA["links"] if link["status"] == "active")
    changed = {**copy.deepcopy(original), "status": status, "share_mode": mode}
    ingestion.apply_link(module_ports, Link.model_validate(changed))
    DATA["links"] = [changed if link["id"] == original["id"] else link for link in DATA["links"]]
    try:
        for user, _role in MEMBERS:
            result = ask(user, "family", "What do the stories say about Aunt Lucy, her shop and her lace?")
            assert_nothing_forbidden(result, user)
    finally:
        ingestion.apply_link(module_ports, Link.model_validate(original))
        DATA["links"] = [original if link["id"] == original["id"] else link for link in DATA["links"]]
