"""What `make build` produces and how the stack picks it up; discovery of new functions; the
migration custom resource's handler."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from typing import ClassVar

import pytest
from aws_cdk import App

from cdk.app import cdk_json_context
from cdk.build_layers import (
    BYTECODE_MAGIC,
    CL100K_SHA256,
    LAMBDA_PYTHON_VERSION,
    WrongPython,
    bytecode_problems,
    compile_layer,
    copy_shared,
    copy_tiktoken,
    current_magic,
    current_version,
    main,
    prune_runtime_provided,
    runtime_requirements,
)
from cdk.config import TIKTOKEN_FILE, HeirloomConfig
from cdk.layers import RUNTIME, MissingBuild
from cdk.migrate import handler as migrate
from cdk.naming import REPO_ROOT
from cdk.stack import HeirloomStack
from cdk.workflows import MissingSubstitution

IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")


def test_deps_layer_requirements_are_the_runtime_dependencies_without_boto():
    import tomllib

    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    deps = pyproject["project"]["dependencies"]
    assert runtime_requirements() == [d for d in deps if not d.startswith(("boto3", "botocore"))]
    assert any(r.startswith("tiktoken") for r in runtime_requirements())
    assert not any(r.startswith(("boto3", "botocore")) for r in runtime_requirements())


def test_prune_removes_the_runtimes_own_packages_pulled_in_by_dependencies(tmp_path):
    for name in ("botocore", "boto3", "s3transfer", "jmespath", "pydantic", "requests"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    for meta in ("botocore-1.40.1.dist-info", "boto3-1.40.1.dist-info", "requests-2.32.0.dist-info"):
        (tmp_path / meta).mkdir()
    removed = prune_runtime_provided(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pydantic", "requests", "requests-2.32.0.dist-info"]
    assert "botocore-1.40.1.dist-info" in removed


def test_the_bytecode_table_names_the_configured_runtime_and_this_interpreters_magic():
    """The layers are compiled for `cdk.layers.RUNTIME`; the magic the check expects for a
    version is CPython's (verified against the running interpreter's own)."""
    assert RUNTIME.name == f"python{LAMBDA_PYTHON_VERSION}"
    assert BYTECODE_MAGIC[current_version()] == current_magic()
    makefile = (REPO_ROOT / "mk" / "infra.mk").read_text()
    default = next(line for line in makefile.splitlines() if line.startswith("LAMBDA_PYTHON :="))
    v = LAMBDA_PYTHON_VERSION
    assert f"$(shell python{v} -c" in default and f"/versions/{v}*/bin/python{v}" in default, default
    assert f"--python-version {LAMBDA_PYTHON_VERSION}" in makefile


def _package(tmp_path):
    pkg = tmp_path / "layer" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("X = 1\n")
    (pkg / "mod.py").write_text("def f():\n    return 2\n")
    return tmp_path / "layer"


def test_compiled_layers_are_checked_for_the_runtimes_bytecode(tmp_path):
    layer = _package(tmp_path)
    assert len(bytecode_problems(layer, current_version())) == 2  # nothing compiled yet
    compile_layer([layer], sys.executable, current_version())  # unchecked-hash, then checked
    assert bytecode_problems(layer, current_version()) == []
    # the same folder for another runtime: no .pyc of that version
    other = next(v for v in BYTECODE_MAGIC if v != current_version())
    assert len(bytecode_problems(layer, other)) == 2
    # timestamp-based bytecode (what a plain import writes) is refused
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-f", str(layer)], check=True)
    assert all("unchecked-hash" in p for p in bytecode_problems(layer, current_version()))


def _runtime_python() -> str:
    """The LAMBDA_PYTHON `make build` resolves (mk/infra.mk), as make prints it."""
    out = subprocess.run(["make", "-s", "-C", str(REPO_ROOT), "--eval=print-lp: ; @echo $(LAMBDA_PYTHON)",
                          "print-lp"], capture_output=True, text=True, check=True).stdout  # fmt: skip
    return out.strip().splitlines()[-1]


def test_the_runtimes_own_python_compiles_a_layer_the_check_accepts(tmp_path):
    python = _runtime_python()
    try:
        subprocess.run([python, "-c", "pass"], check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip(f"no Python {LAMBDA_PYTHON_VERSION} on this machine ({python})")
    layer = _package(tmp_path)
    compile_layer([layer], python)  # the runtime's version by default
    assert bytecode_problems(layer) == []
    assert bytecode_problems(layer, current_version()) != []  # not this interpreter's bytecode


def test_compiling_with_another_python_than_the_runtimes_is_refused(tmp_path):
    layer = _package(tmp_path)
    other = next(v for v in BYTECODE_MAGIC if v != current_version())
    with pytest.raises(WrongPython, match=f"the Lambda runtime is {other}"):
        compile_layer([layer], sys.executable, other)
    with pytest.raises(WrongPython, match="not runnable"):
        compile_layer([layer], str(tmp_path / "no-python"), other)
    assert main(["compile", str(layer)]) in (0, 1)  # python3.12 here or not: never a crash


def test_shared_layer_ships_the_package_without_dev_tooling_and_caches(tmp_path):
    target = copy_shared(tmp_path)
    assert (target / "heirloom" / "steps" / "graph_sync.py").is_file()
    assert any((target / "heirloom" / "migrations").glob("*.sql"))
    assert not (target / "heirloom_dev").exists() and not (target / "heirloom" / "local").exists()
    assert not list(target.rglob("__pycache__"))


def test_tiktoken_layer_file_works_offline(tmp_path):
    target = copy_tiktoken(tmp_path)
    assert target == tmp_path / "tiktoken" / TIKTOKEN_FILE
    assert hashlib.sha256(target.read_bytes()).hexdigest() == CL100K_SHA256
    # a fresh interpreter, as in Lambda: TIKTOKEN_CACHE_DIR=/opt/tiktoken -> this folder
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path / "tiktoken")}
    code = "import tiktoken; print(len(tiktoken.get_encoding('cl100k_base').encode('Grandma Rose')))"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert int(out.stdout.strip()) > 0


@pytest.fixture(scope="module")
def repo_copy(tmp_path_factory):
    """The parts of the repository the stack reads, copied so tests can add folders and files."""
    root = tmp_path_factory.mktemp("repo")
    for part in ("functions", "statemachines", "layers/shared"):
        shutil.copytree(REPO_ROOT / part, root / part, ignore=IGNORE)
    return root


def build(root, tmp_path, **config):
    app = App(outdir=str(tmp_path / "out"), context=cdk_json_context())
    return HeirloomStack(app, "Probe", root=root, config=HeirloomConfig(**config))


def test_a_new_function_folder_deploys_with_no_extra_permissions(repo_copy, tmp_path):
    folder = repo_copy / "functions" / "memory_lane"
    folder.mkdir()
    (folder / "handler.py").write_text(
        '"""MemoryLane: a new function."""\n\n\ndef handler(event, context):\n    return event\n'
    )
    try:
        stack = build(repo_copy, tmp_path)
    finally:
        shutil.rmtree(folder)
    deployed = stack.functions["MemoryLane"]
    assert stack.node.find_child("MemoryLane") is deployed.function
    document = stack.resolve(deployed.role.node.find_child("DefaultPolicy").document)
    actions = {
        a
        for s in document["Statement"]
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert actions == {
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
    }
    cfn = deployed.function.node.default_child
    assert cfn.vpc_config is None
    assert cfn.description == "MemoryLane: a new function."
    assert "DATABASE_URL" not in json.dumps(stack.resolve(cfn.environment))


def test_an_asl_placeholder_without_a_function_fails_synth(repo_copy, tmp_path):
    path = repo_copy / "statemachines" / "probe.asl.json"
    task = {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "End": True}
    task["Parameters"] = {"FunctionName": "${NowhereFunctionArn}", "Payload": {}}
    path.write_text(json.dumps({"StartAt": "Nowhere", "States": {"Nowhere": task}}))
    try:
        with pytest.raises(MissingSubstitution, match=r"probe\.asl\.json.*NowhereFunctionArn"):
            build(repo_copy, tmp_path)
    finally:
        path.unlink()


def test_placeholder_layers_without_make_build(repo_copy, tmp_path):
    stack = build(repo_copy, tmp_path)
    assert stack.layers.placeholders == ["Shared", "Deps", "Tiktoken"]
    with pytest.raises(MissingBuild, match="make build"):
        build(repo_copy, tmp_path / "strict", require_built_layers=True)


def test_built_layers_are_used_when_present(repo_copy, tmp_path):
    deps = repo_copy / "build" / "layers" / "deps" / "python" / "somepkg"
    deps.mkdir(parents=True)
    (deps / "__init__.py").write_text("")
    copy_tiktoken(repo_copy / "build" / "layers" / "tiktoken")
    shared = repo_copy / "build" / "layers" / "shared"
    copy_shared(shared, repo_copy / "layers" / "shared" / "python")
    (shared / ".built").touch()
    try:
        stack = build(repo_copy, tmp_path, require_built_layers=True)
    finally:
        shutil.rmtree(repo_copy / "build")
    assert stack.layers.placeholders == []


# -- the migration custom resource ------------------------------------------------------------------
class FakeSecrets:
    def get_secret_value(self, SecretId):
        assert SecretId == "arn:secret"
        return {"SecretString": json.dumps({"username": "heirloom", "password": "p@ss word"})}


class FakeDatabase:
    created: ClassVar[list[FakeDatabase]] = []

    def __init__(self, url, *, statement_timeout_ms, embedding_dim):
        self.url, self.embedding_dim = url, embedding_dim
        FakeDatabase.created.append(self)
        self.closed = False

    def migrate(self):
        return ["001_core.sql"]

    def close(self):
        self.closed = True


def test_migration_handler_applies_migrations_on_create(monkeypatch):
    env = {
        "DB_SECRET_ARN": "arn:secret",
        "DB_HOST": "writer.example",
        "DB_NAME": "heirloom",
        "EMBEDDING_DIM": "1024",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    out = migrate.handler({"RequestType": "Create"}, None, secrets=FakeSecrets(), database=FakeDatabase)
    assert out == {"PhysicalResourceId": migrate.PHYSICAL_ID, "Data": {"Applied": "001_core.sql"}}
    db = FakeDatabase.created[-1]
    assert db.closed and db.embedding_dim == 1024
    assert "host=writer.example" in db.url and "sslmode=require" in db.url
    assert "password='p@ss word'" in db.url


def test_migration_handler_keeps_the_schema_on_delete():
    out = migrate.handler(
        {"RequestType": "Delete", "PhysicalResourceId": "x"}, None, secrets=object(), database=object()
    )
    assert out == {"PhysicalResourceId": "x"}


def test_config_from_context():
    app = App(
        context={
            "heirloom:auroraReaders": "0",
            "heirloom:requireBuiltLayers": "true",
            "heirloom:inferenceProfileRegions": "eu-west-1,eu-central-1",
            "heirloom:graphPrefix": "staging",
        }
    )
    config = HeirloomConfig.from_context(app.node)
    assert config.aurora_readers == 0
    assert config.require_built_layers is True
    assert config.inference_profile_regions == ("eu-west-1", "eu-central-1")
    assert config.graph_prefix == "staging"
    assert HeirloomConfig.from_context(App().node) == HeirloomConfig()
    with pytest.raises(ValueError, match="GRAPH_ENV_PREFIX"):
        HeirloomConfig(graph_prefix="Prod-1")


def test_layer_sizes_are_reported_against_the_lambda_limit(tmp_path):
    from cdk.build_layers import LAMBDA_UNZIPPED_LIMIT_MB, main, size_report

    small, big = tmp_path / "small", tmp_path / "big"
    (small / "python").mkdir(parents=True)
    (small / "python" / "a.bin").write_bytes(b"x" * 2 * 1024 * 1024)
    report, total = size_report([small])
    assert total == 2.0
    assert f"{small}: 2.0 MB" in report
    assert f"2.0 MB of Lambda's {LAMBDA_UNZIPPED_LIMIT_MB:.0f} MB" in report
    assert main(["sizes", str(small)]) == 0
    big.mkdir()
    with (big / "huge.bin").open("wb") as fh:  # sparse: counts its size without writing it
        fh.truncate(int(LAMBDA_UNZIPPED_LIMIT_MB * 1024 * 1024) + 1)
    assert main(["sizes", str(big)]) == 1
