import os

from hypothesis import settings

pytest_plugins = ["tests.support.stack", "tests.support.sample"]

#: HEIRLOOM_LONG=1: the property and bad-input tests (tests/support/fuzz.py) run their long
#: example counts, and every other hypothesis test that sets none runs 1000 examples
settings.register_profile("long", max_examples=1000, deadline=None, print_blob=True)
if os.environ.get("HEIRLOOM_LONG") == "1":
    settings.load_profile("long")
