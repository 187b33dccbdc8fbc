"""Size of the model artifact every trial logs to MLflow (`rem.tracking.model_store`, `model/model.pt`), per model on
Fashion-MNIST's input shape, and the time to read it back (weights-only) and rebuild the model. Prints Markdown.

    PYTHONPATH=. python benchmarks/model_package_size.py

The package holds the final weights and the pruner's masks (one bool per prunable weight): for a sweep of
N trials the artifact store grows by about N times the size below (`sweep.log_model: false` turns it off).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchmarks._common import environment_line, interleaved_medians, markdown_table
from rem.config import Config
from rem.io import load_plain
from rem.models import count_parameters, create_model, list_models
from rem.pruning import Pruner
from rem.tracking.model_store import model_from_package, model_package, save_package


def checkpoint_like(name: str, method: str = "rem") -> dict:
    """What `rem.training.loop.train` checkpoints, for a freshly built model pruned by `method` (REM's has masks)."""
    cfg = Config().with_overrides({"model.name": name, "prune.method": method}, "benchmark")
    model = create_model(name, in_shape=(1, 28, 28), num_classes=10)
    return {"model": model.state_dict(), "pruner": Pruner(model, cfg.prune).state_dict(),
            "best": {"model": None, "epoch": 0},
            "epoch": 1, "history": [], "config": cfg.to_dict()}, count_parameters(model)


def main() -> None:
    print(environment_line())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in list_models():
            state, params = checkpoint_like(name)
            path = save_package(model_package(state, (1, 28, 28), 10), Path(tmp) / f"{name}.pt")
            load = interleaved_medians({"load": lambda: model_from_package(load_plain(path))}, rounds=3)["load"]
            rows.append([name, f"{params:,}", f"{path.stat().st_size / 1e6:.1f}", f"{load:.2f}"])
    print(markdown_table(["model", "parameters", "model.pt (MB)", "load + rebuild (s)"], rows))


if __name__ == "__main__":
    main()
