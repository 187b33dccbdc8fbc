"""Overlapping digits on the claims page: each two-digit dataset's arms (both labels right) and the claim that capsules
tell overlapping objects apart better than a CNN of the same size."""

from __future__ import annotations

from rem.data.multi import PairedDigits
from rem.data.registry import find_family
from rem.report.arm_seeds import evaluation_note
from rem.report.registry import Context, report_table
from rem.report.render import Table
from rem.report.spread import Spread, spread
from rem.report.tables import aggregate, pm
from rem.report.verdicts import Differs, judged
from rem.results.frames import final_value
from rem.results.variants import routed

CLAIM = "Capsules recognise both of two overlapping objects better than a CNN of the same size (Sabour et al.)"


def paired(dataset: str) -> bool:
    return isinstance(find_family(dataset), PairedDigits)


def accuracy(row) -> Spread:
    """Both items right (%) over the row's seeds, with the per-seed values the verdicts test."""
    return spread(final_value(row.finals, "test/acc"), 100.0)


def overlapping_table(rows, dataset: str) -> Table:
    cells = [[r.model, r.variant, str(len(r.seeds)), f"{r.params:,}", pm(r.acc_mean, r.acc_std)]
             for r in rows if r.dataset == dataset and r.seeds]
    return Table(f"{dataset}: overlapping pairs, both recognised", ["Model", "Variant", "Seeds", "Parameters",
                 "Both right (%)"], cells, notes=[
        "Each test image overlays two items of different classes on a 36 x 36 canvas, each shifted up to ±4 px "
        "(rem/data/multi.py, as Sabour et al. built MultiMNIST); it counts as right when its two labels are the "
        "model's two highest class scores. The test pairs are fixed; training pairs are drawn afresh each epoch. "
        "Sabour et al. report 5.2 % error for CapsNet on MultiMNIST against 8.1 % for their CNN baseline (on "
        "MNIST digits, 60 M pairs of training): a reference for the direction, not a number this budget reaches."])


def overlapping_rows(rows, seeds: dict) -> list[list[str]]:
    """The claim per two-digit dataset, unpruned capsule arm and CNN, in the final evaluation's forward."""
    done = [r for r in rows if r.seeds and paired(r.dataset)]
    out = []
    for caps in [r for r in done if routed(r.model) and r.arm.unpruned]:
        for cnn in [r for r in done if not routed(r.model) and r.dataset == caps.dataset]:
            read, base = accuracy(caps), accuracy(cnn)
            forward = "+Q (final evaluation)" if caps.arm.quantized else "plain (final evaluation)"
            mine, theirs = seeds[(caps.dataset, caps.model, caps.arm)], seeds[(cnn.dataset, cnn.model, cnn.arm)]
            out.append([f"{caps.model} {caps.variant} vs {cnn.model} ({caps.dataset})", CLAIM, forward,
                        f"both right {read.text(2)} vs {base.text(2)} %{evaluation_note(mine, theirs)}",
                        *judged(Differs(+1), base, read, 2, mine.not_learned(), theirs.not_learned())])
    return out


@report_table("overlapping-digits", "Overlapping digits", per="data.dataset",
              file="overlapping_{group}", figures=("multi_reconstructions_{group}.png",))
def overlapping_section(frame, context: Context, dataset: str) -> Table | None:
    rows = context.once(aggregate)
    return (overlapping_table(rows, dataset)
            if paired(dataset) and any(r.dataset == dataset and r.seeds for r in rows) else None)
