"""Story events (EventBridge bus, source `heirloom.stories`) -> StoryEvents; S3 ObjectCreated under
`imports/` -> IngestObject; the backfill schedule -> the backfill workflow when it exists."""

from __future__ import annotations

import json
from typing import cast

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3n
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from cdk.config import IMPORT_PREFIX, HeirloomConfig
from cdk.functions import DeployedFunction
from heirloom.settings import WorkflowSettings

#: the `source` of story events (the StoryEvents handler checks the same default)
STORY_EVENT_SOURCE = WorkflowSettings().event_source


class Events(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        story_events: DeployedFunction | None,
        ingest_object: DeployedFunction | None,
        import_bucket: s3.Bucket,
        backfill: sfn.StateMachine | None,
        config: HeirloomConfig,
        communities: sfn.StateMachine | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.bus = events.EventBus(self, "Bus", description="Heirloom story events")
        pattern = events.EventPattern(source=[STORY_EVENT_SOURCE])
        # a replayable record of every story event (EventBridge console: Archives -> Replay)
        self.bus.archive("Archive", event_pattern=pattern, retention=Duration.days(90))
        self.story_rule: events.Rule | None = None
        if story_events is not None:
            self.story_rule = events.Rule(
                self,
                "StoryEventsRule",
                event_bus=self.bus,
                event_pattern=pattern,
                description="Story events -> StoryEvents",
                targets=[
                    targets.LambdaFunction(
                        story_events.function,
                        dead_letter_queue=_queue(story_events),
                        retry_attempts=8,
                        max_event_age=Duration.hours(24),
                    )
                ],
            )
        if ingest_object is not None:
            import_bucket.add_event_notification(
                s3.EventType.OBJECT_CREATED,
                s3n.LambdaDestination(ingest_object.function),
                s3.NotificationKeyFilter(prefix=IMPORT_PREFIX),
            )
        self.backfill_rule: events.Rule | None = None
        if backfill is not None:
            self.backfill_rule = events.Rule(
                self,
                "BackfillSchedule",
                schedule=events.Schedule.expression(config.backfill_schedule),
                description="Nightly backfill workflow",
                targets=[targets.SfnStateMachine(backfill, retry_attempts=2)],
            )
            # RuleTargetInput.from_object drops nulls, and the ASL reads $.next.after: set it raw
            rule = cast(events.CfnRule, self.backfill_rule.node.default_child)
            rule.add_property_override("Targets.0.Input", json.dumps(backfill_input(config)))
        self.communities_rule = communities_rule(self, communities, config) if communities else None


def communities_rule(scope: Construct, workflow: sfn.StateMachine, config: HeirloomConfig) -> events.Rule:
    """The communities workflow on its schedule, for every legacy, by recorded impact."""
    rule = events.Rule(
        scope,
        "CommunitiesSchedule",
        schedule=events.Schedule.expression(config.communities_schedule),
        description="Community rebuilds where the recorded graph impact crossed a threshold",
        targets=[targets.SfnStateMachine(workflow, retry_attempts=2)],
    )
    cfn = cast(events.CfnRule, rule.node.default_child)
    cfn.add_property_override("Targets.0.Input", json.dumps({"legacy_ids": [], "force": None}))
    return rule


def backfill_input(config: HeirloomConfig) -> dict[str, object]:
    """The backfill workflow's input (as `heirloom backfill` builds it): start from the first page."""
    return {
        "next": {
            "after": None,
            "page_size": config.backfill_page_size,
            "stories_per_execution": config.backfill_stories_per_execution,
        },
        "pace_seconds": config.backfill_pace_seconds,
    }


def _queue(deployed: DeployedFunction) -> sqs.IQueue:
    assert deployed.dead_letters is not None, f"{deployed.construct_id} must be asynchronous in access.py"
    return deployed.dead_letters
