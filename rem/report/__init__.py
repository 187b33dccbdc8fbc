"""The report: the paper's tables and figures from the results table (and the trials' checkpoints).

- tables: trials aggregated into rows (model x variant) and each dataset's tables; protocol: the affNIST,
  smallNORB and pruning-ablation tables; capsules: the capsule-pruning table;
- render: one `Table`, rendered as Markdown, LaTeX or HTML; page: everything on one HTML page;
- reference: the published numbers shown beside ours (`reference/published.yaml`);
- figures: one module per figure family; analysis_files: a one-model analysis's table and figure (`rem
  sparsity-curve`, `rem robustness`);
- registry: every table by name, with the pages it sits on (the report, evidence and claims pages); assemble: a
  page's tables from the results table; stage: the report stage's files (`pipeline.report` calls it);
- blocks: what every published run's page (reports/<run>/README.md) is made of, a `PublishedPage` each: evidence,
  horizon, routing_study and claims; spread: an arm's values over its seeds; abstract_claims and mechanism_curve:
  the verdicts the evidence and horizon pages share.

Nothing here needs Ray, MLflow or the pipeline.
"""
