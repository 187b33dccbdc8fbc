"""Parse trees as REM defines them: an image predicted as class j has the key (q(c_1j), ..., q(c_Ij)); class j's
dictionary counts the distinct keys, its entropy is their Shannon entropy in bits. Keys are uint8 rows counted
through a verified 64-bit row hash: strings would cost seconds per evaluation. The last part: within-class
collisions, how often two images of one class share a key (the collision entropy and its one-sided bound)."""

from __future__ import annotations

import functools
import math
import statistics
import sys
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import torch

from rem.device import HOST

STATS_COLUMNS = ["n_images", "n_parse_trees", "entropy_bits"]
AMBIGUOUS = 255  # table entry whose float range straddles a bin edge


def quantize(c: torch.Tensor | np.ndarray, levels: int = 11) -> torch.Tensor:
    """Integer bin of each coupling, the nearest of `levels` centres in [0, 1] (K = 11: round(10 c) / 10, ties
    down, as REM's (e_k, e_k+1] bins); uint8 when levels <= 256, else int16."""
    if levels < 2:
        raise ValueError(f"quantize: levels must be >= 2, got {levels}")
    c = torch.as_tensor(c).float().contiguous()  # bucketize copies strided inputs anyway
    bins = torch.bucketize(c, bin_edges(levels, c.device), out_int32=True)
    return bins.to(torch.uint8 if levels <= 256 else torch.int16)


def bin_edges(levels: int, device=None) -> torch.Tensor:
    """The `levels - 1` edges between `quantize`'s bins: (k + 0.5) / (levels - 1) (K = 6: 0.1, 0.3, ..., 0.9)."""
    return (torch.arange(levels - 1, dtype=torch.float32, device=device) + 0.5) / (levels - 1)


def edge_distance(c: torch.Tensor, levels: int) -> torch.Tensor:
    """How far each coupling lies from the nearest of `bin_edges(levels)` (float32, the couplings' shape): a
    coupling near an edge changes its key, and +Q's rounding, under an arbitrarily small move."""
    scaled = c.float() * (levels - 1) - 0.5  # edges sit at the integers 0 .. levels - 2
    nearest = scaled.round().clamp(0, levels - 2)
    return (scaled - nearest).abs() / (levels - 1)


TABLE_BITS = 20  # the binning table is indexed by a float32's top 20 bits (1 MiB of uint8)
BLOCK_VALUES = 1 << 20  # values per block of rows: a few MiB, so each pass over a block stays in cache


@functools.lru_cache(maxsize=8)
def _bin_table(levels: int) -> torch.Tensor:
    """`quantize` as a table on a float32's top `TABLE_BITS` bits, built from `quantize` itself; an entry whose
    float range straddles a bin edge is AMBIGUOUS and those few values are bucketized exactly."""
    shift = 32 - TABLE_BITS
    top = np.arange(1 << TABLE_BITS, dtype=np.uint32) << shift
    low = quantize(torch.from_numpy(top.view(np.float32)), levels)
    high = quantize(torch.from_numpy((top | ((1 << shift) - 1)).view(np.float32)), levels)
    return torch.where(low == high, low, AMBIGUOUS).to(torch.uint8)


def _table_applies(couplings: torch.Tensor, levels: int) -> bool:
    return (couplings.device.type == "cpu" and couplings.dtype == torch.float32 and levels < AMBIGUOUS
            and sys.byteorder == "little")


def _key_rows(couplings: torch.Tensor, predicted: np.ndarray, levels: int, out: np.ndarray, rows: slice) -> None:
    """Bins of the couplings to the predicted parent for images `rows`, written into `out[rows]`."""
    n_rows = rows.stop - rows.start
    if couplings.stride(1) == 1:  # parent-major storage, as every routing here returns: rows are contiguous
        parents = couplings.detach().transpose(1, 2).numpy().view(np.uint32)  # (N, J, I)
        bits = parents[np.arange(rows.start, rows.stop), predicted[rows]]
    else:
        block = couplings.detach()[rows]
        index = torch.from_numpy(predicted[rows]).view(n_rows, 1, 1).expand(n_rows, block.shape[1], 1)
        bits = block.gather(2, index).squeeze(2).contiguous().numpy().view(np.uint32)
    top = np.right_shift(bits, 32 - TABLE_BITS).view(np.int32)  # < 2**20: the same value as int32
    keys = out[rows]
    torch.index_select(_bin_table(levels), 0, torch.from_numpy(top).view(-1), out=torch.from_numpy(keys).view(-1))
    if keys.size and keys.max() == AMBIGUOUS:  # numpy: torch's nonzero is slower on this many bytes
        flat = np.flatnonzero(keys == AMBIGUOUS)
        keys.ravel()[flat] = quantize(torch.from_numpy(bits.ravel()[flat].view(np.float32)), levels).numpy()


