"""The advisor: checkers that turn a profile into advice (an AdviceProto).

Contract:

* :data:`CHECKERS` maps each checker name to its class (one module per checker):
  ``AcceleratorUtilizationChecker``, ``OperationChecker`` and
  ``ExpensiveOperationChecker`` reproduce TensorFlow 2.21's reports byte for byte;
  ``JobChecker`` (never released by TF, which produces no entry for it) is
  tfprof_lite's own per-job/task time and imbalance report, present only for
  profiles spanning at least two tasks; ``InputPipelineChecker``,
  ``StepTimeChecker`` and ``MemoryChecker`` (peak memory per step and what is
  live then) are ours too.
* :func:`run_advisor` validates the options, runs the named checkers in
  :data:`CHECKER_ORDER` and returns an :class:`AdvisorResult`: the AdviceProto
  and its text, ``\\n<Name>:\\n`` + one line per report for each entry (in that
  fixed order; TF's order varies per process). It prints nothing; the facade
  (``Profiler.advise``, ``tfprof_lite.advise``) and the CLI print the text.
  :func:`run_checkers` gives the same entries as a dict (checker name ->
  reports) without building the message; the HTML report uses it. See
  :mod:`tfprof_lite.advisor.runner` and ``docs/advisor/``.
* :data:`TF_DEFAULT_CHECKERS` names TensorFlow's own default set (its
  ``ALL_ADVICE``); ``tfprof-lite advise``, its shell command and the HTML report
  run every registered checker unless asked for that set.
"""

from __future__ import annotations

from tfprof_lite.advisor.accelerator import AcceleratorUtilizationChecker
from tfprof_lite.advisor.base import Checker
from tfprof_lite.advisor.expensive import ExpensiveOperationChecker
from tfprof_lite.advisor.job import JobChecker
from tfprof_lite.advisor.memory import MemoryChecker
from tfprof_lite.advisor.operation import OperationChecker
from tfprof_lite.advisor.runner import (
    CHECKER_ORDER,
    CHECKERS,
    TF_DEFAULT_CHECKERS,
    AdvisorResult,
    advisor_options,
    render_advice,
    run_advisor,
    run_checkers,
)

__all__ = [
    "CHECKERS",
    "CHECKER_ORDER",
    "AcceleratorUtilizationChecker",
    "AdvisorResult",
    "Checker",
    "ExpensiveOperationChecker",
    "JobChecker",
    "MemoryChecker",
    "OperationChecker",
    "TF_DEFAULT_CHECKERS",
    "advisor_options",
    "render_advice",
    "run_advisor",
    "run_checkers",
]
