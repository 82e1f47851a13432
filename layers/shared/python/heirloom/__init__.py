"""Heirloom: graph-augmented context assembly for memorial AI personas."""

__version__ = "0.1.0"