def _in_blocks(fn, n_rows: int, row_size: int) -> list:
    """fn(rows) over cache-sized blocks of rows on torch's threads (the calls release the GIL), in block order."""
    block = max(1, BLOCK_VALUES // max(row_size, 1))
    blocks = [slice(s, min(s + block, n_rows)) for s in range(0, n_rows, block)]
    workers = min(torch.get_num_threads(), len(blocks))
    if workers <= 1:
        return [fn(rows) for rows in blocks]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, blocks))


def keys_for_predictions(couplings: torch.Tensor, predicted: torch.Tensor, levels: int = 11) -> torch.Tensor:
    """The parse-tree key `(N, I)` of each image: couplings `(N, I, J)` at the predicted parent, quantized (on the
    CPU by `_bin_table` lookup, in cache-sized blocks on torch's threads)."""
    n, i, _ = couplings.shape
    predicted = predicted.long().to(couplings.device)
    if not _table_applies(couplings, levels):
        index = predicted.view(n, 1, 1).expand(n, i, 1)
        return quantize(couplings.gather(2, index).squeeze(2), levels)
    keys = np.empty((n, i), dtype=np.uint8)
    _in_blocks(functools.partial(_key_rows, couplings, predicted.numpy(), levels, keys), n, i)
    return torch.from_numpy(keys)


def entropy_bits(counts: np.ndarray) -> float:
    """Shannon entropy in bits of a histogram of counts (0 for an empty or single-key histogram)."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        return 0.0
    p = counts[counts > 0] / total
    return float(max(0.0, -(p * np.log2(p)).sum()))


def _splitmix(z: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer in place (`tmp`: scratch of z's shape): every input bit reaches every output bit."""
    for shift, mult in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):
        np.right_shift(z, np.uint64(shift), out=tmp)
        np.bitwise_xor(z, tmp, out=z)
        np.multiply(z, np.uint64(mult), out=z)
    np.right_shift(z, np.uint64(31), out=tmp)
    return np.bitwise_xor(z, tmp, out=z)


def _row_hashes(keys: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each (class, key) row: each 8-byte word salted by position and scrambled, then summed."""
    row = keys.view(np.uint8).reshape(len(keys), -1)
    if row.shape[1] % 8:
        row = np.concatenate([row, np.zeros((len(row), -row.shape[1] % 8), np.uint8)], axis=1)
    words = row.view("<u8")
    salt = np.random.default_rng(0x5EED).integers(0, 2**64, size=words.shape[1] + 1, dtype=np.uint64)

    def block(rows):
        z = np.bitwise_xor(words[rows], salt[1:])
        return _splitmix(z, np.empty_like(z)).sum(axis=1, dtype=np.uint64)

    with np.errstate(over="ignore"):  # arithmetic modulo 2**64 is the point
        tag = predicted.astype(np.uint64) ^ salt[0]
        return np.concatenate(_in_blocks(block, len(words), words.shape[1])) + _splitmix(tag, np.empty_like(tag))


def _distinct_keys(keys: np.ndarray, predicted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of the first row of each distinct (class, key) and its count: grouped by hash, verified row by row,
    and on a collision (~3e-12 for 10k keys) sorted by raw bytes instead."""
    _, first, inverse, counts = np.unique(_row_hashes(keys, predicted), return_index=True, return_inverse=True,
                                          return_counts=True)
    rep = first[inverse]
    same = _in_blocks(lambda rows: np.array_equal(keys[rows], keys[rep[rows]]), len(keys), keys.shape[1])
    if all(same) and np.array_equal(predicted, predicted[rep]):
        return first, counts
    tagged = np.concatenate([predicted[:, None].view(np.uint8), keys.view(np.uint8)], axis=1)
    as_bytes = np.ascontiguousarray(tagged).view(np.dtype((np.void, tagged.shape[1]))).ravel()
    _, first, counts = np.unique(as_bytes, return_index=True, return_counts=True)
    return first, counts


def key_counts_by_class(keys: np.ndarray | torch.Tensor, predicted: np.ndarray | torch.Tensor,
                        num_classes: int) -> list[np.ndarray]:
    """Per class 0..num_classes-1: how many of its images had each of its distinct keys (empty for a class never
    predicted), from keys `(N, I)` and predicted classes `(N,)`."""
    keys = np.ascontiguousarray(torch.as_tensor(keys, device=HOST).numpy())
    predicted = torch.as_tensor(predicted, device=HOST).numpy().astype(np.int64)
    if keys.ndim != 2 or keys.shape[0] != predicted.shape[0]:
        raise ValueError(f"key_counts_by_class: keys {keys.shape} and predicted {predicted.shape} disagree")
    out = [np.zeros(0, dtype=np.int64) for _ in range(num_classes)]
    if keys.shape[0]:
        first, counts = _distinct_keys(keys, predicted)
        key_class = predicted[first]
        for j in np.unique(key_class):
            out[int(j)] = counts[key_class == j].astype(np.int64)
    return out


def stats_from_counts(per_class: list[np.ndarray]) -> pd.DataFrame:
    """Per-class images, distinct keys and entropy (one row per class, index `class`) from `key_counts_by_class`."""
    rows = {j: (int(c.sum()), int(c.size), entropy_bits(c) if c.size else 0.0) for j, c in enumerate(per_class)}
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=STATS_COLUMNS)
    frame.index.name = "class"
    return frame


