"""Adapters behind the ports: AWS services in production, embedded engines locally."""
