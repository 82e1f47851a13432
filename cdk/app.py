"""CDK app: `python -m cdk.app` from the repo root (cdk.json), or `build_app()` in tests.

cdk-nag's AwsSolutions pack runs as a policy-validation plugin: synth fails on any finding that
is not acknowledged in code with a reason.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from aws_cdk import App, Tags, Validations
from cdk_nag import AwsSolutionsChecks

from cdk.config import PROD_STAGE, stack_name
from cdk.naming import REPO_ROOT
from cdk.stack import HeirloomStack


def cdk_json_context(root: Path = REPO_ROOT) -> dict[str, Any]:
    """The `context` of cdk.json, so tests build exactly what `cdk synth` builds."""
    context: dict[str, Any] = json.loads((root / "cdk.json").read_text()).get("context", {})
    return context


def build_app(
    *, outdir: str | None = None, nag: bool = True, context: dict[str, Any] | None = None
) -> tuple[App, HeirloomStack]:
    app = App(outdir=outdir, context={**cdk_json_context(), **(context or {})})
    stack = HeirloomStack(
        app,
        stack_name(str(app.node.try_get_context("stage") or PROD_STAGE)),
        description="Heirloom: graph-augmented context assembly (API, workflows, Aurora, Neptune)",
    )
    # DBProxyTargetGroup takes no Tags in CloudFormation although its L1 class is taggable
    Tags.of(app).add("project", "heirloom", exclude_resource_types=["AWS::RDS::DBProxyTargetGroup"])
    if nag:
        # acknowledgements also go to each resource's Metadata (cdk_nag.rules_to_suppress), so the
        # template shows every suppression with its reason and the tests can audit them
        Validations.of(app).add_plugins(AwsSolutionsChecks(app, write_suppressions_to_cloud_formation=True))
    return app, stack


def main() -> None:
    app, _ = build_app()
    app.synth()


if __name__ == "__main__":
    main()