def stats_from_keys(keys: np.ndarray | torch.Tensor, predicted: np.ndarray | torch.Tensor,
                    num_classes: int) -> pd.DataFrame:
    """Per-class images, distinct keys and entropy from keys `(N, I)` and predicted classes `(N,)`: one row per
    class 0..num_classes-1 (index `class`), zeros for a class never predicted."""
    return stats_from_counts(key_counts_by_class(keys, predicted, num_classes))


def hex_keys(keys: np.ndarray) -> list[str]:
    """Parse-tree keys `(N, I)` (uint8 bins) as the hex strings the parse-tree dictionaries and served models give."""
    return [row.tobytes().hex() for row in np.ascontiguousarray(keys)]


def key_counts(keys: np.ndarray | torch.Tensor, predicted: np.ndarray | torch.Tensor) -> pd.DataFrame:
    """The parse-tree dictionary: one row per distinct (predicted class, key) with its `count`, the key as
    hex of its `(I,)` uint8 quantized couplings; sorted by class, then most frequent first."""
    keys = np.ascontiguousarray(torch.as_tensor(keys, device=HOST).numpy())
    predicted = torch.as_tensor(predicted, device=HOST).numpy().astype(np.int64)
    if not len(keys):
        return pd.DataFrame({"class": pd.Series(dtype=np.int64), "key": pd.Series(dtype=str),
                             "count": pd.Series(dtype=np.int64)})
    first, counts = _distinct_keys(keys, predicted)
    frame = pd.DataFrame({"class": predicted[first], "key": hex_keys(keys[first]), "count": counts.astype(np.int64)})
    return frame.sort_values(["class", "count", "key"], ascending=[True, False, True], ignore_index=True)


def parse_tree_stats(couplings: torch.Tensor, predicted: torch.Tensor, levels: int = 11) -> pd.DataFrame:
    """Per predicted class j: `n_images`, `n_parse_trees` (distinct quantized keys c[:, :, j]) and
    `entropy_bits` (Shannon entropy of the key frequencies). couplings `(N, I, J)`, predicted `(N,)`."""
    couplings = torch.as_tensor(couplings)
    predicted = torch.as_tensor(predicted)
    keys = keys_for_predictions(couplings, predicted, levels)
    return stats_from_keys(keys, predicted, couplings.shape[2])


def entropy_over_classes(entropy: np.ndarray, images: np.ndarray) -> tuple[float, float]:
    """REM's headline entropy from `(S, J)` per-class entropies and image counts of S seeds: each class averaged
    over the seeds where it received images, then mean and population std over the classes that received any."""
    entropy = np.atleast_2d(np.asarray(entropy, dtype=np.float64))
    seen = np.atleast_2d(np.asarray(images, dtype=np.float64)) > 0
    counts = seen.sum(axis=0)
    if not counts.any():
        return 0.0, 0.0
    per_class = np.where(seen, entropy, 0.0).sum(axis=0)[counts > 0] / counts[counts > 0]
    return float(per_class.mean()), float(per_class.std())


