"""Pure logic: it takes models and ports and returns models."""
