"""Heirloom's AWS infrastructure (CDK v2, Python). Entry point: `python -m cdk.app` from the repo root."""
