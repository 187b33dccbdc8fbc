"""The report's figures, one module per family; all drawn with matplotlib's Agg backend (no display needed).

- sweep_plots: from the results table alone (accuracy/entropy vs sparsity with Pareto fronts; training curves
  against the % of pruned parameters);
- from checkpoints + real test images (`internals.RoutingSnapshot`): couplings (coupling-coefficient
  histograms), overlap (parse-tree overlap maps), saliency (primary-capsule saliency), graphs (parse-tree graphs);
- build: which figures a sweep gets, and a one-line note for each one it cannot draw.
"""
