"""Parse trees as REM defines them: quantized coupling keys, per-class dictionaries and their entropy.

A test image predicted as class j has the key (q(c_1j), ..., q(c_Ij)): the quantized couplings from every
input capsule to j. Class j's dictionary counts the distinct keys among the images predicted as j; its
entropy is the Shannon entropy (bits) of the key frequencies.

Keys are kept as rows of small integers and counted with one sort of their raw bytes, never as strings:
10,000 x 1,152 keys take a few tens of milliseconds instead of seconds.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

STATS_COLUMNS = ["n_images", "n_parse_trees", "entropy_bits"]


def quantize(c: torch.Tensor | np.ndarray, levels: int = 11) -> torch.Tensor:
    """Integer bin of each coupling: the nearest of `levels` equally spaced centres in [0, 1].

    K = 11 gives c~ = round(10 c) / 10 with ties going down (REM's bins are (e_k, e_k+1]): one bucketize
    against the K - 1 bin edges (k + 0.5) / (K - 1), values outside [0, 1] in the end bins.
    Returned as uint8 when levels <= 256 (int16 otherwise), the compact form parse-tree keys are stored in.
    """
    if levels < 2:
        raise ValueError(f"quantize: levels must be >= 2, got {levels}")
    c = torch.as_tensor(c).float().contiguous()  # bucketize copies strided inputs anyway
    edges = (torch.arange(levels - 1, dtype=torch.float32, device=c.device) + 0.5) / (levels - 1)
    bins = torch.bucketize(c, edges, out_int32=True)
    return bins.to(torch.uint8 if levels <= 256 else torch.int16)


def keys_for_predictions(couplings: torch.Tensor, predicted: torch.Tensor, levels: int = 11) -> torch.Tensor:
    """The parse-tree key of each image: quantized couplings `(N, I, J)` gathered at the predicted parent."""
    n, i, _ = couplings.shape
    index = predicted.long().to(couplings.device).view(n, 1, 1).expand(n, i, 1)
    return quantize(couplings.gather(2, index).squeeze(2), levels)


def entropy_bits(counts: np.ndarray) -> float:
    """Shannon entropy in bits of a histogram of counts (0 for an empty or single-key histogram)."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        return 0.0
    p = counts[counts > 0] / total
    return float(max(0.0, -(p * np.log2(p)).sum()))


def stats_from_keys(keys: np.ndarray | torch.Tensor, predicted: np.ndarray | torch.Tensor, num_classes: int) -> pd.DataFrame:
    """Per-class images, distinct keys and entropy from keys `(N, I)` and predicted classes `(N,)`.

    One row for every class 0..num_classes-1 (index `class`); a class nobody was predicted as has
    0 images, 0 parse trees and entropy 0.
    """
    keys = np.ascontiguousarray(torch.as_tensor(keys).cpu().numpy())
    predicted = torch.as_tensor(predicted).cpu().numpy().astype(np.int64)
    if keys.ndim != 2 or keys.shape[0] != predicted.shape[0]:
        raise ValueError(f"stats_from_keys: keys {keys.shape} and predicted {predicted.shape} disagree")
    rows = {j: (0, 0, 0.0) for j in range(num_classes)}
    if keys.shape[0]:
        # Prefix each key with its class and compare whole rows as opaque byte strings.
        tagged = np.concatenate([predicted[:, None].view(np.uint8), keys.view(np.uint8)], axis=1)
        as_bytes = np.ascontiguousarray(tagged).view(np.dtype((np.void, tagged.shape[1]))).ravel()
        _, first, counts = np.unique(as_bytes, return_index=True, return_counts=True)
        key_class = predicted[first]
        for j in np.unique(key_class):
            c = counts[key_class == j]
            rows[int(j)] = (int(c.sum()), int(c.size), entropy_bits(c))
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=STATS_COLUMNS)
    frame.index.name = "class"
    return frame


def parse_tree_stats(couplings: torch.Tensor, predicted: torch.Tensor, levels: int = 11) -> pd.DataFrame:
    """Per predicted class j: `n_images`, `n_parse_trees` (distinct quantized keys c[:, :, j]) and
    `entropy_bits` (Shannon entropy of the key frequencies). couplings `(N, I, J)`, predicted `(N,)`."""
    couplings = torch.as_tensor(couplings)
    predicted = torch.as_tensor(predicted)
    keys = keys_for_predictions(couplings, predicted, levels)
    return stats_from_keys(keys, predicted, couplings.shape[2])


def summarize(stats: pd.DataFrame) -> dict[str, float]:
    """Mean and population std of entropy over the classes that received images, and total parse trees."""
    seen = stats[stats["n_images"] > 0]
    ent = seen["entropy_bits"].to_numpy(dtype=np.float64)
    return {
        "entropy/mean": float(ent.mean()) if ent.size else 0.0,
        "entropy/std": float(ent.std()) if ent.size else 0.0,
        "parse_trees/total": int(stats["n_parse_trees"].sum()),
    }
