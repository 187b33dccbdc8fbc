"""A trial's final model served through MLflow: what it accepts (`contract`), how bad input is refused
(`inputs`), what it answers (`predictor`), and the models-from-code file MLflow runs (`mlflow_code/`, a script MLflow
executes, not a module of this package). Logging it with a run is `rem.tracking.mlflow_model`'s job.

Nothing here imports MLflow: the predictor is plain torch and pandas, usable without a tracking store."""
