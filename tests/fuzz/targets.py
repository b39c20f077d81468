"""Run one fuzz case in this process and classify what happened.

Outcomes:

* ``accepted``: the target ran to the end;
* ``clean``: a clean rejection, i.e. a :class:`tfprof_lite.errors.TfprofLiteError`
  from the API, or CLI exit 1/2 with one ``tfprof-lite: error:`` line on stderr and
  no traceback;
* ``other``: anything else: another exception, a CLI exit code or stderr that
  breaks the contract, a temporary file left behind, a hang (the per-input alarm)
  or, detected by :mod:`tests.fuzz.runner`, a dead or stuck worker.

Each ``other`` outcome has a signature, ``"<what> @ <where>"``: the exception type
and the innermost ``tfprof_lite`` frame (``path:function``) for exceptions, so one
bug gives one signature whatever the input.
"""

from __future__ import annotations

import os
import signal
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from tests.fuzz.cases import Case
from tfprof_lite.errors import TfprofLiteError

__all__ = [
    "Hang",
    "Outcome",
    "classify_cli",
    "cli_argv",
    "execute",
    "option_sets",
    "run_target",
    "outcome_from_exception",
    "write_files",
]

_PACKAGE_MARK = f"{os.sep}tfprof_lite{os.sep}"
_TEMP_PREFIX = ".tfprof_lite-"


class Hang(BaseException):
    """Raised by the per-input alarm (a BaseException, so ``except Exception`` in the
    code under test cannot swallow it)."""


@dataclass
class Outcome:
    """How one case ended (see the module docstring)."""

    target: str
    index: int
    status: str
    signature: str = ""
    message: str = ""
    frames: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The outcome as JSON-ready data."""
        return asdict(self)


def _frame_text(frame: traceback.FrameSummary) -> str:
    path = frame.filename
    cut = path.rfind(_PACKAGE_MARK)
    short = path[cut + 1 :] if cut >= 0 else os.path.basename(path)
    return f"{short}:{frame.lineno}:{frame.name}"


def _where(frames: list[traceback.FrameSummary]) -> str:
    """The innermost tfprof_lite frame as ``path:function`` (else the innermost frame)."""
    ours = [f for f in frames if _PACKAGE_MARK in f.filename] or frames
    if not ours:
        return "?"
    text = _frame_text(ours[-1])
    path, _line, name = text.rsplit(":", 2)
    return f"{path}:{name}"


def outcome_from_exception(case: Case, err: BaseException) -> Outcome:
    """Classify an exception raised by a target."""
    if isinstance(err, TfprofLiteError):
        return Outcome(case.target, case.index, "clean", message=_first_line(str(err)))
    frames = list(traceback.extract_tb(err.__traceback__))
    what = type(err).__name__
    if isinstance(err, Hang):  # where the alarm interrupted, not the alarm handler
        frames = frames[:-1]
    return Outcome(
        case.target,
        case.index,
        "other",
        signature=f"{what} @ {_where(frames)}",
        message=_first_line(str(err)),
        frames=[_frame_text(f) for f in frames[-6:]],
    )


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][:300] if lines else ""


def option_sets(out_dir: Path) -> list[dict[str, Any]]:
    """The view options the API targets use: no output, and a file output with many
    columns and an ordering."""
    from tfprof_lite import ProfileOptionBuilder as Builder

    quiet = Builder(Builder.time_and_memory()).with_empty_output().build()
    wide = (
        Builder(Builder.trainable_variables_parameter())
        .with_max_depth(8)
        .select(["micros", "bytes", "params", "float_ops", "occurrence", "device", "op_types"])
        .order_by("micros")
        .with_file_output(str(out_dir / "view.txt"))
        .build()
    )
    return [quiet, wide]


def _views(profiler: Any, out_dir: Path) -> None:
    for options in option_sets(out_dir):
        profiler.profile_name_scope(options)
        profiler.profile_graph(options)
        profiler.profile_operations(options)
        profiler.profile_python(options)


def _run_profile(case: Case, out_dir: Path) -> None:
    from tfprof_lite import Profiler

    profiler = Profiler.load(case.files["profile"])
    _views(profiler, out_dir)
    profiler.serialize_to_string()


def _run_build(case: Case, out_dir: Path) -> None:
    from tfprof_lite import ALL_ADVICE, Profiler

    profiler = Profiler(graph=case.files["graph"], op_log=case.files.get("op_log"))
    profiler.add_step(0, case.files["run_meta"])
    if "run_meta_1" in case.files:
        profiler.add_step(1, case.files["run_meta_1"])
    _views(profiler, out_dir)
    profiler.advise(ALL_ADVICE)
    profiler.serialize_to_string()


def cli_argv(case: Case, directory: Path) -> list[str]:
    """The CLI arguments of ``case`` with its files in ``directory``."""
    return [arg.replace("{dir}", str(directory)) for arg in case.argv]


def write_files(case: Case, directory: Path) -> None:
    """Write the case's input files into ``directory``."""
    for name, data in case.files.items():
        (directory / name).write_bytes(data)


