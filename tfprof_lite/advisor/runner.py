"""Run the advisor: options in, checkers run, advice and its text returned.

Contract of :func:`run_advisor` (behind ``Profiler.advise``, ``tfprof_lite.advise``,
``tfprof-lite advise`` and the HTML report):

* ``options`` maps checker names to option dicts (TF's ``ALL_ADVICE`` shape), or is
  an AdvisorOptionsProto (ours, TensorFlow's, or its bytes), or ``None`` (no
  checker). Names are validated against :data:`CHECKERS`; an unknown name raises
  :class:`~tfprof_lite.errors.InvalidOptionError` naming the valid ones (TF
  silently ignores it). Option keys and values must be strings and are validated
  by each checker (TF's Python helper crashes on any non-empty option dict).
* Every checker is built (options validated) before any runs; then the named ones
  run in :data:`CHECKER_ORDER`. A checker whose ``check`` returns None gets no
  entry; any other gets one, even with no reports.
* Returns an :class:`AdvisorResult`: the AdviceProto
  ``{checkers: {name: {reports: [...]}}}`` and its text (:func:`render_advice`):
  for each entry, in :data:`CHECKER_ORDER`, ``\\n<Name>:\\n`` then each report
  + ``\\n``. Nothing is printed here: the facade and the CLI write the text to
  stdout in one write. TF prints in protobuf map order, which changes from
  process to process; each section is byte-identical.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tfprof_lite.advisor.accelerator import AcceleratorUtilizationChecker
from tfprof_lite.advisor.base import Checker
from tfprof_lite.advisor.expensive import ExpensiveOperationChecker
from tfprof_lite.advisor.input_pipeline import InputPipelineChecker
from tfprof_lite.advisor.job import JobChecker
from tfprof_lite.advisor.memory import MemoryChecker
from tfprof_lite.advisor.operation import OperationChecker
from tfprof_lite.advisor.step_lines import group_step_lines
from tfprof_lite.advisor.steptime import StepTimeChecker
from tfprof_lite.advisor.xla_compat import XlaCompatibilityChecker
from tfprof_lite.errors import InvalidOptionError
from tfprof_lite.model.profile import ProfileModel

__all__ = [
    "CHECKERS",
    "CHECKER_ORDER",
    "TF_DEFAULT_CHECKERS",
    "AdvisorResult",
    "advisor_options",
    "render_advice",
    "run_advisor",
    "run_checkers",
]

#: Checker name -> class, in the fixed run and print order (TF's ``kCheckers``).
CHECKERS: dict[str, type[Checker]] = {
    cls.name: cls
    for cls in (
        AcceleratorUtilizationChecker,
        OperationChecker,
        ExpensiveOperationChecker,
        JobChecker,
        InputPipelineChecker,
        StepTimeChecker,
        MemoryChecker,
        XlaCompatibilityChecker,  # registered, but not in ALL_ADVICE (name it to run it)
    )
}

#: The order checkers run in and their entries print in.
CHECKER_ORDER: tuple[str, ...] = tuple(CHECKERS)

#: TensorFlow's own default set (the names of its ``ALL_ADVICE``), in CHECKER_ORDER.
#: TF produces no entry for ``JobChecker``; ours reports only multi-task profiles,
#: so on a single-task profile these give TF's three sections.
TF_DEFAULT_CHECKERS: tuple[str, ...] = (
    "AcceleratorUtilizationChecker",
    "OperationChecker",
    "ExpensiveOperationChecker",
    "JobChecker",
)


def _unknown_checker(name: object) -> InvalidOptionError:
    valid = ", ".join(sorted(CHECKERS))
    hint = ""
    if isinstance(name, str):
        import difflib  # only for a misspelt name

        close = difflib.get_close_matches(name, list(CHECKERS), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
    return InvalidOptionError(f"unknown advisor checker {name!r}{hint}; valid checkers: {valid}")


def _checker_options(name: str, value: object) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise InvalidOptionError(
            f"options of {name} must be a dict of strings, got {type(value).__name__}"
        )
    for key, item in value.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise InvalidOptionError(
                f"options of {name} must map strings to strings, got {key!r}: {item!r}"
            )
    return dict(value)


def advisor_options(options: Any) -> dict[str, dict[str, str]]:
    """Normalize advisor options to ``{checker name: {key: value}}``.

    Raises:
        InvalidOptionError: not a mapping / AdvisorOptionsProto, an unknown checker
            name, or option keys / values that are not strings.
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        if not isinstance(options, (bytes, bytearray, memoryview)) and not hasattr(
            options, "DESCRIPTOR"
        ):
            raise InvalidOptionError(
                "advisor options must be a dict of checker name -> options dict "
                f"(like ALL_ADVICE) or an AdvisorOptionsProto, got {type(options).__name__}"
            )
        from tfprof_lite.proto import messages as pb
        from tfprof_lite.proto.codec import parse

        message = parse(pb.AdvisorOptionsProto, options, "advisor options")
        options = {name: dict(opt.options) for name, opt in message.checkers.items()}
    out: dict[str, dict[str, str]] = {}
    for name, value in options.items():
        if name not in CHECKERS:
            raise _unknown_checker(name)
        out[name] = _checker_options(name, value)
    return out


def render_advice(advice: Any) -> str:
    """The text the advisor prints for an AdviceProto (entries in CHECKER_ORDER)."""
    parts: list[str] = []
    for name in CHECKER_ORDER:
        if name in advice.checkers:
            parts.append(f"\n{name}:\n")
            parts.extend(f"{report}\n" for report in advice.checkers[name].reports)
    return "".join(parts)


@dataclass(frozen=True)
class AdvisorResult:
    """What one advisor run produced.

    Attributes:
        advice: the AdviceProto, one entry per checker that produced one.
        text: the advice as tfprof prints it (:func:`render_advice`); empty when
            no checker produced an entry.
    """

    advice: Any
    text: str


def run_checkers(model: ProfileModel, options: Any, per_step: bool = False) -> dict[str, list[str]]:
    """Checker name -> its reports, for each checker named in ``options`` that
    produced an entry, in :data:`CHECKER_ORDER` (what :func:`run_advisor` puts
    in the AdviceProto; no protobuf message is built). Per-step lines are
    grouped as step ranges unless ``per_step`` (see the module docstring).

    Raises:
        InvalidOptionError: unknown checker name or invalid checker options.
    """
    wanted = advisor_options(options)
    if per_step and "MemoryChecker" in wanted:
        wanted["MemoryChecker"].setdefault("per_step", "true")
    checkers = [CHECKERS[name](wanted[name]) for name in CHECKER_ORDER if name in wanted]
    found: dict[str, list[str]] = {}
    for checker in checkers:
        reports = checker.check(model)
        if reports is not None:
            found[checker.name] = list(reports) if per_step else group_step_lines(list(reports))
    return found


def run_advisor(model: ProfileModel, options: Any, per_step: bool = False) -> AdvisorResult:
    """Run the checkers named in ``options`` on ``model``; print nothing.

    Args:
        model: the profile.
        options: checker name -> options dict (e.g. ``ALL_ADVICE``), an
            AdvisorOptionsProto, or None.
        per_step: keep every per-step line (default: grouped as step ranges).

    Returns:
        The AdviceProto and the text the facade prints for it.

    Raises:
        InvalidOptionError: unknown checker name or invalid checker options.
    """
    found = run_checkers(model, options, per_step)
    from tfprof_lite.proto import messages as pb

    advice = pb.AdviceProto()
    for name, reports in found.items():
        advice.checkers.get_or_create(name).reports.extend(reports)
    return AdvisorResult(advice, render_advice(advice))
