"""The sweep's results, wherever they are stored: the grid (`grid`), the results table (`table`), each trial's arm
(`arms`, `variants`), what every reader of the table shares (`frames`), its rows as dicts (`rows`) and the Pareto
front (`pareto`)."""