def classify_cli(case: Case, code: int, stderr: str) -> Outcome:
    """Classify a CLI run: exit 0 is accepted; exit 1 or 2 with exactly one
    ``tfprof-lite: error:`` line on stderr (and no traceback) is a clean rejection."""
    if code == 0:
        return Outcome(case.target, case.index, "accepted")
    lines = stderr.splitlines()
    message = _first_line(stderr)
    if "Traceback" in stderr:
        what = "CliTraceback"
    elif code not in (1, 2):
        what = f"CliExit{code}"
    elif len(lines) != 1 or not lines[0].startswith("tfprof-lite: error: "):
        what = "CliStderrNotOneErrorLine"
    else:
        return Outcome(case.target, case.index, "clean", message=message)
    return Outcome(case.target, case.index, "other", signature=f"{what} @ cli", message=message)


def _run_cli(case: Case, out_dir: Path) -> Outcome:
    from click.testing import CliRunner

    from tfprof_lite.cli import main

    write_files(case, out_dir)
    runner = CliRunner()
    with runner.isolation() as (_stdout, stderr, _output):
        code = main(cli_argv(case, out_dir))
    return classify_cli(case, code, stderr.getvalue().decode("utf-8", "replace"))


_API: dict[str, Callable[[Case, Path], None]] = {"profile": _run_profile, "build": _run_build}


@contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    def _fire(_signum: int, _frame: Any) -> None:
        raise Hang(f"no result after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, _fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _leftovers(out_dir: Path) -> list[str]:
    return sorted(p.name for p in out_dir.iterdir() if p.name.startswith(_TEMP_PREFIX))


def run_target(case: Case, out_dir: Path) -> Outcome:
    """Run ``case`` without any guard: exceptions of the code under test propagate
    (how a reproducer is replayed). API runs that return are ``accepted``."""
    if case.target == "cli":
        return _run_cli(case, out_dir)
    if case.target == "native":
        from tests.fuzz.native import run_native

        return Outcome(case.target, case.index, run_native(case))
    if case.target == "xspace":
        from tests.fuzz.xspace import run_xspace

        return Outcome(case.target, case.index, run_xspace(case))
    _API[case.target](case, out_dir)
    return Outcome(case.target, case.index, "accepted")


def execute(case: Case, out_dir: Path, timeout: float) -> Outcome:
    """Run ``case`` with ``out_dir`` (empty) as scratch space, within ``timeout`` s."""
    try:
        with _alarm(timeout):
            outcome = run_target(case, out_dir)
    except (Exception, Hang, SystemExit) as err:
        outcome = outcome_from_exception(case, err)
    left = _leftovers(out_dir)
    if left and outcome.status != "other":
        outcome = Outcome(
            case.target,
            case.index,
            "other",
            signature=f"LeftoverTempFile @ {case.target}",
            message=f"left behind after a {outcome.status} run: {', '.join(left)}",
        )
    return outcome
