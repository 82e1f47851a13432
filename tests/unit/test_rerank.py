"""The reranking stage (heirloom.domain.rerank): the lexical reranker, the Bedrock Rerank adapter on
a real `bedrock-agent-runtime` client with botocore's Stubber (no network), the stage's budget
and failures (order kept, context marked degraded), and assembly with the stage on."""

from __future__ import annotations

import threading
from uuid import UUID

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ReadTimeoutError
from botocore.stub import Stubber
from hypothesis import given, settings
from hypothesis import strategies as st

from heirloom.adapters.factory import build_rerank_stage
from heirloom.adapters.rerank import BedrockReranker, LexicalReranker, foundation_model_arn, words
from heirloom.adapters.tokenizer import TiktokenTokenizer
from heirloom.contracts.context import (
    AssembledContext,
    Candidate,
    ChunkResult,
    ContextRequest,
    FilteredContext,
    Persona,
    QueryIntent,
)
from heirloom.domain.assembly import assemble
from heirloom.domain.personas import load_personas
from heirloom.domain.ranking import rank_candidates
from heirloom.domain.rerank import MAX_DOCUMENT_CHARS, RerankStage, document_text, rerank
from heirloom.errors import MalformedModelOutput, ModelAccessDenied, Throttled
from heirloom.settings import RERANK_MODEL_ID, settings_from_env

LEGACY = UUID(int=1)
USER = UUID(int=99)
TRAVERSAL = load_personas()[Persona.FAMILY].traversal


def sid(n: int) -> UUID:
    return UUID(int=1000 + n)


def cand(n: int, text: str, embedding: float | None, *, title: str | None = None) -> Candidate:
    story = sid(n)
    return Candidate(
        story_id=story,
        legacy_id=LEGACY,
        legacy_name="Ada Marsh",
        title=title or f"Story {n}",
        primary=True,
        chunks=(
            ChunkResult(
                story_id=story,
                legacy_id=LEGACY,
                chunk_index=0,
                text=text,
                token_count=len(text.split()),
                similarity=embedding or 0.0,
            ),
        ),
        embedding_score=embedding,
    )


CANDIDATES = (
    cand(1, "We sold the farm in the spring and moved to town.", 0.80),
    cand(2, "Grandpa taught me to sail the little boat on the lake.", 0.78),
    cand(3, "The bakery on Main Street opened at five every morning.", 0.76),
    cand(4, "Her sailing trophy from the lake regatta sat on the mantel.", 0.70),
)
QUERY = "Who taught her sailing on the lake?"


def request(query: str = QUERY) -> ContextRequest:
    return ContextRequest(legacy_id=LEGACY, user_id=USER, persona=Persona.FAMILY, query=query)


def ranked():
    return rank_candidates(CANDIDATES, TRAVERSAL)


def ids(scored) -> list[UUID]:
    return [s.candidate.story_id for s in scored]


class Fixed:
    """A reranker whose relevance scores are given (the domain's arithmetic, checked by hand)."""

    name = "fixed"
    weight = 1.0

    def __init__(self, scores):
        self.scores = scores
        self.seen: list[tuple[str, list[str]]] = []

    def score(self, query, documents):
        self.seen.append((query, list(documents)))
        return list(self.scores)


class Hangs:
    """Never answers until released: the stage's deadline must give up on it."""

    name = "hangs"
    weight = 1.0

    def __init__(self):
        self.release = threading.Event()

    def score(self, query, documents):
        self.release.wait(30)
        return [1.0] * len(documents)


class Fails:
    name = "fails"
    weight = 1.0

    def __init__(self, exc):
        self.exc = exc

    def score(self, query, documents):
        raise self.exc


# -- lexical ----------------------------------------------------------------------------------
def test_words_casefold_and_drop_stopwords():
    assert words("Who taught HER sailing on the lake?") == ["taught", "sailing", "lake"]
    assert words("Avó's café, São Paulo") == ["avó's", "café", "são", "paulo"]


def test_lexical_scores_term_overlap_with_rare_terms_weighing_more():
    docs = ["the lake and the lake", "sailing on the lake", "a bakery in town"]
    scores = LexicalReranker().score("sailing lake", docs)
    assert scores[1] == 1.0  # both words, one of them rare among the documents
    assert 0 < scores[0] < scores[1]
    assert scores[2] == 0.0
    assert LexicalReranker().score("the of", docs) == [0.0, 0.0, 0.0]  # stopwords only


