"""Stage timings: each stage of context assembly over the corpus, in process and through the workflow."""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from heirloom.contracts.context import (
    AccessFilterInput,
    ContextRequest,
    FilteredContext,
    GraphTraversalInput,
)
from heirloom_dev.bench.corpus import Sample, template_params
from heirloom_dev.bench.load import BenchStack
from heirloom_dev.bench.stats import _Sink

if TYPE_CHECKING:
    from heirloom.domain.ingestion import IngestionPorts
    from heirloom.domain.personas import TraversalConfig
    from heirloom.domain.rerank import RerankStage

WORKFLOW_SAMPLES = 30


# -- stage timings ----------------------------------------------------------------------------
def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


class _Pipeline:
    """The context workflow's steps in process over the bench corpus, as a warm container runs
    them: each stage timed one after the other (`run`), or in the workflow's shape (`run_parallel`)."""

    def __init__(
        self, stack: BenchStack, rerank_stage: RerankStage | None, record: Callable[[str, float], None]
    ):
        from heirloom.domain.breaker import CircuitBreaker, InMemoryBreakerStore
        from heirloom.domain.intent_step import GazetteerCache
        from heirloom.domain.personas import load_personas
        from heirloom.domain.traversal import NeighbourhoodCache
        from heirloom.settings import Settings

        self.ports = stack.ports
        self.settings = Settings()
        self.personas = load_personas()
        # the bench measures the traversal, so the breaker never opens on a slow query
        self.breaker = CircuitBreaker(InMemoryBreakerStore(), failure_threshold=10**9)
        self.gazetteers = GazetteerCache(self.settings.resilience.gazetteer_ttl_s)
        self.neighbourhoods = NeighbourhoodCache(self.settings.resilience.gazetteer_ttl_s)
        self.rerank_stage = rerank_stage
        self.record = record
        self.statuses: Counter[str] = Counter()
        self.branches = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-graph-branch")

    def warm_gazetteers(self, samples: Sequence[Sample]) -> None:
        """Each legacy's gazetteer built once, timed on its own."""
        from heirloom.domain.intent_step import build_gazetteer

        for legacy_id in sorted({s.request.legacy_id for s in samples}, key=str):
            t = time.perf_counter()
            self.gazetteers.get(legacy_id, _gazetteer_builder(build_gazetteer, legacy_id, self.ports))
            self.record("gazetteer_build", _ms(t))

    def intent_then_graph(self, request: ContextRequest) -> tuple[Any, Any, float]:
        """The Parallel state's first branch; also when the intent was done."""
        from heirloom.steps.graph_traversal import graph_traversal_step
        from heirloom.steps.intent_analysis import intent_analysis_step

        ports, resilience = self.ports, self.settings.resilience
        intent = intent_analysis_step(request, ports.stories, ports.graph, self.breaker, self.gazetteers)
        intent_done = time.perf_counter()
        graph = graph_traversal_step(
            GraphTraversalInput(request=request, intent=intent),
            ports.graph,
            self.breaker,
            budget_ms=resilience.traversal_budget_ms,
            cache=self.neighbourhoods,
            concurrency=resilience.traversal_concurrency,
        )
        return intent, graph, intent_done

    def search(self, request: ContextRequest) -> Any:
        from heirloom.steps.vector_search import vector_search

        ports = self.ports
        return vector_search(
            request, ports.stories, ports.vectors, ports.embedder, k=self.settings.resilience.vector_k
        )

    def filter_and_assemble(
        self, request: ContextRequest, graph: Any, vector: Any
    ) -> tuple[FilteredContext, float]:
        """The access filter and ranking; the filtered context and when the filter was done."""
        from heirloom.domain.assembly import assemble
        from heirloom.steps.access_filter import filter_context

        ports = self.ports
        filtered = filter_context(
            AccessFilterInput(request=request, branches=(graph, vector)), ports.stories, ports.vectors
        )
        filter_done = time.perf_counter()
        assemble(request, filtered, self.personas[request.persona], ports.tokenizer)
        return filtered, filter_done

    def run(self, sample: Sample, timed: bool) -> None:
        """The stages one after the other, each timed; `domain_pipeline` is their sum."""
        request = sample.request
        t0 = time.perf_counter()
        intent, graph, t1 = self.intent_then_graph(request)
        t2 = time.perf_counter()
        vector = self.search(request)
        t3 = time.perf_counter()
        filtered, t4 = self.filter_and_assemble(request, graph, vector)
        t5 = time.perf_counter()
        if self.rerank_stage is not None:
            traversal = self.personas[request.persona].traversal
            _time_rerank(
                request, filtered, traversal, self.rerank_stage, self.record if timed else None, self.statuses
            )
        if not timed:
            return
        for stage, a, b in (
            ("intent", t0, t1),
            ("graph_traversal", t1, t2),
            ("vector_search", t2, t3),
            ("access_filter", t3, t4),
            ("rank_budget_format", t4, t5),
            ("domain_pipeline", t0, t5),
        ):
            self.record(stage, (b - a) * 1000.0)
        self.statuses[f"graph {graph.graph.status}"] += 1
        self.statuses[f"intent {intent.intent.value}"] += 1

    def run_parallel(self, sample: Sample, timed: bool) -> None:
        """The context workflow's shape: its Parallel state's two branches (intent analysis then
        traversal; vector search) at once, on two threads here where Lambda gives each its own
        function, then the access filter and ranking (`domain_pipeline_parallel`)."""
        request = sample.request
        t0 = time.perf_counter()
        graph_branch = self.branches.submit(self.intent_then_graph, request)
        vector = self.search(request)
        _intent, graph, _ = graph_branch.result()
        self.filter_and_assemble(request, graph, vector)
        if timed:
            self.record("domain_pipeline_parallel", _ms(t0))


