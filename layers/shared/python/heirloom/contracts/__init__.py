"""Pydantic models for every record, event and workflow edge."""
