"""`heirloom bench`: the whole run, from the corpus to the report (the package docstring says what
it measures)."""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from heirloom.adapters.embedders import OnnxMiniLmEmbedder
from heirloom.ports import Embedder
from heirloom_dev.bench.corpus import SEED, Corpus, build_samples, generate_corpus
from heirloom_dev.bench.load import (
    PROBE_STORIES,
    BenchStack,
    _marker,
    _open_stack,
    _read_marker,
    _stderr,
    _write_marker,
    graph_loaded,
    load_corpus,
    measure_ingestion,
    rebuild_graph,
)
from heirloom_dev.bench.measure import WORKFLOW_SAMPLES, measure_stages
from heirloom_dev.bench.report import misses, render_docs
from heirloom_dev.bench.stats import (
    IMPORT_RUNS,
    ProgressFn,
    _load_average,
    _summary,
    cold_imports,
    import_parts,
    layer_sizes,
    machine_info,
    peak_rss_mb,
)

if TYPE_CHECKING:
    pass


# -- entry point ------------------------------------------------------------------------------
def run_bench(
    stories: int = 10_000,
    queries: int = 200,
    json_path: Path | None = None,
    write_docs: bool = True,
    *,
    embedder: Embedder | None = None,
    extract: bool = True,
    postgres_uri: str | None = None,
    falkor_socket: str | None = None,
    workflow_samples: int = WORKFLOW_SAMPLES,
    import_runs: int = IMPORT_RUNS,
    import_functions: Sequence[str] | None = None,
    docs_path: Path | None = None,
    progress: ProgressFn | None = _stderr,
    seed: int = SEED,
    reranker: str = "off",
) -> dict[str, Any]:
    """Generate (or reuse) the corpus, measure, and return the figures (see module docstring).

    `embedder` defaults to the local ONNX model and `extract` to the spaCy extractor; tests pass a
    `HashingEmbedder` and `extract=False`. `postgres_uri` / `falkor_socket` default to the bench's
    own stack under `.heirloom/bench`. `reranker` (RERANKER's values) times that reranking stage
    on its own beside the stages (`rerank.<name>`); the domain pipeline is timed without it."""
    from heirloom_dev.runtime import project_root

    if queries < 1:
        raise ValueError("queries must be at least 1")
    root = project_root()
    load_before = _load_average()
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(root / ".heirloom" / "tiktoken"))
    embedder = embedder or OnnxMiniLmEmbedder()
    name = f"bench_{stories}{_suffix(embedder)}"
    corpus = generate_corpus(stories, seed)
    stack = _open_stack(name, embedder, _extractor() if extract else None, postgres_uri, falkor_socket)
    load = _ensure_loaded(stack, corpus, name, stories, _marker(stories, seed, embedder), progress)
    if progress:
        progress(f"bench: ingestion throughput on {min(stories, PROBE_STORIES)} probe stories")
    ingest = measure_ingestion(stack, corpus, min(stories, PROBE_STORIES))
    if progress:
        progress(f"bench: {queries} query samples")
    samples = build_samples(corpus, queries, seed)
    # the corpus (~0.5M objects) is the bench's, not a Lambda's: full collections that walk it
    # (0.7 s each at 10k stories) would land in whichever stage happened to trigger them
    gc.collect()
    gc.freeze()
    from heirloom.adapters.factory import build_rerank_stage
    from heirloom.settings import settings_from_env

    stage = build_rerank_stage(settings_from_env({"RERANKER": reranker}))
    times, statuses = measure_stages(stack, samples, min(workflow_samples, queries), stage)
    gc.unfreeze()
    if progress:
        progress("bench: cold imports and layer sizes")
    imports = cold_imports(root, import_runs, import_functions)
    parts = import_parts(root, import_runs) if import_functions is None else {}
    layers, missing = layer_sizes(root)
    order = ["gazetteer_build", "intent", "vector_search", "vector_search.query_embedding", "graph_traversal"]
    order += sorted(k for k in times if k.startswith("graph_traversal."))
    order += sorted(k for k in times if k.startswith("traversal."))
    order += ["access_filter", "rank_budget_format", "domain_pipeline", "domain_pipeline_parallel"]
    order += [*sorted(k for k in times if k.startswith("rerank.")), "workflow_local"]
    result: dict[str, Any] = {
        "stories": stories,
        "queries": queries,
        "seed": seed,
        "stages": {k: _summary(times[k]) for k in order if times.get(k)},
        "ingest_stories_per_s": ingest["stories_per_s"],
        "cold_import_ms": imports,
        "cold_import_parts_ms": parts,
        "layer_mb": layers,
        "layers_not_built": missing,
        "samples": {k: len(times[k]) for k in order if times.get(k)},
        "ingest": ingest,
        "peak_rss_mb": peak_rss_mb(),
        "import_runs": max(1, import_runs),
        "outcomes": dict(sorted(statuses.items())),
        "load": load,
        "corpus": _corpus_counts(stack, name),
        "machine": {**machine_info(), "load_avg": [load_before, _load_average()]},
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
    result["missed"] = misses(result)
    if json_path is not None:
        json_path.write_text(json.dumps(result, indent=2) + "\n")
    if write_docs:
        _write_docs(result, docs_path or root / "docs" / "benchmarks.md")
    return result


#: the wait per query of the `--graph-http` run's second pair of rows
GRAPH_HTTP_LATENCY_MS = 10.0


def run_graph_http(
    stories: int, queries: int, *, progress: ProgressFn | None = _stderr, seed: int = SEED
) -> dict[str, Any]:
    """Only the graph traversal over HTTP (`heirloom bench --graph-http`): the corpus of
    `stories` (loaded if missing, without extraction), `queries` samples, sequential and
    concurrent `graph_traversal_step` through the local openCypher server (decision 0019)."""
    from collections import Counter

    from heirloom.settings import Settings
    from heirloom_dev.bench.measure import _http_traversal_times

    embedder = OnnxMiniLmEmbedder()
    name = f"bench_{stories}{_suffix(embedder)}"
    corpus = generate_corpus(stories, seed)
    stack = _open_stack(name, embedder, None, None, None)
    _ensure_loaded(stack, corpus, name, stories, _marker(stories, seed, embedder), progress)
    load_before = _load_average()
    statuses: Counter[str] = Counter()
    resilience = Settings().resilience
    samples = build_samples(corpus, queries, seed)
    times = _http_traversal_times(stack, samples, resilience, statuses)
    # with a wait per query as Neptune's round trip would add (in-VPC HTTPS and the engine's work)
    times |= _http_traversal_times(stack, samples, resilience, statuses, latency_ms=GRAPH_HTTP_LATENCY_MS)
    return {
        "stories": stories,
        "queries": queries,
        "concurrency": resilience.traversal_concurrency,
        "budget_ms": resilience.traversal_budget_ms,
        "stages": {k: _summary(v) for k, v in sorted(times.items())},
        "outcomes": dict(sorted(statuses.items())),
        "load_avg": [load_before, _load_average()],
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _extractor() -> Any:
    from heirloom.adapters.spacy.extractor import SpacyEntityExtractor

    return SpacyEntityExtractor()


def _suffix(embedder: Embedder) -> str:
    """The corpus database's suffix: none for the local model, the model's id otherwise."""
    if embedder.model_id == OnnxMiniLmEmbedder.model_id:
        return ""
    return "_" + "".join(ch if ch.isalnum() else "_" for ch in embedder.model_id.lower())


def _ensure_loaded(
    stack: BenchStack, corpus: Corpus, name: str, stories: int, marker: str, progress: ProgressFn | None
) -> dict[str, Any]:
    """Load the corpus unless this stack holds it already (rebuilding a lost graph); what loading took."""
    load_seconds = 0.0
    timings: dict[str, float] = {}
    loaded_now = _read_marker(stack) != marker
    if loaded_now:
        if progress:
            progress(f"bench: loading {stories} stories into database and graph {name}")
        load_seconds = load_corpus(stack, corpus, progress, timings)
        _write_marker(stack, marker)
    elif not graph_loaded(stack, corpus):
        if progress:
            progress(f"bench: the graph of {name} is missing (a restarted FalkorDB); rebuilding it")
        rebuild_graph(stack, corpus, progress)
    elif progress:
        progress(f"bench: reusing the corpus already loaded in {name}")
    return {
        "loaded_now": loaded_now,
        "seconds": round(load_seconds, 1),
        "stories_per_s": round(stories / load_seconds, 1) if load_seconds else 0.0,
        "embed_seconds": round(timings.get("embed_seconds", 0.0), 1),
        "chunks_embedded": int(timings.get("chunks_embedded", 0)),
    }


def _corpus_counts(stack: BenchStack, name: str) -> dict[str, Any]:
    counts = stack.ports.stories.counts()
    nodes = dict(sorted(stack.ports.graph.count_nodes().items()))
    edges = dict(sorted(stack.ports.graph.count_edges().items()))
    return {
        "database": name,
        "legacies": counts["legacies"],
        "persons": counts["persons"],
        "users": counts["users"],
        "links": counts["legacy_links"],
        "stories_stored": counts["stories"],
        "chunks": counts["story_chunks"],
        "graph_nodes": nodes,
        "graph_nodes_total": sum(nodes.values()),
        "graph_edges": edges,
        "graph_edges_total": sum(edges.values()),
    }


def _write_docs(result: dict[str, Any], target: Path) -> None:
    """docs/benchmarks.md rendered; the cold-path section (`heirloom bench --cold-path`) kept."""
    from heirloom_dev import coldpath

    text = render_docs(result)
    kept = coldpath.section_of(target.read_text()) if target.is_file() else None
    target.write_text(coldpath.merge_section(text, kept) if kept else text)
