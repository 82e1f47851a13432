pytest_plugins = ["tests.support.stack", "tests.support.sample"]
