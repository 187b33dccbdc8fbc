"""Parameters and FLOPs per image of the registered models, for the papers' comparison tables. FLOPs are
torch.utils.flop_counter's: 2 x the multiply-adds of matrix products and convolutions, routing included."""

from __future__ import annotations

import torch
from torch.utils.flop_counter import FlopCounterMode

from rem.device import HOST
from rem.models.registry import count_parameters, create_model


def count_flops(model: torch.nn.Module, in_shape: tuple[int, int, int]) -> int:
    """FLOPs of one image's eval-mode forward through `model`, on the model's device."""
    first = next(model.parameters(), None)
    device = first.device if first is not None else HOST
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode(), FlopCounterMode(display=False) as counter:
            model(torch.zeros(1, *in_shape, device=device))
    finally:
        model.train(was_training)
    return int(counter.get_total_flops())


def model_counts(names, in_shape: tuple[int, int, int], num_classes: int) -> list[dict]:
    """Per model name, `{"model", "params", "flops"}` at its default options for inputs `in_shape`."""
    rows = []
    for name in names:
        model = create_model(name, in_shape=tuple(in_shape), num_classes=num_classes)
        rows.append({"model": name, "params": count_parameters(model), "flops": count_flops(model, in_shape)})
    return rows


def millions(count: int) -> str:
    """35445522 -> '35.4 M'."""
    return f"{count / 1e6:.1f} M"


def counts_table(rows: list[dict]) -> str:
    """`model_counts` rows as a Markdown table: exact counts, then in millions as the papers quote them."""
    lines = ["| model | parameters | parameters (M) | FLOPs per image | FLOPs per image (M) |",
             "|---|---:|---:|---:|---:|"]
    lines += [f"| {r['model']} | {r['params']:,} | {millions(r['params'])} | {r['flops']:,} | {millions(r['flops'])} |"
              for r in rows]
    return "\n".join(lines)


def decoder_parameters(name: str, in_shape: tuple[int, int, int], num_classes: int) -> int:
    """Trainable parameters of model `name`'s decoder, counted apart since only training uses it."""
    model = create_model(name, in_shape=tuple(in_shape), num_classes=num_classes, decoder=True)
    return sum(p.numel() for n, p in model.named_parameters() if n.startswith("decoder.") and p.requires_grad)
