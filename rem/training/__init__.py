"""Training one trial: the epoch loop (`loop.train`), its shared state (`run.TrainingRun`) and its checkpoints."""
