"""Every ASL file passes statelint (the `${...}` ARNs are CDK substitutions, hence --ignore=URI)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FILES = sorted((Path(__file__).parents[2] / "statemachines").glob("*.asl.json"))


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_statelint_accepts(path):
    statelint = shutil.which("statelint") or str(Path(sys.executable).parent / "statelint")
    result = subprocess.run(
        [statelint, "--ignore=URI", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_there_are_the_five_workflows():
    assert [p.name for p in FILES] == [
        "backfill.asl.json",
        "communities.asl.json",
        "context_assembly.asl.json",
        "ingest_story.asl.json",
        "story_connections.asl.json",
    ]
