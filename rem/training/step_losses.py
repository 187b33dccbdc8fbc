"""A training epoch's running loss and accuracy, kept on the device and read by the host every `check_every` steps:
a read waits for the device. A non-finite loss stops the trial at the next read, naming the first bad step."""

from __future__ import annotations

import torch


class NonFiniteLossError(FloatingPointError):
    """The training loss became NaN or infinite; the trial cannot continue meaningfully."""


class StepLosses:
    def __init__(self, steps: int, device: torch.device, epoch: int, check_every: int = 25):
        self.epoch, self.check_every = epoch, max(1, check_every)
        self.total = torch.zeros((), dtype=torch.float64, device=device)  # sum over steps of loss x images
        self.correct = torch.zeros((), dtype=torch.int64, device=device)
        self.losses = torch.zeros(max(steps, 1), dtype=torch.float64, device=device)  # each step's loss, to name one
        self.seen = 0
        self.checked = 0  # steps whose losses the host has seen to be finite

    def add(self, step: int, loss: torch.Tensor, images: int, correct: torch.Tensor) -> None:
        """Step `step`'s mean loss over `images` images and how many it classified correctly (device tensors)."""
        loss = loss.detach().double()
        self.losses[step] = loss
        self.total += loss * images
        self.correct += correct
        self.seen += images

    def due(self, step: int) -> bool:
        return (step + 1) % self.check_every == 0

    def read(self, upto: int) -> tuple[float, float]:
        """(mean loss, accuracy) so far, in one wait for the device; raises NonFiniteLossError naming the first
        non-finite step among those not yet checked."""
        window = self.losses[self.checked:upto]
        total, correct, finite = torch.stack([self.total, self.correct.double(),
                                              torch.isfinite(window).all().double()]).tolist()
        if not finite:
            first = int((~torch.isfinite(window)).nonzero()[0])
            value = float(window[first])
            raise NonFiniteLossError(f"non-finite training loss {value} at epoch {self.epoch + 1}, "
                                     f"step {self.checked + first + 1}")
        self.checked = upto
        return total / self.seen, int(correct) / self.seen
