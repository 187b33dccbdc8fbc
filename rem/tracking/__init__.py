"""Everything MLflow: runs and what a trial logs, the results table read back, the model store, MLflow Models and
their registry and serving. MLflow is imported inside the functions that need it, so the library imports without it."""