def test_lexical_reranking_moves_the_story_that_matches_up():
    before = ranked()
    after, report = rerank(QUERY, before, RerankStage(LexicalReranker(), top_n=4, budget_s=5))
    assert report.status == "ok" and report.candidates == 4 and report.reason is None
    assert ids(before)[:2] == [sid(1), sid(2)]
    assert ids(after)[0] == sid(2)  # "taught" and "lake": its embedding score was second
    assert sorted(ids(after)) == sorted(ids(before))


# -- the stage --------------------------------------------------------------------------------
def test_scores_blend_by_weight_and_only_the_top_n_move():
    before = ranked()
    fixed = Fixed([0.0, 0.1, 0.9])
    after, report = rerank("q", before, RerankStage(fixed, top_n=3, budget_s=5))
    assert report.status == "ok" and report.candidates == 3
    # story 3: 0.76 / 0.80 calibrated = 0.95, + 0.9 -> first; the 4th is never sent and stays last
    assert ids(after) == [sid(3), sid(2), sid(1), sid(4)]
    assert after[0].score == pytest.approx(0.95 + 0.9)
    assert [s.reranked for s in after] == [True, True, True, False]
    assert len(fixed.seen[0][1]) == 3


def test_the_document_is_the_title_and_chunks_in_story_order_capped():
    story = sid(7)
    chunks = tuple(
        ChunkResult(story_id=story, legacy_id=LEGACY, chunk_index=i, text=t, token_count=1, similarity=0.5)
        for i, t in ((2, "third"), (0, "first"))
    )
    c = Candidate(
        story_id=story, legacy_id=LEGACY, legacy_name="A", title="Title", primary=True, chunks=chunks
    )
    assert document_text(c) == "Title\nfirst\nthird"
    long = c.model_copy(update={"title": "x" * (MAX_DOCUMENT_CHARS * 2)})
    assert len(document_text(long)) == MAX_DOCUMENT_CHARS


def test_a_reranker_over_its_budget_keeps_the_order():
    hangs = Hangs()
    try:
        after, report = rerank("q", ranked(), RerankStage(hangs, top_n=4, budget_s=0.05))
    finally:
        hangs.release.set()
    assert ids(after) == ids(ranked())
    assert report.status == "timeout" and "budget of 50 ms" in (report.reason or "")
    assert not any(s.reranked for s in after)


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (Throttled("rerank: ThrottlingException", code="ThrottlingException"), "ThrottlingException"),
        (ModelAccessDenied("no", code="AccessDeniedException"), "AccessDeniedException"),
        (MalformedModelOutput("rerank: bad"), "no code"),
    ],
)
def test_a_failing_reranker_keeps_the_order_with_its_reason(exc, code):
    after, report = rerank("q", ranked(), RerankStage(Fails(exc), top_n=4, budget_s=5))
    assert ids(after) == ids(ranked())
    assert report.status == "failed" and report.reason == f"{type(exc).__name__}: {code}"


def test_a_wrong_number_of_scores_is_a_failure_not_a_guess():
    after, report = rerank("q", ranked(), RerankStage(Fixed([1.0]), top_n=4, budget_s=5))
    assert ids(after) == ids(ranked()) and report.status == "failed"


@settings(max_examples=60, deadline=None)
@given(
    scores=st.lists(st.floats(min_value=-5, max_value=5, allow_nan=False), min_size=4, max_size=4),
    top_n=st.integers(min_value=2, max_value=6),
)
def test_reranking_only_reorders_what_it_was_given(scores, top_n):
    before = ranked()
    after, _ = rerank("q", before, RerankStage(Fixed(scores[: min(top_n, 4)]), top_n=top_n, budget_s=5))
    assert sorted(ids(after)) == sorted(ids(before))  # never adds or drops a story
    assert ids(after)[top_n:] == ids(before)[top_n:]  # what it did not score keeps its place


# -- assembly with the stage ------------------------------------------------------------------
def assembled(stage: RerankStage | None) -> AssembledContext:
    filtered = FilteredContext(
        intent=QueryIntent(), subject_name="Ada Marsh", legacy_name="Ada Marsh", candidates=CANDIDATES
    )
    return assemble(
        request(), filtered, load_personas()[Persona.FAMILY], TiktokenTokenizer(), fence="f", rerank=stage
    )


