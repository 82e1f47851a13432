"""Parsing workflow and API inputs into their contracts, with a short reason on failure."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from heirloom.errors import InvalidRequest

M = TypeVar("M", bound=BaseModel)


def reason(exc: ValidationError) -> str:
    """'field.path: message' for the first few problems, without echoing input values."""
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err["loc"]) or "input"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def parse(model: type[M], event: Any) -> M:
    try:
        return model.model_validate(event)
    except ValidationError as exc:
        raise InvalidRequest(reason(exc)) from exc
