"""The `heirloom` command line: the local stack, loading, statistics."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from heirloom.errors import GraphUnavailable, HeirloomError
from heirloom.settings import SettingsError
from heirloom_dev import curation_commands, ops_commands, story_commands
from heirloom_dev.cli_common import EXIT_BAD_INPUT, EXIT_UNAVAILABLE


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="heirloom", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    story_commands.add_commands(sub)
    ops_commands.add_commands(sub)
    curation_commands.add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one command; the environment it sets for the handlers (Powertools defaults, the
    stack's URLs) is the command's: a caller in the same process, such as a test, gets its own
    back."""
    from heirloom_dev.functions import logs_to

    saved = dict(os.environ)
    try:
        with logs_to(sys.stderr):  # stdout holds the command's output alone (eval's table)
            return _run(argv)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _run(argv: Sequence[str] | None) -> int:
    import warnings

    warnings.filterwarnings("ignore", message="No application metrics to publish")
    os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "heirloom")
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "Heirloom")
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    # the handlers' structured logs and EMF lines are for CloudWatch; keep the terminal readable
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    args = build_parser().parse_args(argv)
    from heirloom_dev.stack import NotSetUp

    try:
        code: int = args.func(args)
    except SettingsError as exc:
        print(f"heirloom: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except GraphUnavailable as exc:  # `ask` answers without the graph; the others need it
        print(f"heirloom: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except NotSetUp as exc:
        print(f"heirloom {args.command}: {exc}", file=sys.stderr)
        return 1
    except HeirloomError as exc:  # a typed refusal (a model call denied, a bad record): one line
        print(f"heirloom {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
