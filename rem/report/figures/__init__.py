"""The report's figures, one module per family, drawn with matplotlib's Agg backend; `build` picks a sweep's."""
