"""The three layers every function gets: the shared `heirloom` package, the runtime dependencies
and the tiktoken BPE file, built by `make build` (shared and deps precompiled for the runtime's
Python, `cdk.build_layers`). Without it synth uses the shared package's sources (no bytecode) and
placeholders for the other two (so synth and the tests work offline), and says so."""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Annotations
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from cdk.config import TIKTOKEN_FILE

RUNTIME = lambda_.Runtime.PYTHON_3_12
#: why AwsSolutions-L1 (latest runtime) is acknowledged on every function of ours
RUNTIME_PIN_REASON = (
    "Python 3.12 is pinned on purpose: the deps layer is built for cp312/manylinux2014_x86_64 "
    "(make build) and the code is tested on it; moving runtime means rebuilding and re-testing "
    "the layer, done as one change."
)
ARCHITECTURE = lambda_.Architecture.X86_64
PLACEHOLDER = Path(__file__).resolve().parent / "assets" / "placeholder_layer"
#: never shipped: caches and packaging metadata (dev tooling lives outside the layer, in tools/)
SHARED_EXCLUDES = ["**/__pycache__", "**/*.pyc", "python/*.egg-info"]


class MissingBuild(RuntimeError):
    """`make build` has not produced a layer and placeholders are not allowed."""


def deps_dir(root: Path) -> Path:
    return root / "build" / "layers" / "deps"


def shared_dir(root: Path) -> Path:
    return root / "build" / "layers" / "shared"


def tiktoken_dir(root: Path) -> Path:
    return root / "build" / "layers" / "tiktoken"


def _built(path: Path, marker: Path) -> bool:
    return marker.exists() and any(path.iterdir())


class Layers(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, root: Path, require_built: bool) -> None:
        super().__init__(scope, construct_id)
        self.placeholders: list[str] = []
        built = shared_dir(root)
        if built.is_dir() and _built(built, built / ".built"):
            shared_source, excludes = built, [".built"]
            shared_description = "heirloom domain package (layers/shared/python), precompiled"
        else:
            if require_built:
                raise MissingBuild(f"{built} is missing: run `make build` first")
            shared_source, excludes = root / "layers" / "shared", SHARED_EXCLUDES
            shared_description = (
                "heirloom domain package (layers/shared/python), NOT precompiled (make build)"
            )
            self.placeholders.append("Shared")
        self.shared = lambda_.LayerVersion(
            self,
            "Shared",
            code=lambda_.Code.from_asset(str(shared_source), exclude=excludes),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description=shared_description,
        )
        deps = deps_dir(root)
        self.deps = self._built_layer(
            "Deps",
            deps,
            deps / "python",
            "runtime dependencies of pyproject [project].dependencies (make build)",
            require_built,
        )
        tiktoken = tiktoken_dir(root)
        self.tiktoken = self._built_layer(
            "Tiktoken",
            tiktoken,
            tiktoken / "tiktoken" / TIKTOKEN_FILE,
            "tiktoken cl100k_base BPE file under /opt/tiktoken (make build)",
            require_built,
        )

    @property
    def all(self) -> list[lambda_.ILayerVersion]:
        return [self.shared, self.deps, self.tiktoken]

    def _built_layer(
        self, construct_id: str, path: Path, marker: Path, description: str, require_built: bool
    ) -> lambda_.LayerVersion:
        source = path
        if not (path.is_dir() and _built(path, marker)):
            if require_built:
                raise MissingBuild(f"{path} is missing: run `make build` first")
            source = PLACEHOLDER
            self.placeholders.append(construct_id)
            description = f"PLACEHOLDER (run make build): {description}"
        layer = lambda_.LayerVersion(
            self,
            construct_id,
            # the built layers' __pycache__ is the precompiled bytecode: shipped
            code=lambda_.Code.from_asset(str(source), exclude=[".built"]),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
            description=description,
        )
        if source == PLACEHOLDER:
            Annotations.of(layer).add_warning_v2(
                "heirloom:placeholder-layer",
                f"{path} does not exist: using an empty placeholder layer. Run `make build` before deploying.",
            )
        return layer