def measure_stages(
    stack: BenchStack,
    samples: Sequence[Sample],
    workflow_samples: int,
    rerank_stage: RerankStage | None = None,
) -> tuple[dict[str, list[float]], Counter[str]]:
    """Each stage's times; with `rerank_stage`, the reranking stage is timed on its own
    (`rerank.<name>`, over the same ranked candidates) and the pipeline stays without it."""
    times: dict[str, list[float]] = {}

    def record(stage: str, value: float) -> None:
        times.setdefault(stage, []).append(value)

    pipeline = _Pipeline(stack, rerank_stage, record)
    # a warm container: each legacy's gazetteer built, a few warm-up runs
    pipeline.warm_gazetteers(samples)
    for sample in samples[:3]:
        pipeline.run(sample, timed=False)
        pipeline.run_parallel(sample, timed=False)
    for i, sample in enumerate(samples):
        # both shapes run every sample, in alternating order, so neither always finds caches warmer
        first, second = (
            (pipeline.run_parallel, pipeline.run) if i % 2 else (pipeline.run, pipeline.run_parallel)
        )
        first(sample, timed=True)
        second(sample, timed=True)
        max_results = pipeline.personas[sample.request.persona].traversal.max_graph_results
        _time_parts(stack.ports, sample, max_results, record)
    pipeline.branches.shutdown()
    statuses = pipeline.statuses
    times.update(_http_traversal_times(stack, samples, pipeline.settings.resilience, statuses))
    if workflow_samples > 0:
        times["workflow_local"] = _workflow_times(stack, samples[:workflow_samples], pipeline.breaker)
    return times, statuses


def _http_traversal_times(
    stack: BenchStack,
    samples: Sequence[Sample],
    resilience: Any,
    statuses: Counter[str],
    *,
    latency_ms: float = 0.0,
) -> dict[str, list[float]]:
    """`graph_traversal_step` over HTTP: the Neptune adapter against the local openCypher server
    (heirloom_dev.neptune_server, its own process, as Neptune is its own machine) on the same
    corpus graph, each sample with its queries one after another (`graph_traversal.http_sequential`)
    and `TRAVERSAL_CONCURRENCY` at a time (`graph_traversal.http_concurrent`), alternating which
    goes first; no neighbourhood cache, so every template is a round trip; the budget is
    `TRAVERSAL_BUDGET_MS`'s. `latency_ms`: a wait the server adds to every query (`+<n>ms` in the
    stage names), a stand-in for the network and Neptune's own work."""
    from heirloom.adapters.neptune import NeptuneGraphStore
    from heirloom.contracts.context import GraphTraversalInput
    from heirloom.domain.breaker import CircuitBreaker, InMemoryBreakerStore
    from heirloom.domain.intent_step import GazetteerCache
    from heirloom.settings import Settings
    from heirloom.steps.graph_traversal import graph_traversal_step
    from heirloom.steps.intent_analysis import intent_analysis_step

    breaker = CircuitBreaker(InMemoryBreakerStore(), failure_threshold=10**9)
    gazetteers = GazetteerCache()
    ports = stack.ports
    intents = [
        intent_analysis_step(s.request, ports.stories, ports.graph, breaker, gazetteers) for s in samples
    ]
    out: dict[str, list[float]] = {}
    suffix = f"+{latency_ms:g}ms" if latency_ms else ""
    runs = (("http_sequential" + suffix, 1), ("http_concurrent" + suffix, resilience.traversal_concurrency))
    with _neptune_server(stack.falkor_socket, Settings().graph.graph_name, latency_ms) as endpoint:
        graph = NeptuneGraphStore(endpoint, "us-east-1", stack.name, iam_auth=False)
        pairs = list(zip(samples, intents, strict=True))
        for index, (sample, intent) in enumerate([*pairs[:3], *pairs]):  # 3 warm-up runs first
            data = GraphTraversalInput(request=sample.request, intent=intent)
            for name, concurrency in runs[:: 1 if index % 2 else -1]:
                t = time.perf_counter()
                branch = graph_traversal_step(
                    data, graph, breaker, budget_ms=resilience.traversal_budget_ms, concurrency=concurrency
                )
                if index >= 3:
                    out.setdefault(f"graph_traversal.{name}", []).append(_ms(t))
                    statuses[f"graph {name} {branch.graph.status}"] += 1
    return out


