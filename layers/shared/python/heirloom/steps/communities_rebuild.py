"""CommunitiesRebuild: each legacy's communities rebuilt where its recorded impact crosses the
thresholds (COMMUNITY_PARTIAL_THRESHOLD / COMMUNITY_FULL_THRESHOLD), or as `force` says; run by
the scheduled communities workflow and `heirloom communities rebuild`."""

from __future__ import annotations

from heirloom.contracts.curation import CommunitiesRebuildInput, CommunitiesRebuildOutput, LegacyRebuild
from heirloom.domain.community_rebuild import CommunityPorts, rebuild_legacy
from heirloom.services import Services


def run(data: CommunitiesRebuildInput, services: Services) -> CommunitiesRebuildOutput:
    ports = CommunityPorts(graph=services.graph, records=services.stories, curation=services.curation)
    settings = services.settings.curation
    rebuilt = []
    for legacy_id in data.legacy_ids or tuple(services.stories.legacy_ids()):
        report = rebuild_legacy(
            ports,
            legacy_id,
            partial=settings.partial_threshold,
            full=settings.full_threshold,
            force=data.force,
        )
        rebuilt.append(
            LegacyRebuild(
                legacy_id=legacy_id,
                kind=report.kind,
                impact=report.impact,
                communities=report.communities,
                kept_components=report.kept_components,
            )
        )
    return CommunitiesRebuildOutput(rebuilt=tuple(rebuilt))
