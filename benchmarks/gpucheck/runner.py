"""Parts with their own time budgets: a part that fails or runs out of time is recorded and the next one starts.

The summary (DIR/summary.json) is rewritten after every part, so a check killed from outside still leaves what it
had measured; the log (DIR/log.txt) has every line the parts printed, with the time since the start.
"""

from __future__ import annotations

import json
import time
import traceback
from pathlib import Path
from typing import Any, Callable


class OutOfTime(Exception):
    """A part's budget ran out before its next piece could start."""


class Part:
    """What a running part sees: its results so far, its deadline and the check's log."""

    def __init__(self, check: "Check", name: str, budget_s: float):
        self.check, self.name = check, name
        self.deadline = time.perf_counter() + budget_s
        self.result: dict[str, Any] = {}

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def need(self, seconds: float, what: str) -> None:
        """Raise OutOfTime unless `seconds` are left for `what` (pieces done so far stay in the result)."""
        if self.left() < seconds:
            raise OutOfTime(f"{what}: needs ~{seconds:.0f} s, {max(self.left(), 0):.0f} s left")

    def log(self, line: str) -> None:
        self.check.log(f"[{self.name}] {line}")


class Check:
    def __init__(self, out: Path, budget_s: float, config: dict):
        self.out, self.budget_s, self.start = out, budget_s, time.perf_counter()
        out.mkdir(parents=True, exist_ok=True)
        self.log_file = (out / "log.txt").open("w")
        self.summary: dict[str, Any] = {"config": config, "parts": {}}

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def log(self, line: str) -> None:
        text = f"{self.elapsed():7.1f}s {line}"
        print(text, flush=True)
        self.log_file.write(text + "\n")
        self.log_file.flush()

    def run(self, name: str, share: float, fn: Callable[[Part], None]) -> dict:
        """Run part `name` with `share` of the time still left (never past the check's own budget)."""
        left = self.budget_s - self.elapsed()
        part = Part(self, name, max(0.0, left * share))
        status, error = "ok", ""
        self.log(f"[{name}] start, budget {max(0.0, left * share):.0f} s")
        try:
            if left <= 1:
                raise OutOfTime("the check's budget is spent")
            fn(part)
        except OutOfTime as why:
            status, error = "out of time", str(why)
        except Exception as err:  # recorded; the next part still runs
            status, error = "failed", "".join(traceback.format_exception(err)[-6:])
        seconds = self.elapsed() - (self.budget_s - left)
        self.summary["parts"][name] = {"status": status, "error": error, "seconds": round(seconds, 1), **part.result}
        self.log(f"[{name}] {status} in {seconds:.0f} s{': ' + error.strip().splitlines()[-1] if error else ''}")
        self.write()
        return part.result

    def write(self) -> None:
        self.summary["seconds"] = round(self.elapsed(), 1)
        (self.out / "summary.json").write_text(json.dumps(self.summary, indent=1, default=str))
