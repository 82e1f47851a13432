"""Local tooling: the embedded stack, the CLI and in-process dispatch. Not shipped to Lambda."""
