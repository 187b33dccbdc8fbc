"""The sweep's results, independent of where they are stored: the experiment grid and its one name for a grid point
(`grid`), the results table built from trial histories (`table`), the helpers every reader of that table shares
(`frames`: the final value of a metric, the finished trials of an arm) and the Pareto front (`pareto`)."""
