"""The idle monthly floor of a synthesized template: what the always-on resources cost with no
traffic, counted from the template itself (so a preset's table follows its resources).

    python -m cdk.costs    # the markdown table of docs/deploy.md (Presets and costs)

us-east-1 on-demand list prices (November 2026), no free tier, 730 hours a month. Storage,
backups and pay-per-use services are not in the floor.
"""

from __future__ import annotations

import sys
from typing import Any

HOURS = 730
#: Aurora Serverless v2, per ACU-hour
AURORA_ACU_HOUR = 0.12
#: RDS Proxy in front of Aurora Serverless v2: per ACU-hour of the target, at least 8 ACUs
PROXY_ACU_HOUR = 0.015
PROXY_MIN_ACU = 8
#: Neptune Serverless, per NCU-hour
NEPTUNE_NCU_HOUR = 0.1608
#: interface VPC endpoint, per endpoint per AZ-hour
ENDPOINT_AZ_HOUR = 0.01
SECRET_MONTH = 0.40
ALARM_MONTH = 0.10
DASHBOARD_MONTH = 3.00


def _of_type(resources: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r.get("Properties", {}) for r in resources.values() if r["Type"] == kind]


def idle_floor(template: dict[str, Any]) -> dict[str, float]:
    """USD a month per always-on item of `template` (a synthesized CloudFormation template)."""
    resources: dict[str, Any] = template["Resources"]
    out: dict[str, float] = {}
    clusters = _of_type(resources, "AWS::RDS::DBCluster")
    instances = [
        i for i in _of_type(resources, "AWS::RDS::DBInstance") if i.get("DBInstanceClass") == "db.serverless"
    ]
    min_acu = max(
        (c.get("ServerlessV2ScalingConfiguration", {}).get("MinCapacity", 0) for c in clusters), default=0
    )
    out["Aurora Serverless v2"] = len(instances) * min_acu * AURORA_ACU_HOUR * HOURS
    if _of_type(resources, "AWS::RDS::DBProxy"):
        out["RDS Proxy"] = max(PROXY_MIN_ACU, len(instances) * min_acu) * PROXY_ACU_HOUR * HOURS
    graphs = _of_type(resources, "AWS::Neptune::DBCluster")
    if graphs:
        ncu = max(g.get("ServerlessScalingConfiguration", {}).get("MinCapacity", 0) for g in graphs)
        writers = len(_of_type(resources, "AWS::Neptune::DBInstance"))
        out["Neptune Serverless"] = writers * ncu * NEPTUNE_NCU_HOUR * HOURS
    endpoints = [
        e for e in _of_type(resources, "AWS::EC2::VPCEndpoint") if e.get("VpcEndpointType") == "Interface"
    ]
    out["Interface VPC endpoints"] = (
        sum(len(e.get("SubnetIds", [])) for e in endpoints) * ENDPOINT_AZ_HOUR * HOURS
    )
    out["Secrets, alarms, dashboard"] = (
        len(_of_type(resources, "AWS::SecretsManager::Secret")) * SECRET_MONTH
        + len(_of_type(resources, "AWS::CloudWatch::Alarm")) * ALARM_MONTH
        + len(_of_type(resources, "AWS::CloudWatch::Dashboard")) * DASHBOARD_MONTH
    )
    return {k: round(v, 2) for k, v in out.items()}


def describe(template: dict[str, Any]) -> dict[str, str]:
    """What each item of `idle_floor` counted, in words."""
    resources: dict[str, Any] = template["Resources"]
    clusters = _of_type(resources, "AWS::RDS::DBCluster")
    instances = [
        i for i in _of_type(resources, "AWS::RDS::DBInstance") if i.get("DBInstanceClass") == "db.serverless"
    ]
    scaling = clusters[0].get("ServerlessV2ScalingConfiguration", {}) if clusters else {}
    endpoints = [
        e for e in _of_type(resources, "AWS::EC2::VPCEndpoint") if e.get("VpcEndpointType") == "Interface"
    ]
    azs = sorted({len(e.get("SubnetIds", [])) for e in endpoints})
    pause = scaling.get("SecondsUntilAutoPause")
    out = {
        "Aurora Serverless v2": f"{len(instances)} instance(s) at the {scaling.get('MinCapacity')} ACU minimum"
        + (f", paused after {pause // 60} idle minutes" if pause else ""),
        "Interface VPC endpoints": f"{len(endpoints)} endpoints x {'/'.join(map(str, azs))} AZ",
        "Secrets, alarms, dashboard": (
            f"{len(_of_type(resources, 'AWS::SecretsManager::Secret'))} secret, "
            f"{len(_of_type(resources, 'AWS::CloudWatch::Alarm'))} alarms, "
            f"{len(_of_type(resources, 'AWS::CloudWatch::Dashboard'))} dashboard"
        ),
    }
    if _of_type(resources, "AWS::RDS::DBProxy"):
        out["RDS Proxy"] = f"minimum {PROXY_MIN_ACU} ACU billed"
    graphs = _of_type(resources, "AWS::Neptune::DBCluster")
    if graphs:
        out["Neptune Serverless"] = (
            f"{len(_of_type(resources, 'AWS::Neptune::DBInstance'))} writer at the "
            f"{graphs[0].get('ServerlessScalingConfiguration', {}).get('MinCapacity')} NCU minimum"
        )
    return out


def table(templates: dict[str, dict[str, Any]]) -> str:
    """Markdown: one column per preset, one row per item, and the total."""
    floors = {name: idle_floor(t) for name, t in templates.items()}
    words = {name: describe(t) for name, t in templates.items()}
    items = list(dict.fromkeys(k for f in floors.values() for k in f))
    names = list(templates)
    lines = [
        "| item | " + " | ".join(f"`{n}`" for n in names) + " |",
        "| --- | " + " | ".join("---:" for _ in names) + " |",
    ]
    for item in items:
        cells = [
            f"{floors[n][item]:.2f} ({words[n].get(item, '')})" if item in floors[n] else "-" for n in names
        ]
        lines.append(f"| {item} | " + " | ".join(cells) + " |")
    lines.append(
        "| **total per month** | " + " | ".join(f"**{sum(floors[n].values()):.2f}**" for n in names) + " |"
    )
    return "\n".join(lines) + "\n"


#: the shapes docs/deploy.md prices: column name -> CDK context
SHAPES: dict[str, dict[str, str]] = {
    "production": {"heirloom:preset": "production"},
    "family": {"heirloom:preset": "family"},
    "family, graph=none": {"heirloom:preset": "family", "heirloom:graph": "none"},
}


def preset_templates() -> dict[str, dict[str, Any]]:
    """The synthesized template of each shape (cdk-nag off: this only counts resources)."""
    import tempfile

    from cdk.app import build_app

    out = {}
    for name, context in SHAPES.items():
        with tempfile.TemporaryDirectory() as outdir:
            app, stack = build_app(outdir=outdir, nag=False, context=context)
            out[name] = app.synth().get_stack_by_name(stack.stack_name).template
    return out


def main() -> int:
    sys.stdout.write(table(preset_templates()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
