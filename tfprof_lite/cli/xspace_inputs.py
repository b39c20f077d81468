"""The profiler's own outputs as a command's PROFILE: XSpaces, runs, logdirs, traces.

Contract (used by :mod:`tfprof_lite.cli.inputs`):

* :func:`is_xspace` tells whether PROFILE is read as an XSpace: a file that is
  one (``*.xplane.pb``, or by content), a run folder
  (``plugins/profile/<run>/``), a logdir, or a folder with no ``profile_<step>``
  file of its own but logdirs a few levels below it (Keras'
  ``TensorBoard(log_dir=LOGDIR)`` writes ``LOGDIR/train/plugins/profile/``;
  :mod:`tfprof_lite.formats.xspace.read.runs` searches).
* :func:`load_xspace` reads the run chosen (``--run NAME``, else the newest),
  one host or every host merged. When the run was chosen among several and not
  named, one note on stderr says which was read and lists the others
  (:func:`run_note`).
* :func:`load_programs` reads the same run's and hosts' compiled XLA programs
  and step count only (:func:`tfprof_lite.formats.xspace.read.programs.load_programs`),
  for the program tools, which need no model; :func:`load_records` their
  HLO alone (the memory viewer), without decoding any event.
* :func:`refuse_chrome_traces` raises the one-line error for a Chrome trace
  (``*.trace.json.gz``, ``.json``, ``.json.gz``) given as PROFILE, naming the
  ``*.xplane.pb`` to pass instead (:mod:`tfprof_lite.formats.chrome_trace`).
* Every path printed goes through :func:`~tfprof_lite.base.shown.shown`, so a
  file name that is not UTF-8 prints.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from tfprof_lite.base.shown import shown
from tfprof_lite.errors import InvalidInputError

if TYPE_CHECKING:
    from tfprof_lite.formats.xspace.read.runs import Run, RunPick
    from tfprof_lite.model.xla_programs import XlaPrograms
    from tfprof_lite.model.xla_records import ProgramRecord
    from tfprof_lite.profiler import Profiler

__all__ = [
    "NOTE_PREFIX",
    "is_xspace",
    "load_programs",
    "load_records",
    "load_xspace",
    "refuse_chrome_traces",
    "run_note",
]

#: The start of a note the commands print on stderr.
NOTE_PREFIX = "tfprof-lite:"
#: The most other runs a note names.
_NOTE_RUNS = 4


def is_xspace(path: str) -> bool:
    """Whether PROFILE ``path`` is read as an XSpace: what the input table
    (:func:`tfprof_lite.formats.resolve.identify`) says it holds."""
    from tfprof_lite.formats import resolve

    if not os.path.exists(path):
        return False
    try:
        return resolve.identify(path).name in resolve.XSPACE_FORMATS
    except InvalidInputError:  # a directory with nothing: the saved-profile path says so
        return False


def _other(run: Run, chosen: Run) -> str:
    if run.logdir == chosen.logdir:
        return shown(run.name)
    return f"{shown(run.name)} in {shown(run.logdir)}"


def run_note(pick: RunPick) -> str | None:
    """The note saying which run was read and which others there are (None: no others)."""
    if pick.run is None or not pick.others:
        return None
    newest_first = sorted(pick.others, key=lambda r: r.name, reverse=True)
    others = [_other(r, pick.run) for r in newest_first]
    listed = ", ".join(others[:_NOTE_RUNS])
    if len(others) > _NOTE_RUNS:
        listed += f", and {len(others) - _NOTE_RUNS} more"
    count = f"{len(others)} other run{'s' if len(others) > 1 else ''}"
    return (
        f"{NOTE_PREFIX} reading run {shown(pick.run.name)} of {shown(pick.run.logdir)} "
        f"({count}: {listed}; pick one with --run NAME or by passing its folder)"
    )


def _hosts(path: str, run: str | None, host: str | None) -> dict[str, str]:
    """The host files of the run chosen (a note names the others, as for every command)."""
    from tfprof_lite.formats.xspace.read import runs as xspace_runs

    pick = xspace_runs.pick_run(path, run)
    note = run_note(pick) if run is None else None
    if note:
        sys.stderr.write(note + "\n")
        sys.stderr.flush()
    return xspace_runs.pick_host(pick.hosts, host, path)


def load_programs(path: str, run: str | None, host: str | None) -> tuple[XlaPrograms | None, int]:
    """The compiled XLA programs of ``path``'s run (every host's together) and the
    most steps a host has (see the module docstring)."""
    from tfprof_lite.formats.xspace.read.programs import load_programs as load
    from tfprof_lite.model.xla_programs import merge_programs

    found = [load(file) for file in _hosts(path, run, host).values()]
    return merge_programs([programs for programs, _ in found]), max(s for _, s in found)


def load_records(path: str, run: str | None, host: str | None) -> list[ProgramRecord]:
    """The compiled programs of ``path``'s run, every host's (their HLO only: no
    event is decoded, :func:`tfprof_lite.formats.xspace.read.records.read_program_records`)."""
    from tfprof_lite.formats.xspace.read.records import read_program_records

    return [r for f in _hosts(path, run, host).values() for r in read_program_records(f)]


def load_xspace(path: str, run: str | None, host: str | None, by_name: bool = False) -> Profiler:
    """One host's XSpace of ``path``, or every host's merged like the tasks of a cluster.

    Args:
        path: a file, run folder, logdir or a folder above logdirs.
        run: the run to read (``--run``; default the newest, with a note when
            there are others).
        host: the host to read (``--host``; default all, merged).
        by_name: merge the hosts' same-named nodes (``--by-name``).
    """
    from tfprof_lite.profiler import Profiler

    hosts = _hosts(path, run, host)
    if len(hosts) == 1:
        (file,) = hosts.values()
        return Profiler.load(file)
    from tfprof_lite.cluster import merge, xspace_tasks

    return merge(xspace_tasks(hosts), by_name=by_name)


def refuse_chrome_traces(paths: Iterable[str]) -> None:
    """Raises the one-line error for the first of ``paths`` that is a Chrome trace.

    Raises:
        InvalidInputError: naming what to pass instead.
    """
    from tfprof_lite.formats.chrome_trace import chrome_trace_error

    for path in paths:
        error = chrome_trace_error(path)
        if error is not None:
            raise error
