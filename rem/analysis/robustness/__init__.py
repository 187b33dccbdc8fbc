"""Robustness of a trained model to geometric change: test metrics under seeded transformation families.

    families     the families, their default strengths and ranges (plain data: the config imports it)
    transforms   `transform_images`: a family at a strength applied to uint8 image batches, on their device
    evaluation   `robustness` of a model, `robustness_of` a saved one, the flat `robust/...`
                 metrics and their long form back from a results table

Nothing is imported here, so `import rem.analysis.robustness.families` stays free of torch.
"""
