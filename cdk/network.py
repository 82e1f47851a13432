"""VPC with private isolated subnets only (no NAT, no internet gateway): AWS APIs are reached
through VPC endpoints, so nothing in the VPC can talk to the internet."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from cdk.config import HeirloomConfig

#: interface endpoints (private DNS) the functions need from isolated subnets
INTERFACE_ENDPOINTS: dict[str, ec2.InterfaceVpcEndpointAwsService] = {
    "BedrockRuntime": ec2.InterfaceVpcEndpointAwsService.BEDROCK_RUNTIME,
    "SecretsManager": ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER,
    "StepFunctions": ec2.InterfaceVpcEndpointAwsService.STEP_FUNCTIONS,
    # StartSyncExecution (the Api's context call) goes to sync-states, another host
    "StepFunctionsSync": ec2.InterfaceVpcEndpointAwsService.STEP_FUNCTIONS_SYNC,
    "Logs": ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_LOGS,
}
#: a literal (not the VPC's CIDR attribute) so security-group rules stay checkable at synth
VPC_CIDR = "10.40.0.0/16"
GATEWAY_ENDPOINTS: dict[str, ec2.GatewayVpcEndpointAwsService] = {
    "S3": ec2.GatewayVpcEndpointAwsService.S3,
    "DynamoDb": ec2.GatewayVpcEndpointAwsService.DYNAMODB,
}


class Network(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        log_retention: logs.RetentionDays,
        config: HeirloomConfig | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        config = config or HeirloomConfig()
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(VPC_CIDR),
            max_azs=2,
            nat_gateways=0,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="isolated", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=22
                )
            ],
            gateway_endpoints={
                name: ec2.GatewayVpcEndpointOptions(service=service)
                for name, service in GATEWAY_ENDPOINTS.items()
            },
        )
        self.subnets = ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)
        flow_logs = logs.LogGroup(
            self, "FlowLogs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY
        )
        self.vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs),
            traffic_type=ec2.FlowLogTrafficType.ALL,
        )
        self.endpoint_security_group = ec2.SecurityGroup(
            self,
            "EndpointSecurityGroup",
            vpc=self.vpc,
            description="Interface VPC endpoints: HTTPS from inside the VPC only",
            allow_all_outbound=False,
        )
        self.endpoint_security_group.add_ingress_rule(
            ec2.Peer.ipv4(VPC_CIDR), ec2.Port.tcp(443), "HTTPS from the VPC"
        )
        # one AZ: an endpoint is billed per AZ; functions in the other AZ reach it across AZs
        endpoint_subnets = (
            ec2.SubnetSelection(subnets=[self.vpc.isolated_subnets[0]])
            if config.single_az_endpoints
            else self.subnets
        )
        self.endpoints = {
            name: self.vpc.add_interface_endpoint(
                name,
                service=service,
                private_dns_enabled=True,
                subnets=endpoint_subnets,
                security_groups=[self.endpoint_security_group],
                open=False,
            )
            for name, service in INTERFACE_ENDPOINTS.items()
            if name != "Logs" or config.logs_endpoint
        }
