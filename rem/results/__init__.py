"""The sweep's results, independent of where they are stored: the experiment grid and its names for a grid point
(`grid`), the results table built from trial histories (`table`), the arm a trial belongs to (`variants`), the
helpers every reader of that table shares (`frames`: the finished trials, a metric's final value, the points the
figures and the front are drawn from) and the Pareto front (`pareto`)."""
