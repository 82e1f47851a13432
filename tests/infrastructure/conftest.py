"""The Heirloom stack, built and synthesized once per session with cdk-nag on (~6 s).

If cdk-nag rejects the stack, the stack is rebuilt without it so the property tests still run and
only test_nag fails, with the unacknowledged findings.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk.assertions import Template

from cdk.app import build_app
from cdk.stack import HeirloomStack


@dataclass
class Built:
    stack: HeirloomStack
    template: Template
    outdir: Path
    #: None when cdk-nag accepted the stack, else the unacknowledged findings
    nag_findings: list[str] | None

    @property
    def template_path(self) -> Path:
        return self.outdir / f"{self.stack.stack_name}.template.json"

    @cached_property
    def json(self) -> dict[str, Any]:
        """The synthesized template (read once: every to_json() is a round trip to jsii)."""
        data: dict[str, Any] = json.loads(self.template_path.read_text())
        return data

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        resources: dict[str, dict[str, Any]] = self.json["Resources"]
        return resources

    def logical_id(self, construct: Any) -> str:
        path = construct.node.path
        if path not in self._logical_ids:
            element = construct.node.default_child or construct
            self._logical_ids[path] = self.stack.resolve(self.stack.get_logical_id(element))
        return self._logical_ids[path]

    @cached_property
    def _logical_ids(self) -> dict[str, str]:
        return {}


def _findings(report: Path) -> list[str]:
    if not report.is_file():
        return ["(no validation report written)"]
    data = json.loads(report.read_text())
    out = []
    for plugin in data.get("pluginReports", []):
        for violation in plugin.get("violations", []):
            for resource in violation.get("violatingResources", violation.get("violatingConstructs", [])):
                where = resource.get("constructPath") or resource.get("resourceLogicalId")
                out.append(f"{violation.get('ruleName')}: {where}")
    return out or [json.dumps(data)[:2000]]


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    outdir = tmp_path_factory.mktemp("cdk.out")
    app, stack = build_app(outdir=str(outdir), nag=True)
    findings = None
    try:
        app.synth()
    except RuntimeError as exc:  # jsii surfaces "ValidationFailed" as RuntimeError
        if "Validation failed" not in str(exc):
            raise
        findings = _findings(outdir / "validation-report.json")
        outdir = tmp_path_factory.mktemp("cdk.out.unchecked")
        app, stack = build_app(outdir=str(outdir), nag=False)
        app.synth()
    return Built(stack=stack, template=Template.from_stack(stack), outdir=outdir, nag_findings=findings)


_VARIANTS: dict[str, Built] = {}


@pytest.fixture(scope="session")
def variant(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Built]:
    """The stack built with extra CDK context (cdk-nag off; test_lint checks presets with it),
    once per distinct context per session."""

    def build(**context: Any) -> Built:
        key = json.dumps(context, sort_keys=True)
        if key not in _VARIANTS:
            outdir = tmp_path_factory.mktemp("cdk.out.variant")
            app, stack = build_app(outdir=str(outdir), nag=False, context=context)
            app.synth()
            _VARIANTS[key] = Built(
                stack=stack, template=Template.from_stack(stack), outdir=outdir, nag_findings=None
            )
        return _VARIANTS[key]

    return build


@pytest.fixture(scope="session")
def template(built: Built) -> Template:
    return built.template


@pytest.fixture(scope="session")
def resources(built: Built) -> dict[str, dict[str, Any]]:
    return built.resources
