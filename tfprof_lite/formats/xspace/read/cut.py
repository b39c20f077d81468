"""Steps of an XSpace cut by the trace's start or stop.

A step begins where the previous one ended; the first step has no previous
step in the trace, so :func:`cut_steps` takes it as cut by the trace's start
unless its root is the first thing its thread did in the trace (any work its
thread did before may be that step's, begun before the trace: reading the
batch, staging it, or the profiler's own start call). The last step is cut
by the trace's stop when its program had not run, or recorded fewer events
than the program's other runs, or its device work fewer events than every
other step's: it was still running when the trace stopped. (A marker or
program call still open at the stop is not in the file at all: what ran in it
belongs to no step.)

Cut steps stay in the model, its views and the timeline; the step statistics
(``overview``, ``steptime``, the report's step chart) leave them out.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from tfprof_lite.formats.xspace.read.events import EventTable
from tfprof_lite.formats.xspace.read.steps import StepRoots

__all__ = ["CUT_AT_START", "NOT_A_STEP", "cut_steps"]

I64 = npt.NDArray[np.int64]

#: Why the first step is cut.
CUT_AT_START = (
    "cut by the trace's start: its thread was at work before it, so where it began "
    "is not in the trace"
)
#: Why step 0 of a file without steps is no step.
NOT_A_STEP = "not a step: no steps were found, this is the whole profile"


def cut_steps(
    table: EventTable, roots: StepRoots, dev_steps: I64, numbers: list[int]
) -> dict[int, str]:
    """Step number (``numbers``: of each step) -> why it is cut (see the module
    docstring); the one step of a file without steps is :data:`NOT_A_STEP`."""
    if not roots.events:
        return {numbers[0]: NOT_A_STEP}
    out: dict[int, list[str]] = {}
    if _busy_before(table, roots.events[0]):
        out.setdefault(0, []).append(CUT_AT_START)
    last = len(roots) - 1
    stopped = _stopped(roots.ops, last) or _device_short(dev_steps, len(roots))
    if stopped:
        out.setdefault(last, []).append(stopped)
    return {numbers[step]: "; ".join(why) for step, why in out.items()}


def _busy_before(table: EventTable, root: int) -> bool:
    """Whether ``root``'s thread started an event before it in the file."""
    cols = table.cols
    line = table.line_of(root)
    low, high = int(cols.line_event_at[line]), int(cols.line_event_at[line + 1])
    return bool(len(table.start[low:high]) and table.start[low:high].min() < table.start[root])


def _stopped(ops: list[int], last: int) -> str:
    """Why the last run is cut, from the events of each run (-1: unknown)."""
    if ops[last] == 0:
        return "cut by the trace's stop: its program had not run yet"
    others = [n for n in ops[:last] if n > 0]
    if ops[last] < 0 or len(others) < 2:
        return ""
    usual = int(np.median(others))
    if ops[last] < usual:
        return f"cut by the trace's stop: {ops[last]} of the {usual} events of its program's run"
    return ""


def _device_short(dev_steps: I64, steps: int) -> str:
    """Why the last step is cut when it has fewer device events than every other."""
    if steps < 3:
        return ""
    counts = np.bincount(dev_steps[dev_steps >= 0], minlength=steps)[:steps]
    fewest = int(counts[:-1].min())
    if fewest and counts[-1] < fewest:
        return (
            f"cut by the trace's stop: {int(counts[-1])} device events, every other step "
            f"at least {fewest}"
        )
    return ""
