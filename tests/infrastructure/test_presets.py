"""Cost presets and flags: each preset's resources, flags winning over the preset, lint and
cdk-nag on the cheaper shape, and docs/deploy.md's cost table computed from the templates."""

from __future__ import annotations

import json

import pytest
from aws_cdk import App
from cfnlint.api import ManualArgs, lint_file

from cdk import costs
from cdk.access import ACCESS
from cdk.app import build_app
from cdk.config import HeirloomConfig
from cdk.naming import REPO_ROOT
from tests.infrastructure.conftest import _findings
from tests.infrastructure.test_lint import CFN_LINT_CONFIG

FAMILY = {"heirloom:preset": "family"}


def of_type(built, kind):
    return [r["Properties"] for r in built.resources.values() if r["Type"] == kind]


def interface_endpoints(built):
    return [e for e in of_type(built, "AWS::EC2::VPCEndpoint") if e.get("VpcEndpointType") == "Interface"]


def service(endpoint):
    return json.dumps(endpoint["ServiceName"]).rsplit(".", 1)[-1].strip('"]}')


def db_env(built, cid):
    function = built.stack.node.find_child(cid)
    return built.resources[built.logical_id(function)]["Properties"]["Environment"]["Variables"]


def test_production_is_the_default_shape(built):
    assert (
        HeirloomConfig.from_context(App(context={"heirloom:preset": "production"}).node) == HeirloomConfig()
    )
    assert len(of_type(built, "AWS::RDS::DBProxy")) == 1
    instances = of_type(built, "AWS::RDS::DBInstance")
    assert len(instances) == 2  # writer + reader in another AZ
    (cluster,) = of_type(built, "AWS::RDS::DBCluster")
    assert cluster["ServerlessV2ScalingConfiguration"]["MinCapacity"] == 0.5
    assert "SecondsUntilAutoPause" not in cluster["ServerlessV2ScalingConfiguration"]
    endpoints = interface_endpoints(built)
    assert sorted(map(service, endpoints)) == [
        "bedrock-runtime",
        "logs",
        "secretsmanager",
        "states",
        "sync-states",
    ]
    assert all(len(e["SubnetIds"]) == 2 for e in endpoints)


def test_family_preset_is_the_cheap_shape(variant):
    b = variant(**FAMILY)
    assert of_type(b, "AWS::RDS::DBProxy") == [] and of_type(b, "AWS::RDS::DBProxyTargetGroup") == []
    assert len(of_type(b, "AWS::RDS::DBInstance")) == 1  # the writer only
    (cluster,) = of_type(b, "AWS::RDS::DBCluster")
    assert cluster["ServerlessV2ScalingConfiguration"]["MinCapacity"] == 0
    assert cluster["ServerlessV2ScalingConfiguration"]["SecondsUntilAutoPause"] == 600
    endpoints = interface_endpoints(b)
    assert sorted(map(service, endpoints)) == ["bedrock-runtime", "secretsmanager", "states", "sync-states"]
    assert all(len(e["SubnetIds"]) == 1 for e in endpoints)
    # the database functions connect to the writer endpoint, admitted by the cluster's group
    writer = {"Fn::GetAtt": [b.logical_id(b.stack.data.cluster), "Endpoint.Address"]}
    database_functions = [cid for cid, a in ACCESS.items() if a.database]
    assert all(db_env(b, cid)["DB_HOST"] == writer for cid in database_functions)
    group = b.logical_id(b.stack.data.database_security_group)
    admitted = {
        json.dumps(r["SourceSecurityGroupId"])
        for r in of_type(b, "AWS::EC2::SecurityGroupIngress")
        if r.get("GroupId") == {"Fn::GetAtt": [group, "GroupId"]} and r.get("FromPort") == 5432
    }
    for cid in database_functions:
        sg = b.logical_id(b.stack.functions[cid].security_group)
        assert json.dumps({"Fn::GetAtt": [sg, "GroupId"]}) in admitted, cid


def test_a_flag_set_on_its_own_wins_over_the_preset(variant):
    b = variant(**FAMILY, **{"heirloom:auroraReaders": 1, "heirloom:rdsProxy": True})
    assert len(of_type(b, "AWS::RDS::DBInstance")) == 2
    assert len(of_type(b, "AWS::RDS::DBProxy")) == 1
    assert all(len(e["SubnetIds"]) == 1 for e in interface_endpoints(b))  # the rest of the preset


def test_an_unknown_preset_is_refused():
    with pytest.raises(ValueError, match="heirloom:preset 'cheap' is not one of family, production"):
        HeirloomConfig.from_context(App(context={"heirloom:preset": "cheap"}).node)


@pytest.mark.slow
def test_the_family_preset_passes_cdk_nag_and_cfn_lint(tmp_path):
    import yaml

    app, stack = build_app(outdir=str(tmp_path), nag=True, context=FAMILY)
    try:
        app.synth()
    except RuntimeError as exc:
        pytest.fail(f"cdk-nag: {exc}\n" + "\n".join(_findings(tmp_path / "validation-report.json")))
    config = yaml.safe_load(CFN_LINT_CONFIG.read_text())
    matches = lint_file(
        tmp_path / f"{stack.stack_name}.template.json",
        config=ManualArgs(ignore_checks=config["ignore_checks"], regions=["us-east-1", "us-west-2"]),
    )
    assert [str(m) for m in matches] == []


def test_the_deploy_guide_cost_table_is_computed_from_the_presets(built, variant):
    assert costs.SHAPES["production"] == {"heirloom:preset": "production"}
    templates = {n: built.json if n == "production" else variant(**c).json for n, c in costs.SHAPES.items()}
    table = costs.table(templates)
    assert table in (REPO_ROOT / "docs" / "deploy.md").read_text(), "run `python -m cdk.costs`:\n" + table
    floors = {
        n: sum(costs.idle_floor(t).values()) for n, t in (("p", built.json), ("f", variant(**FAMILY).json))
    }
    assert floors["f"] < floors["p"] / 2


def test_graph_none_deploys_no_neptune_and_answers_vector_only(variant):
    b = variant(**FAMILY, **{"heirloom:graph": "none"})
    assert of_type(b, "AWS::Neptune::DBCluster") == [] and of_type(b, "AWS::Neptune::DBInstance") == []
    for cid in ACCESS:
        env = db_env(b, cid)
        assert "NEPTUNE_ENDPOINT" not in env, cid
        assert env["GRAPH_AUGMENTATION_ENABLED"] == "false" and env["GRAPH_PROVIDER"] == "none", cid
        assert env["EXTRACTOR_PROVIDER"] == "none", cid
        function = b.stack.node.find_child(cid)
        statements = [
            s
            for r in b.resources.values()
            if r["Type"] == "AWS::IAM::Policy"
            and {"Ref": b.logical_id(function.role)} in r["Properties"]["Roles"]
            for s in r["Properties"]["PolicyDocument"]["Statement"]
        ]
        assert not any("neptune-db" in json.dumps(s["Action"]) for s in statements), cid
    # the settings the functions get are valid together (GRAPH_PROVIDER=none needs augmentation off)
    from heirloom.settings import settings_from_env

    env = {k: v for k, v in db_env(b, "StoryEvents").items() if isinstance(v, str)}
    assert settings_from_env(env).graph.provider == "none"
