"""REST API: POST /legacies/{legacy_id}/context, /legacies/{legacy_id}/stories/{story_id}/connections,
/legacies/{legacy_id}/enrichment and the curation routes (GET merge-suggestions, POST merges, POST
merges/{merge_id}/undo, POST keep-apart, GET/POST staging, GET staged, POST staged/{item_id}/approve
and /reject, GET changelog; GET/POST conversation-memory, GET conversations, POST
conversations/{conversation_id}/messages and /story, GET .../facts, DELETE
conversations/{conversation_id} and conversation-facts/{fact_id}) -> the Api function, behind a Cognito user pool
authorizer on every method and a request validator with a JSON schema for the body. The schema's
limits come from the contracts (heirloom.contracts.context), the same ones the handler enforces."""

from __future__ import annotations

from aws_cdk import Acknowledgment, Duration, RemovalPolicy, Validations
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from cdk.config import HeirloomConfig
from heirloom.contracts.connections import MAX_SURFACED
from heirloom.contracts.context import (
    AS_OF_PATTERN,
    MAX_HISTORY_CHARS,
    MAX_HISTORY_MESSAGES,
    MAX_QUERY_CHARS,
    MAX_TOKEN_BUDGET,
    MIN_TOKEN_BUDGET,
    Persona,
)

CONTEXT_PATH = "/legacies/{legacy_id}/context"
STAGE_NAME = "v1"
ADMIN_GROUP = "admin"
UUID_PATTERN = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"

S = apigw.JsonSchemaType


def _message() -> apigw.JsonSchema:
    return apigw.JsonSchema(
        type=S.OBJECT,
        required=["role", "content"],
        additional_properties=False,
        properties={
            "role": apigw.JsonSchema(type=S.STRING, enum=["user", "assistant"]),
            "content": apigw.JsonSchema(type=S.STRING, min_length=1, max_length=MAX_HISTORY_CHARS),
        },
    )


def _persona() -> apigw.JsonSchema:
    return apigw.JsonSchema(type=S.STRING, enum=[p.value for p in Persona])


def opening_body_schema() -> apigw.JsonSchema:
    """`OpeningBody`: POST /legacies/{legacy_id}/stories/{story_id}/connections."""
    return apigw.JsonSchema(
        schema=apigw.JsonSchemaVersion.DRAFT4,
        title="OpeningBody",
        type=S.OBJECT,
        additional_properties=False,
        properties={"persona": _persona()},
    )


def enrichment_body_schema() -> apigw.JsonSchema:
    """`EnrichmentBody`: POST /legacies/{legacy_id}/enrichment."""
    uuid = apigw.JsonSchema(type=S.STRING, pattern=UUID_PATTERN)
    return apigw.JsonSchema(
        schema=apigw.JsonSchemaVersion.DRAFT4,
        title="EnrichmentBody",
        type=S.OBJECT,
        required=["messages"],
        additional_properties=False,
        properties={
            "messages": apigw.JsonSchema(
                type=S.ARRAY, min_items=1, max_items=MAX_HISTORY_MESSAGES, items=_message()
            ),
            "persona": _persona(),
            "story_id": apigw.JsonSchema(type=[S.STRING, S.NULL], pattern=UUID_PATTERN),
            "surfaced_story_ids": apigw.JsonSchema(type=S.ARRAY, max_items=MAX_SURFACED, items=uuid),
        },
    )


def context_body_schema() -> apigw.JsonSchema:
    """JSON schema (draft 4) of the POST body: `ContextBody` in heirloom.domain.context_api."""
    message = _message()
    return apigw.JsonSchema(
        schema=apigw.JsonSchemaVersion.DRAFT4,
        title="ContextBody",
        type=S.OBJECT,
        required=["query", "persona"],
        additional_properties=False,
        properties={
            "query": apigw.JsonSchema(type=S.STRING, min_length=1, max_length=MAX_QUERY_CHARS),
            "persona": _persona(),
            "history": apigw.JsonSchema(type=S.ARRAY, max_items=MAX_HISTORY_MESSAGES, items=message),
            "linked_story_id": apigw.JsonSchema(type=[S.STRING, S.NULL], pattern=UUID_PATTERN),
            "token_budget": apigw.JsonSchema(
                type=S.INTEGER, minimum=MIN_TOKEN_BUDGET, maximum=MAX_TOKEN_BUDGET
            ),
            "elicitation": apigw.JsonSchema(type=S.BOOLEAN),
            "as_of": apigw.JsonSchema(type=[S.STRING, S.NULL], pattern=AS_OF_PATTERN),
        },
    )


