"""Measurements of a trained model beyond its test accuracy: the entropy-vs-sparsity mechanism curve
(`sparsity_curve`), robustness to affine transforms (`robustness`), and where either finds its model (`sources`:
a checkpoint, a model package or an MLflow run) and publishes its table."""
