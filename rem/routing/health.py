"""Routing metrics beyond REM's parse-tree entropy (Mitterreiter et al., AAAI 2023, "Why Capsule Neural
Networks Do Not Scale"): do input capsules starve, and do couplings leave uniform?

    routing/dead_capsules      fraction of the routing layer's input capsules whose length stays below
                               `threshold` on every evaluated image (they never take part in a parse tree)
    routing/coupling_entropy   mean over images and input capsules of the entropy (bits) of c_i over the
                               parents j; log2(J) is uniform routing, 0 is each capsule choosing one parent

A REM entropy drop with `coupling_entropy` falling is polarised routing; with `dead_capsules` rising it is
starved capsules. Accumulated batch by batch on the evaluation's device (so the pass keeps only one max-length
vector, and no batch waits for a copy to the host), read once by `result`.
"""

from __future__ import annotations

import torch


class RoutingHealth:
    def __init__(self, threshold: float):
        self.threshold = threshold
        self.max_length: torch.Tensor | None = None  # (I,) longest each input capsule got on any image
        self.entropy_sum: torch.Tensor | float = 0.0  # float64, on the device once a batch was added
        self.count = 0  # images x input capsules summed into entropy_sum

    def update(self, couplings: torch.Tensor, input_lengths: torch.Tensor) -> None:
        """couplings `(B, I, J)` of the last routing layer and its inputs' lengths `(B, I)`."""
        longest = input_lengths.detach().float().amax(dim=0)
        self.max_length = longest if self.max_length is None else torch.maximum(self.max_length, longest)
        c = couplings.detach().double()
        # Couplings of every routing sum to 1 over parents up to rounding (and +Q's levels): renormalise so the
        # entropy is that of a distribution whatever the routing.
        p = c / c.sum(dim=-1, keepdim=True).clamp_min(1e-30)
        entropy = -(p * torch.log2(p.clamp_min(1e-30))).sum(dim=-1)
        self.entropy_sum = self.entropy_sum + entropy.sum()
        self.count += entropy.numel()

    def result(self) -> dict[str, float]:
        if self.max_length is None:
            return {}
        return {"routing/dead_capsules": float((self.max_length < self.threshold).double().mean()),
                "routing/coupling_entropy": float(self.entropy_sum) / self.count}
