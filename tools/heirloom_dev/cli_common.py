"""What every command shares: exit codes and the local stack a command runs on."""

from __future__ import annotations

import os
from typing import Any

from heirloom.settings import get_settings

EXIT_BAD_INPUT = 2
#: a store a command cannot do without (the graph for load, stats, backfill) did not answer
EXIT_UNAVAILABLE = 3


def _use_local_stack(*, write: bool, repair: bool | None = None, env: dict[str, str] | None = None) -> Any:
    """Point the handlers' settings at the embedded stack (env vars, as Lambda would get them).
    Without `write`, their PostgreSQL sessions refuse writes; see `open_runtime` for `repair`."""

    from heirloom.services import default_services
    from heirloom_dev.runtime import open_runtime

    os.environ.update(env or {})
    get_settings.cache_clear()
    runtime = open_runtime(write=write, repair=repair)
    os.environ["DATABASE_URL"] = runtime.settings.database.url
    os.environ["FALKOR_SOCKET"] = runtime.settings.graph.falkor_socket
    get_settings.cache_clear()
    default_services.cache_clear()
    return runtime
