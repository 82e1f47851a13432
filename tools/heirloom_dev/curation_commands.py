"""Curation commands: community rebuilds by recorded impact, summaries, merge suggestions; and
the curation part of `heirloom demo`."""

from __future__ import annotations

import argparse
from typing import Any
from uuid import UUID

from heirloom_dev.cli_common import _use_local_stack


def _ports(runtime: Any) -> Any:
    from heirloom.adapters import factory
    from heirloom.domain.community_rebuild import CommunityPorts

    return CommunityPorts(runtime.graph, runtime.ports.stories, factory.build_curation_store(runtime.db))


def rebuild_all(runtime: Any, legacy_ids: list[UUID], force: str | None = None) -> list[Any]:
    """Each legacy's communities rebuilt as its impact calls for (or `force`)."""
    from heirloom.domain.community_rebuild import rebuild_legacy

    ports = _ports(runtime)
    settings = runtime.settings.curation
    return [
        rebuild_legacy(
            ports,
            legacy_id,
            partial=settings.partial_threshold,
            full=settings.full_threshold,
            force=force,  # type: ignore[arg-type]
        )
        for legacy_id in legacy_ids
    ]


def _cmd_rebuild(args: argparse.Namespace) -> int:
    from heirloom_dev.runtime import list_legacy_ids

    runtime = _use_local_stack(write=True, repair=False)
    ids = [UUID(args.legacy)] if args.legacy else list_legacy_ids(runtime.db)
    for report in rebuild_all(runtime, ids, args.force):
        built = ", ".join(f"{tier} {n}" for tier, n in report.communities.items()) or "nothing built"
        print(f"{report.legacy_id}: impact {report.impact} -> {report.kind} ({built})")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    runtime = _use_local_stack(write=False)
    for c in _ports(runtime).curation.communities(UUID(args.legacy), args.tier):
        print(f"[{c.number}] {c.summary} ({len(c.story_ids)} stories)")
    return 0


def top_suggestion(runtime: Any, legacy_id: UUID, user_id: UUID) -> Any:
    """The best merge suggestion `user_id` may see (their read scope decides the evidence)."""
    from heirloom.domain.curation_api import CurationPorts, suggestions_for

    ports = CurationPorts(runtime.graph, runtime.ports.stories, _ports(runtime).curation)
    return next(iter(suggestions_for(ports, legacy_id, user_id, limit=1)), None)


def demo_curation(runtime: Any, legacy_id: UUID, user_id: UUID) -> None:
    """What `heirloom demo` shows of curation: one merge suggestion, one community summary."""
    for report in rebuild_all(runtime, [legacy_id]):
        if report.kind == "none":
            print(f"\ncommunities: impact {report.impact}, below the thresholds: kept as last built")
        else:
            built = ", ".join(f"{tier} {n}" for tier, n in report.communities.items())
            print(f"\ncommunities: impact {report.impact} -> {report.kind} rebuild ({built})")
    suggestion = top_suggestion(runtime, legacy_id, user_id)
    if suggestion is not None:
        print(f"merge suggestion: {suggestion.a.label} {suggestion.a.name!r} <- {suggestion.b.name!r}")
        print(f"    score {suggestion.score}; " + "; ".join(suggestion.evidence))
    found = _ports(runtime).curation.communities(legacy_id, "private")
    if found:
        best = max(found, key=lambda c: (len(c.story_ids), -c.number))
        print(f"community summary: {best.summary} ({len(best.story_ids)} stories)")


def creator_of(runtime: Any, legacy_id: UUID) -> UUID | None:
    row = (
        runtime.db.connection()
        .execute(
            "SELECT user_id FROM legacy_members WHERE legacy_id = %s AND role = 'creator' LIMIT 1",
            (legacy_id,),
        )
        .fetchone()
    )
    return row["user_id"] if row else None


def circles_section(context: str) -> str:
    """The community section of a formatted context, indented for the terminal."""
    from heirloom.domain.format import COMMUNITIES_HEADER

    if COMMUNITIES_HEADER not in context:
        return ""
    section = context.split(COMMUNITIES_HEADER, 1)[1].split("\n## ", 1)[0].strip()
    return "\n".join("    " + line for line in [COMMUNITIES_HEADER, *section.splitlines()])


def add_commands(sub: Any) -> None:
    """This module's subcommands, on the `heirloom` parser's subparsers."""
    com = sub.add_parser("communities", help="community detection and summaries over each legacy's graph")
    csub = com.add_subparsers(dest="action", required=True)
    rebuild = csub.add_parser("rebuild", help="rebuild communities where the recorded impact calls for it")
    rebuild.add_argument("--legacy", help="one legacy id (default: every legacy)")
    rebuild.add_argument("--force", choices=["partial", "full"], help="rebuild whatever the impact")
    rebuild.set_defaults(func=_cmd_rebuild)
    show = csub.add_parser("show", help="a legacy's community summaries")
    show.add_argument("--legacy", required=True)
    show.add_argument("--tier", choices=["public", "private"], default="private")
    show.set_defaults(func=_cmd_show)
