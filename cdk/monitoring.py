"""Alarms (to an SNS topic) and one dashboard: the context workflow's p95 latency and failures,
the graph breaker's open state, failed ingestion and backfill executions, dead-letter queues,
and the functions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cw
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from cdk.config import (
    BREAKER_OPEN_METRIC,
    INGESTION_FAILURES_METRIC,
    METRICS_NAMESPACE,
    POWERTOOLS_SERVICE,
    HeirloomConfig,
)
from cdk.functions import Functions
from cdk.naming import state_name

FIVE_MINUTES = Duration.minutes(5)


def _at_least(threshold: float) -> dict[str, Any]:
    """Alarm when one period reaches `threshold`; no data is no alarm."""
    return {
        "threshold": threshold,
        "comparison_operator": cw.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        "evaluation_periods": 1,
        "treat_missing_data": cw.TreatMissingData.NOT_BREACHING,
    }


def service_metric(name: str, statistic: str, period: Duration) -> cw.Metric:
    """A Powertools metric of the functions (namespace Heirloom, default `service` dimension)."""
    return cw.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": POWERTOOLS_SERVICE},
        statistic=statistic,
        period=period,
    )


def breaker_open_metric() -> cw.Metric:
    """1 when an assembled context saw the graph breaker open, else 0 (RankAssemble)."""
    return service_metric(BREAKER_OPEN_METRIC, "Maximum", Duration.minutes(1))


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        context_workflow: sfn.StateMachine,
        functions: Functions,
        config: HeirloomConfig,
        other_workflows: Mapping[str, sfn.StateMachine] | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.topic = sns.Topic(self, "Alarms", display_name="Heirloom alarms", enforce_ssl=True)
        action = cw_actions.SnsAction(self.topic)
        latency = context_workflow.metric_time(statistic="p95", period=FIVE_MINUTES)
        failed = context_workflow.metric_failed(statistic="Sum", period=FIVE_MINUTES)
        timed_out = context_workflow.metric_timed_out(statistic="Sum", period=FIVE_MINUTES)
        self.alarms: dict[str, cw.Alarm] = {
            "ContextLatencyP95": latency.create_alarm(
                self,
                "ContextLatencyP95",
                alarm_description=f"Context workflow p95 ExecutionTime above {config.context_p95_ms} ms",
                threshold=config.context_p95_ms,
                comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
                evaluation_periods=3,
                datapoints_to_alarm=2,
                treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
            ),
            "ContextFailures": cw.MathExpression(
                expression="failed + timedout",
                using_metrics={"failed": failed, "timedout": timed_out},
                label="Failed or timed-out executions",
                period=FIVE_MINUTES,
            ).create_alarm(
                self,
                "ContextFailures",
                alarm_description="Context workflow executions failed or timed out (typed 4xx "
                "errors fail executions too, hence a threshold above 1)",
                **_at_least(config.context_failures_per_5min),
            ),
            "GraphBreakerOpen": breaker_open_metric().create_alarm(
                self,
                "GraphBreakerOpen",
                alarm_description="The graph circuit breaker is open: answers are vector-only",
                **_at_least(1),
            ),
            "IngestionFailures": service_metric(INGESTION_FAILURES_METRIC, "Sum", FIVE_MINUTES).create_alarm(
                self,
                "IngestionFailures",
                alarm_description="Stories failed ingestion (recorded by IngestFailed; the next "
                "backfill retries them)",
                **_at_least(1),
            ),
        }
        for name, machine in sorted((other_workflows or {}).items()):
            # ingestion and backfill: any execution that fails, times out or is aborted
            alarm_id = f"{state_name(name)}ExecutionsFailed"
            self.alarms[alarm_id] = cw.MathExpression(
                expression="failed + timedout + aborted",
                using_metrics={
                    "failed": machine.metric_failed(statistic="Sum", period=FIVE_MINUTES),
                    "timedout": machine.metric_timed_out(statistic="Sum", period=FIVE_MINUTES),
                    "aborted": machine.metric_aborted(statistic="Sum", period=FIVE_MINUTES),
                },
                label="Failed, timed-out or aborted executions",
                period=FIVE_MINUTES,
            ).create_alarm(
                self,
                alarm_id,
                alarm_description=f"{state_name(name)} workflow executions failed, timed out or were aborted",
                **_at_least(1),
            )
        for deployed in functions.by_id.values():
            if deployed.dead_letters is not None:
                name = f"{deployed.construct_id}DeadLetters"
                self.alarms[name] = deployed.dead_letters.metric_approximate_number_of_messages_visible(
                    period=FIVE_MINUTES, statistic="Maximum"
                ).create_alarm(
                    self,
                    name,
                    alarm_description=f"{deployed.construct_id}: events failed all retries (dead-letter queue)",
                    **_at_least(1),
                )
        for alarm in self.alarms.values():
            alarm.add_alarm_action(action)
        self.dashboard = self._dashboard(context_workflow, functions, latency, config)

    def _dashboard(
        self, workflow: sfn.StateMachine, functions: Functions, latency: cw.Metric, config: HeirloomConfig
    ) -> cw.Dashboard:
        dashboard = cw.Dashboard(self, "Dashboard", default_interval=Duration.hours(3))
        fns = [d.function for d in functions.by_id.values()]
        dashboard.add_widgets(
            cw.GraphWidget(
                title="Context workflow latency (ms)",
                left=[
                    workflow.metric_time(statistic="p50", period=FIVE_MINUTES, label="p50"),
                    latency.with_(label="p95"),
                    workflow.metric_time(statistic="p99", period=FIVE_MINUTES, label="p99"),
                ],
                left_annotations=[cw.HorizontalAnnotation(value=config.context_p95_ms, label="p95 alarm")],
                width=12,
            ),
            cw.GraphWidget(
                title="Context workflow executions",
                left=[
                    workflow.metric_started(period=FIVE_MINUTES, label="started"),
                    workflow.metric_succeeded(period=FIVE_MINUTES, label="succeeded"),
                    workflow.metric_failed(period=FIVE_MINUTES, label="failed"),
                    workflow.metric_timed_out(period=FIVE_MINUTES, label="timed out"),
                ],
                width=12,
            ),
        )
        dashboard.add_widgets(
            cw.GraphWidget(
                title="Graph breaker open / ingestion failures",
                left=[breaker_open_metric()],
                right=[service_metric(INGESTION_FAILURES_METRIC, "Sum", FIVE_MINUTES)],
                width=8,
            ),
            cw.GraphWidget(
                title="Function errors",
                left=[f.metric_errors(period=FIVE_MINUTES, label=f.node.id) for f in fns],
                width=8,
            ),
            cw.GraphWidget(
                title="Function duration p95 (ms)",
                left=[f.metric_duration(statistic="p95", period=FIVE_MINUTES, label=f.node.id) for f in fns],
                width=8,
            ),
        )
        dashboard.add_widgets(
            cw.AlarmStatusWidget(title="Alarms", alarms=list(self.alarms.values()), width=24)
        )
        return dashboard