def test_assembly_reports_the_stage_and_uses_its_order():
    off = assembled(None)
    on = assembled(RerankStage(LexicalReranker(), top_n=10, budget_s=5))
    assert off.metadata.rerank is None and "rerank" not in off.metadata.latency_ms
    assert on.metadata.rerank is not None and on.metadata.rerank.status == "ok"
    assert on.ranked_story_ids[0] == sid(2) != off.ranked_story_ids[0]
    assert on.degraded == () and "rerank" in on.metadata.latency_ms


def test_assembly_marks_a_stage_that_gave_up_as_degraded_without_a_note():
    hangs = Hangs()
    try:
        out = assembled(RerankStage(hangs, top_n=10, budget_s=0.05))
    finally:
        hangs.release.set()
    assert out.degraded == ("rerank",)
    assert out.metadata.rerank is not None and out.metadata.rerank.status == "timeout"
    assert out.ranked_story_ids == assembled(None).ranked_story_ids
    assert not out.formatted_context.startswith("Note:")  # no story is missing


# -- settings and factory ---------------------------------------------------------------------
def test_the_stage_is_off_by_default_and_built_from_settings():
    assert settings_from_env({}).rerank.reranker == "off"
    assert build_rerank_stage(settings_from_env({})) is None
    stage = build_rerank_stage(
        settings_from_env({"RERANKER": "lexical", "RERANK_TOP_N": "7", "RERANK_BUDGET_MS": "120"})
    )
    assert stage is not None and stage.reranker.name == "lexical"
    assert (stage.top_n, stage.budget_s) == (7, 0.12)
    bedrock = build_rerank_stage(settings_from_env({"RERANKER": "bedrock", "BEDROCK_REGION": "eu-west-1"}))
    assert bedrock is not None and isinstance(bedrock.reranker, BedrockReranker)
    assert bedrock.reranker.model_id == RERANK_MODEL_ID


@pytest.mark.parametrize("env", [{"RERANKER": "cross"}, {"RERANK_TOP_N": "1"}, {"RERANK_MODEL_ID": "a b"}])
def test_bad_settings_are_refused(env):
    from heirloom.settings import SettingsError

    with pytest.raises(SettingsError):
        settings_from_env(env)


# -- Bedrock Rerank ---------------------------------------------------------------------------
def client(**config):
    return boto3.client(
        "bedrock-agent-runtime",
        region_name="us-west-2",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}, **config),
    )


ARN = "arn:aws:bedrock:us-west-2::foundation-model/amazon.rerank-v1:0"


def expected_request(query, documents):
    return {
        "queries": [{"type": "TEXT", "textQuery": {"text": query}}],
        "sources": [
            {"type": "INLINE", "inlineDocumentSource": {"type": "TEXT", "textDocument": {"text": d}}}
            for d in documents
        ],
        "rerankingConfiguration": {
            "type": "BEDROCK_RERANKING_MODEL",
            "bedrockRerankingConfiguration": {
                "numberOfResults": len(documents),
                "modelConfiguration": {"modelArn": ARN},
            },
        },
    }


def test_the_model_arn():
    assert foundation_model_arn("amazon.rerank-v1:0", "us-west-2") == ARN
    assert foundation_model_arn(ARN, "eu-west-1") == ARN


def test_bedrock_request_shape_and_scores_back_in_document_order():
    rerank_client = client()
    documents = ["one", "two", "three"]
    with Stubber(rerank_client) as stub:
        stub.add_response(
            "rerank",
            {
                "results": [
                    {"index": 2, "relevanceScore": 0.91},
                    {"index": 0, "relevanceScore": 0.40},
                    {"index": 1, "relevanceScore": 0.02},
                ]
            },
            expected_request("who?", documents),
        )
        scores = BedrockReranker(rerank_client, model_id=RERANK_MODEL_ID, region="us-west-2").score(
            "who?", documents
        )
        stub.assert_no_pending_responses()
    assert scores == [0.40, 0.02, 0.91]


