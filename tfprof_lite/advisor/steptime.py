"""StepTimeChecker: per-step wall time versus op time, and its spread.

Reports, from :func:`tfprof_lite.analysis.steptime.step_times`: the wall time
statistics over the traced steps (mean, standard deviation, min, max, p50,
p90), the mean parallelism (op time / busy time), and a warning when the
slowest step is more than ``slow_factor`` (default 1.5) times the median.
Steps of an XSpace cut by the trace are named and left out; an XSpace without
a whole step says why (no steps found). No entry without traced steps.
"""

from __future__ import annotations

from tfprof_lite.advisor.base import Checker
from tfprof_lite.analysis.steptime import complete, step_times
from tfprof_lite.base.units import format_time
from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.model.profile import ProfileModel

__all__ = ["StepTimeChecker"]


class StepTimeChecker(Checker):
    """Step-time statistics and outlier steps."""

    name = "StepTimeChecker"
    option_names = ("slow_factor",)

    def configure(self, options: dict[str, str]) -> None:
        """Read ``slow_factor``."""
        text = options.get("slow_factor", "1.5")
        try:
            self.slow_factor = float(text)
        except ValueError as err:
            raise InvalidOptionError(
                f"{self.name}: slow_factor must be a number, got {text!r}"
            ) from err

    def check(self, model: ProfileModel) -> list[str] | None:
        """The reports; None when the profile has no traced steps."""
        report = step_times(model)
        if not report.steps:
            return None
        whole = complete(report)
        cut = [f"step {s.step} left out: {s.cut}" for s in report.steps if s.cut]
        if not whole:
            return [f"no whole steps, no step time statistics ({model.steps_source})", *cut]
        mean_par = sum(s.parallelism for s in whole) / len(whole)
        stats = (
            f"mean {format_time(int(report.mean_micros))}, "
            f"stddev {format_time(int(report.stddev_micros))}, "
            f"min {format_time(report.min_micros)}, max {format_time(report.max_micros)}, "
            f"p50 {format_time(int(report.p50_micros))}, p90 {format_time(int(report.p90_micros))}"
        )
        lines = [
            f"steps: {len(whole)}, wall time {stats}",
            f"mean parallelism (op time / busy time): {mean_par:.2f}",
            *cut,
        ]
        for s in whole:
            if report.p50_micros and s.wall_micros > self.slow_factor * report.p50_micros:
                lines.append(
                    f"slow step {s.step}: {format_time(s.wall_micros)} is "
                    f"{s.wall_micros / report.p50_micros:.1f}x the median"
                )
        return lines
