"""``tfprof-lite monitor DIR``: the monitoring lines of a (running or finished) run.

Contract:

* ``DIR`` is a profile directory holding ``monitor.jsonl`` (written by
  ``tfprof_lite.Monitor`` / ``ProfileContext(monitor=...)``) or the file itself.
* Without ``--follow``: a summary of the last run in the file (``--all``: of
  every run), one header line (``run <id>: level L, every N steps, finished``
  or ``... no end record (still running, or stopped abruptly)``) and the
  one-line summary (:meth:`~tfprof_lite.analysis.monitoring.MonitorSummary.to_line`);
  ``--lines`` also prints each window line first; ``--json`` prints the
  summaries as one JSON array instead.
* With ``--follow``: prints each window line as it is appended, a header line
  when a run starts and its summary line when it ends, flushed line by line,
  starting with the records already in the file (``--new-only``: only new
  ones). It waits for ``DIR`` and then for its ``monitor.jsonl`` to appear
  (started before the run creates them) and stops on Ctrl-C (exit 0),
  after the next ``end`` record with ``--until-end``, or after
  ``--idle-timeout`` seconds without new records. When the last record read
  ended its run and nothing new comes, it says so once on stderr (the run
  finished; it waits for a new run to append to the file; how to stop).
* Lines use the run's own level unless ``--level`` is given. A missing file is
  an error (exit 1) without ``--follow``. No TensorFlow is needed.

Register with ``COMMANDS.update(MONITOR_COMMANDS)`` in :mod:`tfprof_lite.cli`.
"""

from __future__ import annotations

import json
from typing import Any

import click

from tfprof_lite.analysis.monitor_log import MonitorRun, follow, monitor_path, read_runs
from tfprof_lite.analysis.monitoring import MonitorSummary, WindowRecord
from tfprof_lite.base.writing import write_stdout
from tfprof_lite.cli.common import TfprofCommand
from tfprof_lite.errors import InvalidInputError

__all__ = ["MONITOR_COMMANDS", "follow_lines", "monitor_command", "run_header"]


def run_header(run: str, start: dict[str, Any], finished: bool | None) -> str:
    """``run <id>: level L, every N steps, sampled every K windows[, state]``."""
    level, every = start.get("level", "?"), start.get("every", "?")
    sample = start.get("sample_every", "?")
    text = f"run {run}: level {level}, every {every} steps, sampled every {sample} windows"
    if finished is None:
        return text
    return text + (
        ", finished" if finished else ", no end record (still running, or stopped abruptly)"
    )


def _print_run(run: MonitorRun, level: int | None, lines: bool) -> None:
    out = [run_header(run.run, run.start, run.finished)]
    if lines:
        out += [w.to_line(level or run.level) for w in run.windows]
    out.append(run.summary().to_line())
    write_stdout("\n".join(out) + "\n")


def _summaries(path: str, every_run: bool, level: int | None, lines: bool, as_json: bool) -> None:
    log = read_runs(path)
    runs = log.runs if every_run else log.runs[-1:]
    if not runs:
        raise InvalidInputError(f"{log.path}: no monitoring records")
    if as_json:
        docs = [dict(run.summary().to_dict(), finished=run.finished) for run in runs]
        write_stdout(json.dumps(docs, indent=1) + "\n")
        return
    for run in runs:
        _print_run(run, level, lines)


def follow_lines(
    path: str,
    level: int | None = None,
    *,
    from_start: bool = True,
    until_end: bool = False,
    idle_timeout: float | None = None,
    poll: float = 0.2,
) -> int:
    """Print monitor lines as ``path`` grows (see the module docstring); returns
    the number of window lines printed."""
    levels: dict[str, int] = {}
    printed = 0
    waiting = _FinishedNote(path)
    for doc in follow(
        path, from_start=from_start, poll=poll, idle_timeout=idle_timeout, on_idle=waiting
    ):
        event, run = doc.get("event"), str(doc.get("run", ""))
        waiting.record(event, run)
        if event == "start":
            levels[run] = int(doc.get("level", 1))
            write_stdout(run_header(run, doc, None) + "\n")
        elif event == "window":
            record = WindowRecord.from_dict(doc)
            write_stdout(record.to_line(level or levels.get(run, 1)) + "\n")
            printed += 1
        elif event == "end":
            write_stdout(MonitorSummary.from_dict(doc.get("summary") or {}).to_line() + "\n")
            if until_end:
                break
    return printed


class _FinishedNote:
    """Says once on stderr, when following finds nothing new and the last record
    read ended its run, that the run finished (nothing more comes until a new
    run starts); an earlier run that stopped without an end record is ignored."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.ended = ""
        self.said = False

    def record(self, event: object, run: str) -> None:
        """Notes a record read from the log."""
        self.ended = run if event == "end" else ""
        self.said = False

    def __call__(self) -> None:
        if self.said or not self.ended:
            return
        self.said = True
        click.echo(
            f"tfprof-lite monitor: run {self.ended} has finished (its end record is in "
            f"{monitor_path(self.path)}); waiting for a new run to append to it: Ctrl-C "
            "stops (--until-end stops after a run's end, --idle-timeout SEC when idle)",
            err=True,
        )


@click.command(
    "monitor",
    cls=TfprofCommand,
    takes_query_options=False,
    short_help="Live or finished monitoring lines of a run.",
)
@click.argument("target", metavar="DIR", type=click.Path())
@click.option("--follow", "-f", "following", is_flag=True, help="Keep printing new lines.")
@click.option("--new-only", is_flag=True, help="With --follow: skip the lines already written.")
@click.option("--until-end", is_flag=True, help="With --follow: stop after the run's end.")
@click.option("--idle-timeout", type=float, default=None, metavar="SEC", help="Stop when idle.")
@click.option("--all", "every_run", is_flag=True, help="Summarise every run, not the last.")
@click.option("--lines", is_flag=True, help="Print every window line before the summary.")
@click.option("--level", type=click.IntRange(1, 2), default=None, help="Line detail (1 or 2).")
@click.option("--json", "as_json", is_flag=True, help="Print the summaries as JSON.")
def monitor_command(
    target: str,
    following: bool,
    new_only: bool,
    until_end: bool,
    idle_timeout: float | None,
    every_run: bool,
    lines: bool,
    level: int | None,
    as_json: bool,
) -> None:
    """Show the monitoring of a run (DIR/monitor.jsonl): a summary, or --follow it live.

    \b
    Examples:
      tfprof-lite monitor tfprof_out
      tfprof-lite monitor tfprof_out --follow        # Ctrl-C stops
      tfprof-lite monitor tfprof_out --all --lines
    """
    if not following:
        _summaries(monitor_path(target), every_run, level, lines, as_json)
        return
    try:
        follow_lines(
            target, level, from_start=not new_only, until_end=until_end, idle_timeout=idle_timeout
        )
    except KeyboardInterrupt:
        return


MONITOR_COMMANDS: dict[str, click.Command] = {"monitor": monitor_command}
