"""Measurements of a trained model beyond its test accuracy (mechanism curve, robustness, equivariance, routing per
iteration); they take a model and its data, never a file, which `rem.tracking` reads."""
