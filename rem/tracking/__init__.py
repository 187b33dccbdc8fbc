"""Everything MLflow: a trial's runs and tags (`runs`), what a trial logs (`trial_log`), the results table read back
from MLflow (`results`), the model store (`model_store`), the Pareto query (`pareto`) and the runs view (`ui`); a
trial's model as an MLflow Model (`mlflow_model`, served by `serving`), the trial a trade-off rule picks
(`trade_off`) and its place in the model registry (`model_registry`); where a one-model analysis finds its model
(`model_sources`), the analyses of a package (`package_analyses`) and their files logged to its run
(`analysis_runs`).
MLflow itself is imported inside the functions that need it, so the library imports without it."""
