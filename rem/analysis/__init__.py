"""Measurements of a trained model beyond its test accuracy: the entropy-vs-sparsity mechanism curve
(`sparsity_curve`), robustness to affine transforms (`robustness`), equivariance, and routing per iteration. They take
a model and its data (`model_on_test`), never a file: reading a checkpoint, a model package or an MLflow run is
`rem.tracking`'s, drawing and publishing their tables `rem.report`'s."""
