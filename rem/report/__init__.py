"""The report: the paper's tables and figures, and every published run's page, from the results table (and the
trials' checkpoints). Each table is registered by name with the pages it sits on (`registry`). No Ray, MLflow or
pipeline needed.
"""