def entropy_at_images(keys: np.ndarray, predicted: np.ndarray, num_classes: int, images: int) -> float:
    """Mean entropy over the first `images` images of each class that has that many (NaN if none): its ceiling is
    log2(images) whatever the test subset, so it compares across subsets."""
    keys, predicted = np.asarray(keys), np.asarray(predicted).astype(np.int64)
    entropies = []
    for j in range(num_classes):
        rows = np.flatnonzero(predicted == j)[:images]
        if len(rows) == images:
            entropies.append(float(stats_from_keys(keys[rows], predicted[rows], num_classes)["entropy_bits"].iloc[j]))
    return float(np.mean(entropies)) if entropies else float("nan")


def summarize(stats: pd.DataFrame) -> dict[str, float]:
    """Mean and population std of entropy over the classes that received images, and total parse trees."""
    mean, std = entropy_over_classes(stats["entropy_bits"].to_numpy(), stats["n_images"].to_numpy())
    return {"entropy/mean": mean, "entropy/std": std, "parse_trees/total": int(stats["n_parse_trees"].sum())}


# Within-class collisions of parse trees: how often two images of one class share a key.
# REM's Shannon entropy of a class's keys is biased low on a finite sample and pinned at log2 of its images once every
# image has a key of its own (the ceiling). The collision probability p = sum_k p_k^2 is not: the share of same-class
# image pairs whose keys agree, sum_k n_k (n_k - 1) / (N (N - 1)), estimates it without bias, and its collision
# (Rényi-2) entropy -log2 p is a lower bound on the Shannon entropy. With no colliding pair it still gives a one-sided
# bound ("at least X bits") where the Shannon entropy only says "at the ceiling".
#
# Every statistic here reads only a class's key counts (how many images had each distinct key), so the count profile
# (how many keys were seen once, twice, ...) is enough to compute any of them again later.

COLLISION_CONFIDENCE = 0.95  # the one-sided bound's level


def count_profile(counts: Iterable[int]) -> dict[int, int]:
    """{m: how many keys were seen exactly m times} of one class's key counts."""
    seen, keys = np.unique(np.asarray(list(counts), dtype=np.int64), return_counts=True)
    return {int(m): int(k) for m, k in zip(seen, keys) if m > 0}


def counts_of(profile: dict[int, int]) -> np.ndarray:
    """The key counts a count profile stands for (their order is not kept, and no statistic here needs it)."""
    return np.repeat(np.fromiter(profile.keys(), dtype=np.int64, count=len(profile)),
                     np.fromiter(profile.values(), dtype=np.int64, count=len(profile)))


