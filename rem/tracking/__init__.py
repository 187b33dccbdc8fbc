"""Everything MLflow: a trial's runs and tags (`runs`), what a trial logs (`trial_log`), the results table read back
from MLflow (`results`), the model store (`model_store`), the Pareto query (`pareto`) and the runs view (`ui`); a
trial's model as an MLflow Model (`mlflow_model`, served by `serving`), the trial a trade-off rule picks
(`trade_off`) and its place in the model registry (`model_registry`).
MLflow itself is imported inside the functions that need it, so the library imports without it."""
