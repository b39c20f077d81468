"""The open window of a ``Monitor``: its accumulators and its closing record.

Contract: a window collects the untraced runs' durations, the traced runs'
count and the time spent inside runs; :meth:`WindowState.record` turns it into
one :class:`~tfprof_lite.analysis.monitoring.WindowRecord` (rates over the
window's wall time by ``time.perf_counter`` and host CPU time by
``time.process_time``). Not thread-safe: the monitor holds its lock.
"""

from __future__ import annotations

import time

from tfprof_lite.analysis.monitoring import SampleMetrics, WindowRecord, window_stats

__all__ = ["WindowState"]

_clock = time.perf_counter


class WindowState:
    """Accumulators of the open window.

    Args:
        index: the window's number in the run (from 0).
        first_step: the run's step count when the window opened.
        sample_due: a trace sample is wanted in this window.
    """

    def __init__(self, index: int, first_step: int, sample_due: bool) -> None:
        self.index = index
        self.first_step = first_step
        self.start = _clock()
        self.start_cpu = time.process_time()
        self.durations: list[float] = []
        self.traced = 0
        self.in_run = 0.0
        self.sample_due = sample_due

    def record(
        self, run_id: str, step: int, sample: SampleMetrics | None, partial: bool
    ) -> WindowRecord:
        """The window's record, closed now after ``step`` steps of the run."""
        wall = max(_clock() - self.start, 1e-9)
        steps = step - self.first_step
        return WindowRecord(
            run=run_id,
            window=self.index,
            first_step=self.first_step,
            last_step=step - 1,
            steps=steps,
            traced=self.traced,
            stats=window_stats(self.durations),
            period_ms=round(1000.0 * wall / steps, 4) if steps else 0.0,
            in_run=round(self.in_run / wall, 4),
            host_cpu=round((time.process_time() - self.start_cpu) / wall, 4),
            sample=sample,
            time=time.time(),
            partial=partial,
        )
