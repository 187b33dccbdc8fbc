"""The report: the paper's tables and figures, and every published run's page, from the results table (and the trials'
checkpoints); each table is registered with the pages it sits on (`registry`). No Ray, MLflow or pipeline needed."""