class ContextApi(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        handler: lambda_.IFunction,
        config: HeirloomConfig,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        self.user_pool = cognito.UserPool(
            self,
            "Users",
            self_sign_up_enabled=False,
            sign_in_aliases=cognito.SignInAliases(email=True),
            mfa=cognito.Mfa.REQUIRED,
            mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),
            password_policy=cognito.PasswordPolicy(
                min_length=12,
                require_lowercase=True,
                require_uppercase=True,
                require_digits=True,
                require_symbols=True,
            ),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            feature_plan=cognito.FeaturePlan.ESSENTIALS,
            deletion_protection=config.deletion_protection,
            removal_policy=RemovalPolicy.RETAIN,
        )
        Validations.of(self.user_pool).acknowledge(
            Acknowledgment(
                id="AwsSolutions-COG8",
                reason="Essentials tier: MFA is required and sign-up is admin-only; the Plus tier's "
                "threat protection is billed per active user and can be switched on per "
                "environment without a redeploy of the API.",
            )
        )
        cognito.CfnUserPoolGroup(
            self,
            "AdminGroup",
            user_pool_id=self.user_pool.user_pool_id,
            group_name=ADMIN_GROUP,
            description="May request debug metadata (?debug=true)",
        )
        self.client = self.user_pool.add_client(
            "Client",
            auth_flows=cognito.AuthFlow(user_srp=True),
            generate_secret=False,
            prevent_user_existence_errors=True,
            id_token_validity=Duration.hours(1),
            access_token_validity=Duration.hours(1),
        )
        # operators: admin-initiated auth (cognito-idp:AdminInitiateAuth, an IAM-signed call), so
        # `heirloom smoke` can get a token from a terminal; MFA still applies (TOTP challenge)
        self.ops_client = self.user_pool.add_client(
            "OpsClient",
            auth_flows=cognito.AuthFlow(admin_user_password=True),
            generate_secret=False,
            prevent_user_existence_errors=True,
            id_token_validity=Duration.minutes(15),
            access_token_validity=Duration.minutes(15),
        )
        authorizer = apigw.CognitoUserPoolsAuthorizer(self, "Authorizer", cognito_user_pools=[self.user_pool])
        access_logs = logs.LogGroup(
            self, "AccessLogs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY
        )
        self.api = apigw.RestApi(
            self,
            "Api",
            description="Heirloom context API",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            cloud_watch_role=True,
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN,
            default_method_options=apigw.MethodOptions(
                authorizer=authorizer, authorization_type=apigw.AuthorizationType.COGNITO
            ),
            deploy_options=apigw.StageOptions(
                stage_name=STAGE_NAME,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True,
                    http_method=True,
                    ip=True,
                    protocol=True,
                    request_time=True,
                    resource_path=True,
                    response_length=True,
                    status=True,
                    user=True,
                ),
                logging_level=apigw.MethodLoggingLevel.INFO,
                # request and response bodies hold family stories: never log them
                data_trace_enabled=False,
                metrics_enabled=True,
                tracing_enabled=True,
                throttling_rate_limit=config.api_rate_limit,
                throttling_burst_limit=config.api_burst_limit,
            ),
        )
        self._acknowledge_api()
        validator = self.api.add_request_validator(
            "Validator", validate_request_body=True, validate_request_parameters=True
        )
        self.body_model = self.api.add_model(
            "ContextBodyModel",
            content_type="application/json",
            model_name="ContextBody",
            schema=context_body_schema(),
        )
        for response_type in (apigw.ResponseType.BAD_REQUEST_BODY, apigw.ResponseType.BAD_REQUEST_PARAMETERS):
            # same shape as the handler's typed 4xx bodies
            self.api.add_gateway_response(
                f"{response_type.response_type.title().replace('_', '')}Response",
                type=response_type,
                status_code="400",
                templates={
                    "application/json": '{"error": "InvalidRequest", "reason": "$context.error.validationErrorString"}'
                },
            )
        legacy = self.api.root.add_resource("legacies").add_resource("{legacy_id}")
        context = legacy.add_resource("context")
        context.add_method(
            "POST",
            apigw.LambdaIntegration(handler),
            request_validator=validator,
            request_models={"application/json": self.body_model},
            request_parameters={
                "method.request.path.legacy_id": True,
                "method.request.querystring.debug": False,
            },
        )
        # story evolution: opening connections of a story, enrichment before the summary
        for name, path, schema, params in (
            (
                "OpeningBody",
                ["stories", "{story_id}", "connections"],
                opening_body_schema(),
                ["legacy_id", "story_id"],
            ),
            ("EnrichmentBody", ["enrichment"], enrichment_body_schema(), ["legacy_id"]),
        ):
            resource = legacy
            for part in path:
                resource = resource.get_resource(part) or resource.add_resource(part)
            model = self.api.add_model(
                f"{name}Model", content_type="application/json", model_name=name, schema=schema
            )
            resource.add_method(
                "POST",
                apigw.LambdaIntegration(handler),
                request_validator=validator,
                request_models={"application/json": model},
                request_parameters={f"method.request.path.{p}": True for p in params},
            )

        self._curation_routes(legacy, handler, validator)
        self._conversation_routes(legacy, handler, validator)

    def _conversation_routes(
        self, legacy: apigw.Resource, handler: lambda_.IFunction, validator: apigw.RequestValidator
    ) -> None:
        """Conversation memory: the switch (GET/POST), a conversation's messages and the story
        made of them, the caller's conversations (GET), a conversation's facts (GET), deleting a
        conversation or one fact (DELETE); the handler checks the caller's role and the owner."""
        integration = apigw.LambdaIntegration(handler)
        params = {"method.request.path.legacy_id": True}
        memory = legacy.add_resource("conversation-memory")
        for method in ("GET", "POST"):
            memory.add_method(method, integration, request_validator=validator, request_parameters=params)
        conversations = legacy.add_resource("conversations")
        conversations.add_method("GET", integration, request_validator=validator, request_parameters=params)
        conversation = conversations.add_resource("{conversation_id}")
        with_conversation = {**params, "method.request.path.conversation_id": True}
        conversation.add_method(
            "DELETE", integration, request_validator=validator, request_parameters=with_conversation
        )
        for method, leaf in (("POST", "messages"), ("POST", "story"), ("GET", "facts")):
            conversation.add_resource(leaf).add_method(
                method, integration, request_validator=validator, request_parameters=with_conversation
            )
        legacy.add_resource("conversation-facts").add_resource("{fact_id}").add_method(
            "DELETE",
            integration,
            request_validator=validator,
            request_parameters={**params, "method.request.path.fact_id": True},
        )

    def _curation_routes(
        self, legacy: apigw.Resource, handler: lambda_.IFunction, validator: apigw.RequestValidator
    ) -> None:
        """Merge suggestions, merge, unmerge, keep apart; staging (the switch, staged items,
        approve, reject); the changelog (the handler checks the caller's role)."""
        integration = apigw.LambdaIntegration(handler)
        params = {"method.request.path.legacy_id": True}
        legacy.add_resource("merge-suggestions").add_method(
            "GET", integration, request_validator=validator, request_parameters=params
        )
        merges = legacy.add_resource("merges")
        merges.add_method("POST", integration, request_validator=validator, request_parameters=params)
        merges.add_resource("{merge_id}").add_resource("undo").add_method(
            "POST",
            integration,
            request_validator=validator,
            request_parameters={**params, "method.request.path.merge_id": True},
        )
        legacy.add_resource("keep-apart").add_method(
            "POST", integration, request_validator=validator, request_parameters=params
        )
        staging = legacy.add_resource("staging")
        for method in ("GET", "POST"):
            staging.add_method(method, integration, request_validator=validator, request_parameters=params)
        staged = legacy.add_resource("staged")
        staged.add_method("GET", integration, request_validator=validator, request_parameters=params)
        item = staged.add_resource("{item_id}")
        for decision in ("approve", "reject"):
            item.add_resource(decision).add_method(
                "POST",
                integration,
                request_validator=validator,
                request_parameters={**params, "method.request.path.item_id": True},
            )
        legacy.add_resource("changelog").add_method(
            "GET", integration, request_validator=validator, request_parameters=params
        )

    def _acknowledge_api(self) -> None:
        Validations.of(self.api).acknowledge(
            Acknowledgment(
                id="AwsSolutions-APIG3",
                reason="No WAF web ACL in this stack: every method needs a Cognito token, the stage "
                "is throttled and bodies are schema-validated; attach the account's WAF (Firewall "
                "Manager) per environment if required.",
            )
        )
        role = self.api.node.try_find_child("CloudWatchRole")
        if role is not None:
            Validations.of(role).acknowledge(
                Acknowledgment(
                    id="AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                    "AmazonAPIGatewayPushToCloudWatchLogs]",
                    reason="API Gateway's account-level logging role (one per account and region) "
                    "uses the AWS managed policy made for it; execution and access logging need it.",
                )
            )