@contextlib.contextmanager
def _neptune_server(falkor_socket: str, graph_name: str, latency_ms: float = 0.0) -> Iterator[str]:
    """The local openCypher server in a process of its own; yields its endpoint."""
    import subprocess
    import sys

    command = [sys.executable, "-m", "heirloom_dev.neptune_server", "--socket", falkor_socket,
               "--graph", graph_name, "--port", "0", "--no-auth", "--latency-ms", str(latency_ms)]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline() if server.stdout else ""
        if not line.startswith("NEPTUNE_ENDPOINT="):
            raise RuntimeError(f"the local openCypher server did not start: {line!r}")
        yield line.strip().split("=", 1)[1]
    finally:
        server.terminate()
        server.wait(timeout=10)


def _time_rerank(
    request: ContextRequest,
    filtered: FilteredContext,
    traversal: TraversalConfig,
    stage: RerankStage,
    record: Callable[[str, float], None] | None,
    statuses: Counter[str],
) -> None:
    """The reranking stage alone, over what ranking ordered (`rerank.<name>`)."""
    from heirloom.domain.ranking import rank_candidates
    from heirloom.domain.rerank import rerank

    ranked = rank_candidates(filtered.candidates, traversal, request.mode)
    t = time.perf_counter()
    _, report = rerank(request.query, ranked, stage)
    if record is not None:
        record(f"rerank.{stage.reranker.name}", _ms(t))
        statuses[f"rerank {report.status}"] += 1


def _time_parts(
    ports: IngestionPorts, sample: Sample, limit: int, record: Callable[[str, float], None]
) -> None:
    """Parts timed alone: the query's embedding (the local model's share of vector_search) and
    each traversal template."""
    from heirloom.domain.graph_queries import TEMPLATES, finish
    from heirloom.domain.retrieval import query_text

    t = time.perf_counter()
    ports.embedder.embed([query_text(sample.request)])
    record("vector_search.query_embedding", _ms(t))
    for name, params in template_params(sample, limit).items():
        t = time.perf_counter()
        finish(name, ports.graph.run(TEMPLATES[name], params), params)
        record(f"traversal.{name}", _ms(t))


def _gazetteer_builder(
    build: Callable[..., Any], legacy_id: uuid.UUID, ports: IngestionPorts
) -> Callable[[], Any]:
    return lambda: build(legacy_id, ports.stories, ports.graph)


def _workflow_times(stack: BenchStack, samples: Sequence[Sample], breaker: Any) -> list[float]:
    from heirloom.services import Services
    from heirloom.settings import Settings
    from heirloom_dev.workflow import LocalContextWorkflow, LocalWorkflows

    ports = stack.ports
    for key, value in (
        ("POWERTOOLS_SERVICE_NAME", "heirloom"),
        ("POWERTOOLS_METRICS_NAMESPACE", "Heirloom"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
    ):
        os.environ.setdefault(key, value)
    services = Services(Settings())
    injected: tuple[tuple[str, Any], ...] = (
        ("db", stack.db),
        ("stories", ports.stories),
        ("vectors", ports.vectors),
        ("graph", ports.graph),
        ("embedder", ports.embedder),
        ("tokenizer", ports.tokenizer),
        ("breaker", breaker),
    )
    for name, value in injected:
        services.__dict__[name] = value  # pre-fills the cached_property
    out: list[float] = []
    with contextlib.redirect_stdout(_Sink()), LocalWorkflows(services=services).start() as workflows:  # type: ignore[type-var]
        runner = LocalContextWorkflow(workflows)
        runner.run(samples[0].request)  # warm-up: handler modules, moto
        for sample in samples:
            t = time.perf_counter()
            runner.run(sample.request)
            out.append(_ms(t))
    return out
