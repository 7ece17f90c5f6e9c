"""gate: a local privacy gate between AI coding agents and their model providers."""

__version__ = "0.1.0"
