pytest_plugins = ["tests.support.stack"]
