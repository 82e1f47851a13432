"""Stateful resources: Aurora PostgreSQL Serverless v2 behind RDS Proxy (or not: `rds_proxy`;
the permission source of truth and the pgvector chunk index), Neptune Serverless with IAM auth (the graph), the DynamoDB
tables (breaker, idempotency) and the S3 import bucket."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Validations
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_neptune as neptune
from aws_cdk import aws_rds as rds
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from cdk.config import DATABASE_NAME, DATABASE_USER, DB_STATEMENT_TIMEOUT_MS, NEPTUNE_PORT, HeirloomConfig
from cdk.network import Network

AURORA_VERSION = rds.AuroraPostgresEngineVersion.VER_17_5
NEPTUNE_ENGINE_VERSION = "1.4.5.1"
NEPTUNE_PARAMETER_FAMILY = "neptune1.4"
BREAKER_TTL_ATTRIBUTE = "expires_at"
IDEMPOTENCY_TTL_ATTRIBUTE = "expiration"


class Data(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, network: Network, config: HeirloomConfig
    ) -> None:
        super().__init__(scope, construct_id)
        self._aurora(network, config)
        self.graph: neptune.CfnDBCluster | None = None
        if config.graph == "neptune":
            self._neptune(network, config)
        self._tables()
        self._buckets()

    # -- PostgreSQL -------------------------------------------------------------------------------
    def _aurora(self, network: Network, config: HeirloomConfig) -> None:
        vpc = network.vpc
        self.database_security_group = ec2.SecurityGroup(
            self, "AuroraSecurityGroup", vpc=vpc, description="Aurora PostgreSQL: proxy and migrations only"
        )
        parameters = rds.ParameterGroup(
            self,
            "AuroraParameters",
            engine=rds.DatabaseClusterEngine.aurora_postgres(version=AURORA_VERSION),
            description="Heirloom Aurora PostgreSQL: TLS only",
            parameters={"rds.force_ssl": "1"},
        )
        readers = [
            rds.ClusterInstance.serverless_v2(f"Reader{i + 1}", scale_with_writer=True)
            for i in range(config.aurora_readers)
        ]
        self.cluster = rds.DatabaseCluster(
            self,
            "Aurora",
            engine=rds.DatabaseClusterEngine.aurora_postgres(version=AURORA_VERSION),
            credentials=rds.Credentials.from_generated_secret(DATABASE_USER),
            default_database_name=DATABASE_NAME,
            writer=rds.ClusterInstance.serverless_v2("Writer"),
            readers=readers,
            serverless_v2_min_capacity=config.aurora_min_acu,
            serverless_v2_max_capacity=config.aurora_max_acu,
            # at 0 ACU the cluster pauses when idle; the first connection then waits for it
            serverless_v2_auto_pause_duration=(
                Duration.minutes(config.aurora_auto_pause_minutes) if config.aurora_min_acu == 0 else None
            ),
            parameter_group=parameters,
            vpc=vpc,
            vpc_subnets=network.subnets,
            security_groups=[self.database_security_group],
            storage_encrypted=True,
            iam_authentication=True,
            deletion_protection=config.deletion_protection,
            backup=rds.BackupProps(retention=Duration.days(7)),
            cloudwatch_logs_exports=["postgresql"],
            removal_policy=RemovalPolicy.SNAPSHOT,
        )
        Validations.of(self.cluster).acknowledge(
            Acknowledgment(
                id="AwsSolutions-RDS11",
                reason="The default port is kept on purpose: the cluster is in isolated subnets and "
                "its security group admits only the RDS Proxy and the migration function; a "
                "non-standard port adds no protection.",
            )
        )
        assert self.cluster.secret is not None
        self.secret: secretsmanager.ISecret = self.cluster.secret
        self.secret.add_rotation_schedule(
            "Rotation",
            hosted_rotation=secretsmanager.HostedRotation.postgre_sql_single_user(
                vpc=vpc,
                vpc_subnets=network.subnets,
                security_groups=[self._rotation_security_group(network)],
            ),
            automatically_after=Duration.days(30),
        )
        self.proxy: rds.DatabaseProxy | None = None
        if not config.rds_proxy:
            # the functions connect to the writer endpoint: they are admitted by the cluster's group
            self.client_security_group = self.database_security_group
            self.database_host = self.cluster.cluster_endpoint.hostname
            return
        self.proxy_security_group = ec2.SecurityGroup(
            self, "ProxySecurityGroup", vpc=vpc, description="RDS Proxy: from database functions only"
        )
        self.client_security_group = self.proxy_security_group
        self.proxy = self.cluster.add_proxy(
            "Proxy",
            secrets=[self.secret],
            vpc=vpc,
            vpc_subnets=network.subnets,
            security_groups=[self.proxy_security_group],
            require_tls=True,
            borrow_timeout=Duration.seconds(5),
            idle_client_timeout=Duration.minutes(15),
            # the functions keep no session state (a SET would pin their proxy connections): the
            # proxy sets the statement timeout on each database connection it opens
            init_query=f"SET statement_timeout = {DB_STATEMENT_TIMEOUT_MS}",
        )
        self.cluster.connections.allow_default_port_from(self.proxy_security_group, "RDS Proxy")
        self.database_host = self.proxy.endpoint

    def _rotation_security_group(self, network: Network) -> ec2.SecurityGroup:
        group = ec2.SecurityGroup(
            self,
            "RotationSecurityGroup",
            vpc=network.vpc,
            description="Secret rotation function: PostgreSQL and the Secrets Manager endpoint",
        )
        self.database_security_group.add_ingress_rule(group, ec2.Port.tcp(5432), "secret rotation")
        return group

    # -- Neptune ----------------------------------------------------------------------------------
    def _neptune(self, network: Network, config: HeirloomConfig) -> None:
        self.graph_security_group = ec2.SecurityGroup(
            self, "NeptuneSecurityGroup", vpc=network.vpc, description="Neptune: from graph functions only"
        )
        subnets = neptune.CfnDBSubnetGroup(
            self,
            "NeptuneSubnets",
            db_subnet_group_description="Heirloom Neptune: isolated subnets",
            subnet_ids=network.vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED).subnet_ids,
        )
        parameters = neptune.CfnDBClusterParameterGroup(
            self,
            "NeptuneParameters",
            family=NEPTUNE_PARAMETER_FAMILY,
            description="Heirloom Neptune: audit log on",
            parameters={"neptune_enable_audit_log": 1},
        )
        self.graph = neptune.CfnDBCluster(
            self,
            "Neptune",
            engine_version=NEPTUNE_ENGINE_VERSION,
            iam_auth_enabled=True,
            storage_encrypted=True,
            deletion_protection=config.deletion_protection,
            backup_retention_period=7,
            copy_tags_to_snapshot=True,
            db_subnet_group_name=subnets.ref,
            db_cluster_parameter_group_name=parameters.ref,
            vpc_security_group_ids=[self.graph_security_group.security_group_id],
            enable_cloudwatch_logs_exports=["audit"],
            db_port=NEPTUNE_PORT,
            serverless_scaling_configuration=neptune.CfnDBCluster.ServerlessScalingConfigurationProperty(
                min_capacity=config.neptune_min_ncu, max_capacity=config.neptune_max_ncu
            ),
        )
        self.graph.apply_removal_policy(RemovalPolicy.SNAPSHOT)
        neptune.CfnDBInstance(
            self,
            "NeptuneWriter",
            db_instance_class="db.serverless",
            db_cluster_identifier=self.graph.ref,
            auto_minor_version_upgrade=True,
        )

    # -- DynamoDB ---------------------------------------------------------------------------------
    def _table(self, construct_id: str, key: str, ttl: str) -> dynamodb.Table:
        # Both tables hold short-lived state (breaker records, idempotency keys): DESTROY is safe.
        return dynamodb.Table(
            self,
            construct_id,
            partition_key=dynamodb.Attribute(name=key, type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=ttl,
            removal_policy=RemovalPolicy.DESTROY,
        )

    def _tables(self) -> None:
        self.breaker_table = self._table("BreakerTable", "pk", BREAKER_TTL_ATTRIBUTE)
        self.idempotency_table = self._table("IdempotencyTable", "id", IDEMPOTENCY_TTL_ATTRIBUTE)

    # -- S3 ---------------------------------------------------------------------------------------
    def _buckets(self) -> None:
        self.access_logs_bucket = s3.Bucket(
            self,
            "AccessLogsBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            minimum_tls_version=1.2,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(365))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        Validations.of(self.access_logs_bucket).acknowledge(
            Acknowledgment(
                id="AwsSolutions-S1",
                reason="This is the server access log bucket of the import bucket; logging its own "
                "access would log into itself.",
            )
        )
        self.import_bucket = s3.Bucket(
            self,
            "ImportBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            minimum_tls_version=1.2,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=True,
            server_access_logs_bucket=self.access_logs_bucket,
            server_access_logs_prefix="import-bucket/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    noncurrent_version_expiration=Duration.days(90),
                    abort_incomplete_multipart_upload_after=Duration.days(7),
                )
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
