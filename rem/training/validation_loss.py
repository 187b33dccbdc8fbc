"""The validation loss REM's threshold search calls, ordered so that rejected thresholds are rejected early.

`ValidationLoss(...)(model, stop_above)` stops once the summed loss exceeds `stop_above x n_images` (exact: the margin
loss is non-negative). Images go in descending order of their loss in the last complete pass, so a near-flat rejected
threshold crosses the bound early; per-image float64 sums make the order change the cost, not the result."""

from __future__ import annotations

import torch

from rem.evaluate import batches_of, evaluate

# Far above float64 rounding of a sum of a few thousand terms, far below any real change of the loss.
STOP_MARGIN = 1e-9


class ValidationLoss:
    def __init__(self, images: torch.Tensor, labels: torch.Tensor, transform, *, batch_size: int, num_classes: int,
                 precision: str = "fp32", loss_kwargs: dict | None = None, order_by_loss: bool = True,
                 compiled: torch.nn.Module | None = None):
        if len(images) != len(labels) or len(labels) == 0:
            raise ValueError(f"ValidationLoss: {len(images)} images and {len(labels)} labels (need as many, > 0)")
        self.images, self.labels, self.transform = images, labels, transform
        self.batch_size, self.num_classes, self.precision = batch_size, num_classes, precision
        self.loss_kwargs = loss_kwargs or {}
        self.order_by_loss = order_by_loss
        self.order: torch.Tensor | None = None  # None: dataset order (before the first complete pass)
        # torch.compile(model) of the model the search prunes: evaluated instead of it (same parameters)
        self.compiled = compiled

    def __len__(self) -> int:
        return len(self.labels)

    def __call__(self, model: torch.nn.Module, stop_above: float | None = None) -> dict:
        stop = None if stop_above is None else stop_above * len(self) * (1 + STOP_MARGIN)
        net = model
        if self.compiled is not None:
            if getattr(self.compiled, "_orig_mod", None) is not model:
                raise ValueError("ValidationLoss: `compiled` must be torch.compile() of the model being evaluated")
            net = self.compiled
        out = evaluate(net, batches_of(self.images, self.labels, self.batch_size, self.transform, self.order),
                       num_classes=self.num_classes, precision=self.precision, parse_trees=False,
                       loss_kwargs=self.loss_kwargs, stop_loss_sum=stop, per_image_loss=self.order_by_loss)
        losses = out.pop("per_image_loss", None)
        if losses is not None and not out.get("stopped_early"):
            seen = torch.arange(len(self), device=losses.device) if self.order is None else self.order
            # stable: equal losses (e.g. the many exact zeros) keep their relative order, so runs repeat
            self.order = seen[torch.sort(losses, descending=True, stable=True).indices]
        return out