def test_bedrock_through_the_stage_reorders_the_top():
    rerank_client = client()
    before = ranked()
    documents = [document_text(s.candidate) for s in before[:3]]
    with Stubber(rerank_client) as stub:
        stub.add_response(
            "rerank",
            {
                "results": [
                    {"index": 2, "relevanceScore": 0.9},
                    {"index": 0, "relevanceScore": 0.1},
                    {"index": 1, "relevanceScore": 0.0},
                ]
            },
            expected_request(QUERY, documents),
        )
        reranker = BedrockReranker(rerank_client, model_id=RERANK_MODEL_ID, region="us-west-2")
        after, report = rerank(QUERY, before, RerankStage(reranker, top_n=3, budget_s=5))
    assert report.status == "ok" and report.reranker == "bedrock"
    assert ids(after) == [sid(3), sid(1), sid(2), sid(4)]


@pytest.mark.parametrize(
    "results",
    [
        [{"index": 0, "relevanceScore": 0.5}],  # one document left unscored
        [{"index": 0, "relevanceScore": 0.5}, {"index": 5, "relevanceScore": 0.5}],
    ],
)
def test_bedrock_answers_that_do_not_fit_are_malformed(results):
    rerank_client = client()
    with Stubber(rerank_client) as stub:
        stub.add_response("rerank", {"results": results})
        with pytest.raises(MalformedModelOutput):
            BedrockReranker(rerank_client, model_id=RERANK_MODEL_ID, region="us-west-2").score(
                "q", ["a", "b"]
            )


def test_bedrock_throttling_degrades_the_context():
    rerank_client = client()
    with Stubber(rerank_client) as stub:
        stub.add_client_error(
            "rerank",
            service_error_code="ThrottlingException",
            service_message="slow down",
            http_status_code=429,
        )
        reranker = BedrockReranker(rerank_client, model_id=RERANK_MODEL_ID, region="us-west-2")
        after, report = rerank(QUERY, ranked(), RerankStage(reranker, top_n=4, budget_s=5))
    assert ids(after) == ids(ranked())
    assert report.status == "failed" and report.reason == "Throttled: ThrottlingException"


def test_bedrock_read_timeout_is_throttled_and_degrades():
    rerank_client = client(read_timeout=0.2)

    def time_out(request, **kwargs):
        raise ReadTimeoutError(endpoint_url=request.url)

    rerank_client.meta.events.register("before-send.bedrock-agent-runtime.Rerank", time_out)
    reranker = BedrockReranker(rerank_client, model_id=RERANK_MODEL_ID, region="us-west-2")
    with pytest.raises(Throttled) as raised:
        reranker.score("q", ["a", "b"])
    assert raised.value.code == "ReadTimeoutError"
    after, report = rerank(QUERY, ranked(), RerankStage(reranker, top_n=4, budget_s=5))
    assert ids(after) == ids(ranked()) and report.reason == "Throttled: ReadTimeoutError"


def test_the_largest_budget_fits_inside_the_rank_assemble_task():
    import json
    from pathlib import Path

    from heirloom.settings import RerankSettings

    asl = json.loads((Path(__file__).parents[2] / "statemachines" / "context_assembly.asl.json").read_text())

    def tasks(states):
        for name, state in states.items():
            yield name, state
            for branch in state.get("Branches", []):
                yield from tasks(branch["States"])

    (task,) = [s for n, s in tasks(asl["States"]) if n == "RankAssemble"]
    largest = RerankSettings.model_fields["budget_ms"].metadata
    le = next(m.le for m in largest if hasattr(m, "le"))
    assert le < task["TimeoutSeconds"] * 1000


def test_the_bench_times_the_stage_on_its_own_row():
    from collections import Counter

    from heirloom_dev.bench.measure import _time_rerank

    times: dict[str, list[float]] = {}
    statuses: Counter[str] = Counter()
    filtered = FilteredContext(
        intent=QueryIntent(), subject_name="Ada Marsh", legacy_name="Ada Marsh", candidates=CANDIDATES
    )
    stage = RerankStage(LexicalReranker(), top_n=10, budget_s=5)
    _time_rerank(
        request(), filtered, TRAVERSAL, stage, lambda k, v: times.setdefault(k, []).append(v), statuses
    )
    _time_rerank(request(), filtered, TRAVERSAL, stage, None, statuses)  # a warm-up: not recorded
    assert list(times) == ["rerank.lexical"] and len(times["rerank.lexical"]) == 1
    assert statuses == Counter({"rerank ok": 1})
