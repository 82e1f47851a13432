"""Parsing workflow and API inputs into their contracts, with a short reason on failure."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from heirloom.errors import InvalidRequest

M = TypeVar("M", bound=BaseModel)


def reason(exc: ValidationError, *, limit: int = 3, whole: str = "input") -> str:
    """'field.path: message' for the first few problems, without echoing input values (`whole`
    names a problem of the input as a whole). The one wording for API, events and datasets."""
    parts = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err["loc"]) or whole
        # our own validators' messages, without pydantic's "Value error, " prefix
        message = err["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


def parse(model: type[M], event: Any) -> M:
    try:
        return model.model_validate(event)
    except ValidationError as exc:
        raise InvalidRequest(reason(exc)) from exc
    except (AttributeError, TypeError, ValueError) as exc:
        # a `mode="before"` validator (Powertools' S3 and EventBridge models have some) that
        # assumed a shape the event does not have: the input is still what is wrong
        raise InvalidRequest(f"input: not a {model.__name__} ({type(exc).__name__})") from exc
