"""InputPipelineChecker: is the program waiting on input?

Reports, from :func:`tfprof_lite.analysis.input_pipeline.input_pipeline`: the
verdict with the mean share of step time spent in input ops, one line per step,
the top waiting ops and concrete fixes (prefetch, parallel map, cache); for an
XSpace also the parts of the step and tf.data's slowest stage, with the fix
that fits it. Options:
``top`` (how many waiting ops to list, default 3). No entry without traced steps.
"""

from __future__ import annotations

from tfprof_lite.advisor.base import Checker
from tfprof_lite.analysis.input_pipeline import input_pipeline, parts_text
from tfprof_lite.base.units import format_time
from tfprof_lite.model.profile import ProfileModel

__all__ = ["InputPipelineChecker"]


class InputPipelineChecker(Checker):
    """Per-step input waiting, input-bound verdict and fixes."""

    name = "InputPipelineChecker"
    option_names = ("top",)

    def configure(self, options: dict[str, str]) -> None:
        """Read ``top``."""
        self.top = self.int_option(options, "top", 3)

    def check(self, model: ProfileModel) -> list[str] | None:
        """The reports; None when the profile has no traced steps."""
        report = input_pipeline(model, top=self.top)
        if not report.steps:
            return None
        lines = [f"{report.verdict}: {100 * report.mean_share:.1f}% of step time waits on input"]
        lines += [
            f"step {s.step}: input {format_time(s.input_micros)} of "
            f"{format_time(s.wall_micros)} ({100 * s.input_share:.1f}%)"
            for s in report.steps
        ]
        lines += [
            f"top input op: {n} ({o}), {format_time(m)} per step" for n, o, m in report.top_ops
        ]
        if report.parts:
            lines.append(f"step parts: {parts_text(report.parts)}")
        if report.slow_stage:
            slow = report.stages[0]
            lines.append(
                f"slowest tf.data stage: {slow['name']}, {format_time(slow['self_micros'])} "
                "self time per step"
            )
        lines += [f"fix: {text}" for text in report.suggestions]
        return lines