def colliding_pairs(counts: Iterable[int]) -> int:
    """Unordered pairs of images that share a key: sum_k n_k (n_k - 1) / 2."""
    n = np.asarray(list(counts), dtype=np.int64)
    return int((n * (n - 1) // 2).sum())


def all_pairs(images: int) -> int:
    return images * (images - 1) // 2


def worst_counts(images: int, trees: int) -> np.ndarray:
    """The key counts with the most colliding pairs that `images` images and `trees` distinct keys allow: one key
    holds every image the other trees do not (a bound for runs that recorded only those two numbers)."""
    if not 0 < trees <= images:
        raise ValueError(f"worst_counts: needs 0 < trees <= images; got {trees} trees on {images} images")
    return np.array([images - trees + 1] + [1] * (trees - 1), dtype=np.int64)


def _pair_count_variance(per_class: Sequence[np.ndarray]) -> float:
    """The variance of the pooled colliding-pair count, summed over classes: each class's share of colliding pairs
    is a U-statistic, whose variance is [4 (N - 2) zeta_1 + 2 zeta_2] / (N (N - 1)) (Hoeffding), with
    zeta_1 = sum p^3 - (sum p^2)^2 and zeta_2 = sum p^2 - (sum p^2)^2 estimated from the counts (unbiased sums of
    p^2 and p^3, their square plugged in)."""
    total = 0.0
    for n in per_class:
        images = int(n.sum())
        if images < 3:
            continue
        s2 = float((n * (n - 1)).sum()) / (images * (images - 1))
        s3 = float((n * (n - 1) * (n - 2)).sum()) / (images * (images - 1) * (images - 2))
        var_u = max(0.0, 4 * (images - 2) * (s3 - s2 * s2) + 2 * (s2 - s2 * s2)) / (images * (images - 1))
        total += var_u * all_pairs(images) ** 2
    return total


def pooled_collisions(per_class: Sequence[Iterable[int]]) -> tuple[int, int, list[np.ndarray]]:
    """(colliding pairs, same-class pairs, counts as arrays) pooled over classes."""
    arrays = [np.asarray(list(c), dtype=np.int64) for c in per_class]
    return (sum(colliding_pairs(n) for n in arrays), sum(all_pairs(int(n.sum())) for n in arrays), arrays)


def collision_probability(per_class: Sequence[Iterable[int]]) -> float:
    """The share of same-class image pairs that share a key (NaN when no class has two images)."""
    colliding, pairs, _ = pooled_collisions(per_class)
    return colliding / pairs if pairs else math.nan


def collision_upper_bound(per_class: Sequence[Iterable[int]], confidence: float = COLLISION_CONFIDENCE) -> float:
    """A one-sided `confidence` upper bound on the collision probability: the larger of two bounds, each right where
    the other is weak. Poisson (Garwood's exact bound on the colliding pairs' mean): right when collisions are rare
    and spread over many keys, the birthday problem's regime, including no collision at all. Normal, from the
    U-statistic's variance, on the log scale (the share is skewed right): right when a few keys hold many images,
    whose pairs are far from independent. Approximate: 93-97 % coverage at 95 % in tests/test_collisions.py's
    regimes."""
    colliding, pairs, arrays = pooled_collisions(per_class)
    if not pairs:
        return math.nan
    poisson = poisson_upper_mean(colliding, confidence) / pairs
    if not colliding:
        return float(min(1.0, poisson))
    relative_se = math.sqrt(_pair_count_variance(arrays)) / colliding
    normal = colliding / pairs * math.exp(statistics.NormalDist().inv_cdf(confidence) * relative_se)
    return float(min(1.0, max(poisson, normal)))


def poisson_upper_mean(observed: int, confidence: float) -> float:
    """Garwood's exact one-sided `confidence` upper bound on a Poisson mean after `observed` events (scipy's
    chi2.ppf(confidence, 2 (observed + 1)) / 2): the mean m at which `observed` or fewer events have probability
    1 - confidence. P(X <= k; m) is the regularized upper incomplete gamma Q(k + 1, m), falling in m, so m is found by
    bisection in float64. Not scipy: importing its statistics costs every trial worker ~0.6 s of CPU at its first
    evaluation."""
    if observed == 0:
        return -math.log1p(-confidence)  # P(X = 0; m) = exp(-m)
    shape = torch.tensor(float(observed + 1), dtype=torch.float64, device=HOST)

    def at_most_observed(mean: float) -> float:
        return float(torch.special.gammaincc(shape, torch.tensor(mean, dtype=torch.float64, device=HOST)))

    low, high = 0.0, 2.0 * (observed + 1)
    while at_most_observed(high) > 1 - confidence:
        low, high = high, 2 * high
    while high - low > 1e-13 * high:
        middle = (low + high) / 2
        low, high = (middle, high) if at_most_observed(middle) > 1 - confidence else (low, middle)
    return (low + high) / 2


def collision_entropy(per_class: Sequence[Iterable[int]]) -> float:
    """Collision entropy -log2 p of the pooled share (inf when no pair collides, NaN with no pairs)."""
    p = collision_probability(per_class)
    return math.nan if math.isnan(p) else (math.inf if p == 0 else -math.log2(p))


def collision_entropy_bound(per_class: Sequence[Iterable[int]], confidence: float = COLLISION_CONFIDENCE) -> float:
    """The one-sided `confidence` lower bound on the collision entropy (bits), finite even when no pair collides."""
    bound = collision_upper_bound(per_class, confidence)
    return math.nan if math.isnan(bound) else -math.log2(bound)


def describe_collision_entropy(point: float, bound: float, digits: int = 2) -> str:
    """"8.31 (≥ 8.12) bits", or "at least 16.8 bits" where no pair collided (no point estimate exists)."""
    if math.isnan(bound):
        return "–"
    if math.isinf(point) or math.isnan(point):
        return f"at least {bound:.{digits}f} bits"
    return f"{point:.{digits}f} (≥ {bound:.{digits}f}) bits"
