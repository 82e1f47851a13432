"""cfn-lint and cdk-nag on the synthesized template, the audit of every cdk-nag acknowledgement,
and the real `cdk synth` through the pinned CLI (skipped when node_modules is absent)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cfnlint.api import ManualArgs, lint_file

from cdk.config import stack_name
from cdk.naming import REPO_ROOT

CFN_LINT_CONFIG = REPO_ROOT / ".cfnlintrc.yaml"
CDK_CLI = REPO_ROOT / "node_modules" / ".bin" / "cdk"

#: every AwsSolutions rule acknowledged somewhere (logical ids normalised to <Id>); a new
#: acknowledgement must be added here, so it is seen in review
ACKNOWLEDGED = {
    "AwsSolutions-APIG3",
    "AwsSolutions-COG8",
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]",
    "AwsSolutions-IAM5[Resource::*]",
    "AwsSolutions-IAM5[Resource::<Id.Arn>/imports/*]",
    "AwsSolutions-IAM5[Resource::<Id.Arn>:*]",
    "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:neptune-db:<AWS::Region>:<AWS::AccountId>:<Id.ClusterResourceId>/*]",
    "AwsSolutions-L1",
    "AwsSolutions-RDS11",
    "AwsSolutions-S1",
    "AwsSolutions-SF1",
}


def test_cfn_lint_passes(built):
    config = yaml.safe_load(CFN_LINT_CONFIG.read_text())
    matches = lint_file(
        built.template_path,
        config=ManualArgs(ignore_checks=config["ignore_checks"], regions=["us-east-1", "us-west-2"]),
    )
    assert [str(m) for m in matches] == []


def test_cdk_nag_aws_solutions_passes(built):
    assert built.nag_findings is None, "unacknowledged cdk-nag findings:\n" + "\n".join(built.nag_findings)


def _acknowledgements(built):
    for resource in built.resources.values():
        for rule in resource.get("Metadata", {}).get("cdk_nag", {}).get("rules_to_suppress", []):
            if rule["id"].startswith("AwsSolutions-"):
                yield re.sub(r"<[A-Za-z0-9]+\.", "<Id.", rule["id"]), rule["reason"]


def test_every_acknowledgement_is_known_and_justified(built):
    if built.nag_findings is not None:
        pytest.skip("cdk-nag failed: see test_cdk_nag_aws_solutions_passes")
    seen = dict(_acknowledgements(built))
    assert set(seen) == ACKNOWLEDGED
    for rule_id, reason in seen.items():
        assert len(reason) >= 60, f"{rule_id}: reason too short to justify it: {reason!r}"


@pytest.mark.slow
@pytest.mark.skipif(not CDK_CLI.exists(), reason="node_modules is absent: run `make synth` (npm ci) first")
def test_cdk_cli_synth_offline(built, tmp_path):
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "CDK_DISABLE_CLI_TELEMETRY": "true",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }
    # no credentials, no network: synth must not look anything up
    for key in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        env.pop(key, None)
    result = subprocess.run(
        [str(CDK_CLI), "synth", "-q", "--no-notices", "-o", str(tmp_path / "cdk.out")],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    template = json.loads((tmp_path / "cdk.out" / f"{stack_name()}.template.json").read_text())

    def kinds(resources):
        # the API deployment's id hashes the whole API (CLI metadata included); CDKMetadata is CLI-only
        return {
            (lid if r["Type"] != "AWS::ApiGateway::Deployment" else "Deployment", r["Type"])
            for lid, r in resources.items()
            if r["Type"] != "AWS::CDK::Metadata"
        }

    # same app, same context: the CLI builds the resources the tests checked
    assert kinds(template["Resources"]) == kinds(built.resources)
