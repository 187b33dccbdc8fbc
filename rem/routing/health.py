"""Routing metrics beyond REM's parse-tree entropy: do input capsules starve, do couplings leave uniform, and do
they depend on the image? (all entropies in bits)

    routing/dead_capsules      fraction of input capsules below `threshold` on every image (Mitterreiter et al.,
                               AAAI 2023, "Why Capsule Neural Networks Do Not Scale")
    routing/coupling_entropy   mean entropy of c_i over the parents: log2(J) uniform, 0 one parent per capsule
    routing/input_dependence   mean over i of H(E_x c_i(x)) - E_x H(c_i(x)), the mutual information between the
                               image and capsule i's choice of parent
    routing/input_dependence_weighted   the same, each capsule weighted by its mean length
    routing/input_dependence_within_class   I(X; c_i | Y) averaged over i: the same mutual information within each
                               predicted class Y (the grouping REM's entropy uses), weighted by the class's images;
                               what is left once the class itself is known
    routing/fixed_preference   mean over i of log2(J) - H(E_x c_i(x)), the shift from uniform every image shares
    routing/images             the images these were read on

log2 J - coupling_entropy = fixed_preference + input_dependence, exactly: the split the entropy alone cannot show.
"""

from __future__ import annotations

import math

import torch


def coupling_distributions(couplings: torch.Tensor) -> torch.Tensor:
    """Couplings `(..., J)` renormalised in float64, so their entropy is a distribution's despite rounding and +Q."""
    c = couplings.detach().double()
    return c / c.sum(dim=-1, keepdim=True).clamp_min(1e-30)


def entropy_over_parents(p: torch.Tensor) -> torch.Tensor:
    """Entropy in bits of distributions `(..., J)` over the last axis."""
    return -(p * torch.log2(p.clamp_min(1e-30))).sum(dim=-1)


class RoutingHealth:
    """The metrics above, accumulated batch by batch on the evaluation's device and read once by `result`."""

    def __init__(self, threshold: float):
        self.threshold = threshold
        self.max_length: torch.Tensor | None = None  # (I,) longest each input capsule got on any image
        self.length_sum: torch.Tensor | None = None  # (I,) float64 sum of each input capsule's length
        self.coupling_sum: torch.Tensor | None = None  # (I, J) float64 sum over images of c_i(x)
        self.entropy_sum: torch.Tensor | None = None  # (I,) float64 sum over images of H(c_i(x))
        # the same entropies summed whole per batch, in the order the pinned coupling entropy needs
        self.entropy_total: torch.Tensor | float = 0.0
        self.images = 0
        # per predicted class: (Y, I, J) float64 sum of c_i(x) and (Y,) images, for the within-class dependence
        self.class_coupling_sum: torch.Tensor | None = None
        self.class_images: torch.Tensor | None = None
        self.classified = True  # every batch came with its classes

    def update(self, couplings: torch.Tensor, input_lengths: torch.Tensor, classes: torch.Tensor | None = None) -> None:
        """couplings `(B, I, J)` of the last routing layer, its inputs' lengths `(B, I)` and, for the within-class
        dependence, each image's class `(B,)` (its predicted class: the parents are the classes)."""
        lengths = input_lengths.detach().double()
        p = coupling_distributions(couplings)
        entropy = entropy_over_parents(p)  # (B, I)
        self.add_classes(p, classes)
        self.entropy_total = self.entropy_total + entropy.sum()
        parts = (lengths.amax(dim=0), lengths.sum(dim=0), p.sum(dim=0), entropy.sum(dim=0))
        if self.max_length is None:
            self.max_length, self.length_sum, self.coupling_sum, self.entropy_sum = parts
        else:
            self.max_length = torch.maximum(self.max_length, parts[0])
            self.length_sum += parts[1]
            self.coupling_sum += parts[2]
            self.entropy_sum += parts[3]
        self.images += p.shape[0]

    def add_classes(self, p: torch.Tensor, classes: torch.Tensor | None) -> None:
        if classes is None:
            self.classified = False
            return
        if self.class_coupling_sum is None:
            _, inputs, parents = p.shape
            self.class_coupling_sum = torch.zeros(parents, inputs, parents, dtype=torch.float64, device=p.device)
            self.class_images = torch.zeros(parents, dtype=torch.float64, device=p.device)
        index = classes.long().to(p.device)
        self.class_coupling_sum.index_add_(0, index, p)
        self.class_images.index_add_(0, index, torch.ones(len(index), dtype=torch.float64, device=p.device))

    def within_class(self, mean_entropy: torch.Tensor) -> float | None:
        """I(X; c_i | Y) averaged over i: sum_y P(y) H(E[c_i | y]) - E H(c_i), with Y each image's class."""
        if not self.classified or self.class_coupling_sum is None:
            return None
        seen = self.class_images > 0
        share = self.class_images[seen] / self.images  # P(y)
        means = self.class_coupling_sum[seen] / self.class_images[seen, None, None]  # (Y, I, J) E[c_i | y]
        conditional = (share[:, None] * entropy_over_parents(means)).sum(dim=0)  # (I,)
        return float((conditional - mean_entropy).clamp_min(0.0).mean())

    def alive(self) -> torch.Tensor | None:
        """(I,) whether each input capsule reached `threshold` on some image; None before any batch."""
        return None if self.max_length is None else self.max_length >= self.threshold

    def result(self) -> dict[str, float]:
        if self.max_length is None:
            return {}
        n, parents = self.images, self.coupling_sum.shape[-1]
        mean_entropy = self.entropy_sum / n  # (I,) E_x H(c_i(x))
        entropy_of_mean = entropy_over_parents(self.coupling_sum / n)  # (I,) H(E_x c_i(x))
        # H(mean) >= mean H by concavity; rounding can leave a capsule a hair below 0
        dependence = (entropy_of_mean - mean_entropy).clamp_min(0.0)
        weights = self.length_sum / n
        weighted = float((weights * dependence).sum() / weights.sum()) if float(weights.sum()) > 0 else 0.0
        within = self.within_class(mean_entropy)
        return {**({} if within is None else {"routing/input_dependence_within_class": within}),
                "routing/dead_capsules": float((~self.alive()).double().mean()),
                "routing/coupling_entropy": float(self.entropy_total) / (mean_entropy.numel() * n),
                "routing/input_dependence": float(dependence.mean()),
                "routing/input_dependence_weighted": weighted,
                "routing/fixed_preference": float((math.log2(parents) - entropy_of_mean).clamp_min(0.0).mean()),
                "routing/images": float(n)}
