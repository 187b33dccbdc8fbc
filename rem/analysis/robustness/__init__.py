"""Robustness of a trained model to geometric change: test metrics under seeded transformation families. Nothing is
imported here, so `rem.analysis.robustness.families` stays free of torch."""
