"""REM: capsule networks, routing, pruning and parse-tree metrics (importable without the pipeline)."""

__version__ = "0.1.0"


def load_model(run_id: str, tracking_uri: str | None = None):
    """A trial's final model from its MLflow run, in eval mode on the CPU (see `rem.tracking.model_store`)."""
    from rem.tracking.model_store import load_model as load

    return load(run_id, tracking_uri)
