"""A trial's final model served through MLflow: what it accepts (`contract`), refuses (`inputs`) and answers
(`predictor`); nothing here but `mlflow_code/` (a script MLflow runs) imports MLflow."""
