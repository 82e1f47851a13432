"""`heirloom bench`: a synthetic corpus at scale, loaded into its own stack, and the latency of
every stage of context assembly, ingestion throughput, peak memory, cold imports and layer sizes.

The corpus is generated from a seeded `random.Random` (no text from any dataset): ~N/100
legacies, each with a subject, 8-15 persons, users of every role, links in every state,
relationships, and stories of six paragraphs built from sentence templates over the legacy's
persons and a pool of places, events, objects and years.

Loading (`load_corpus`): the records go through `heirloom.domain.ingestion`; the stories go in
batches: rows and Story nodes through `apply_story(process=False)`, chunks embedded with the real
embedder across the batch and written with the index's own statements (`replace_many`), and the
entity graph of the generator's known entities (no extraction) written with what
`sync_story_entities` writes, batched (`write_entity_graph`, checked against story-by-story
ingestion by tests/integration/test_bench_load.py). What is left is the embedding model's time.
Ingestion throughput is measured separately on probe copies of up to 200 stories through the full
`apply_story` path (embedder + extractor), which are deleted again afterwards. A second run with
the same N reuses the loaded corpus.
"""
