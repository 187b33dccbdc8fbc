"""REM: capsule networks, routing, pruning and parse-tree metrics (importable without the pipeline)."""

__version__ = "0.1.0"
