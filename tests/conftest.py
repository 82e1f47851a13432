import os

from hypothesis import settings

pytest_plugins = ["tests.support.stack", "tests.support.sample"]

#: HEIRLOOM_LONG=1: the property and bad-input tests (tests/support/fuzz.py) run their long
#: example counts, and every other hypothesis test that sets none runs 1000 examples
settings.register_profile("long", max_examples=1000, deadline=None, print_blob=True)
if os.environ.get("HEIRLOOM_LONG") == "1":
    settings.load_profile("long")


def pytest_xdist_make_scheduler(config, log):
    """Under `--dist loadfile` (make test), the infrastructure tier's files go to one worker as
    one unit: they share the synthesized stack and its variants (session fixtures, ~10 s and a
    jsii node process each), which a second worker would build again. None: xdist's default."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class InfrastructureTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith("tests/infrastructure/"):
                return "tests/infrastructure"
            return super()._split_scope(nodeid)

    return InfrastructureTogether(config, log)
