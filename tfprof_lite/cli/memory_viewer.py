"""``tfprof-lite memory-viewer PROFILE [--program NAME] [--json] [-o FILE.svg]``.

Contract:

* The profile comes from :mod:`tfprof_lite.cli.inputs` and must carry compiled
  XLA programs (an XSpace, or a TensorBoard logdir, of a JAX or TF-with-XLA
  run: ``ProfileModel.xla_programs``); anything else is one error line saying
  so (exit 1).
* The programs are those with a buffer assignment, or those ``--program``
  names: a module name (``jit_train_step``: every program of that name, as JAX
  compiles a function again for new shapes), ``name(program_id)`` as XProf
  writes it, or the program id. A name that matches nothing, or only programs
  without a buffer assignment, is an error listing some names (exit 1).
* Each is read by :func:`tfprof_lite.programs.buffers.program_memory` (memory
  space 0) and printed with ``to_text()``, the largest peak first; ``--json``
  prints ``{"programs": [to_dict(), ...]}`` instead.
* ``-o FILE.svg`` writes the chart of the heap over program order
  (:func:`tfprof_lite.programs.memory_chart.heap_svg`) of the program with the
  largest peak among those selected, atomically, and prints one ``Wrote`` line
  (on stderr with ``--json``, whose JSON still goes to stdout).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from tfprof_lite.base.writing import check_output_path, write_atomic, write_stdout
from tfprof_lite.cli.common import TfprofCommand, style
from tfprof_lite.cli.inputs import InputSpec, input_options, load_program_records, source_name
from tfprof_lite.cli.progress import Spinner
from tfprof_lite.errors import InvalidInputError
from tfprof_lite.model.xla_records import ProgramRecord

if TYPE_CHECKING:
    from tfprof_lite.programs.buffers import ProgramMemory

__all__ = ["MEMORY_VIEWER_COMMANDS", "memory_viewer_command", "select_programs"]

_SHOWN_NAMES = 8
_NO_PROGRAMS = (
    "holds no compiled XLA programs; pass an XSpace (*.xplane.pb) or a TensorBoard "
    "logdir from a JAX or TF-with-XLA run"
)


def _label(record: ProgramRecord) -> str:
    from tfprof_lite.programs.buffers import program_label

    return program_label(record.module, record.program_id)


def _names(records: list[ProgramRecord]) -> str:
    """The module names of ``records``, the largest program's first."""
    size: dict[str, int] = {}
    for r in records:
        size[r.module] = max(size.get(r.module, 0), len(r.hlo))
    names = sorted(size, key=lambda n: (-size[n], n))
    more = len(names) - _SHOWN_NAMES
    return ", ".join(names[:_SHOWN_NAMES]) + (f" and {more} more" if more > 0 else "")


def select_programs(records: list[ProgramRecord], name: str | None) -> list[ProgramRecord]:
    """The records ``name`` designates: a module name, ``name(program_id)`` or a
    program id; every record for None."""
    if name is None:
        return list(records)
    return [r for r in records if name in (r.module, _label(r)) or name == str(r.program_id)]


def _memories(source: str, records: list[ProgramRecord], name: str | None) -> list[ProgramMemory]:
    from tfprof_lite.programs.buffers import program_memory
    from tfprof_lite.programs.hlo import Program
    from tfprof_lite.proto.xla_program import parse_program

    chosen = select_programs(records, name)
    if not chosen:
        raise InvalidInputError(
            f"{source}: no XLA program named {name!r}; its programs: {_names(records)}"
        )
    found = []
    for record in chosen:
        parsed = parse_program(record.hlo, f"{source}: program {_label(record)}")
        if len(parsed.buffer_assignment.buffer_allocations):
            found.append(program_memory(Program(parsed), record.program_id, record.module))
    if not found:
        which = (
            f"no program named {name!r}"
            if name is not None
            else f"none of its {len(chosen)} XLA programs"
        )
        raise InvalidInputError(
            f"{source}: {which} has a buffer assignment; profile a run whose programs "
            "XLA compiled with one (a JAX or TF-with-XLA run on CPU or GPU)"
        )
    return sorted(found, key=lambda m: -m.peak_bytes)


def _write_chart(output: str, memories: list[ProgramMemory], as_json: bool) -> None:
    from tfprof_lite.base.units import format_size
    from tfprof_lite.programs.memory_chart import heap_svg

    memory = memories[0]
    write_atomic(output, heap_svg(memory))
    what = f"heap of {memory.label}, peak {format_size(memory.peak_bytes)}"
    if len(memories) > 1:
        what += f"; the largest peak of {len(memories)} programs, pick one with --program"
    stream = sys.stderr if as_json else sys.stdout
    click.echo(f"Wrote {style(output, stream, bold=True)} ({what})", err=as_json)


@click.command(
    "memory-viewer",
    cls=TfprofCommand,
    takes_query_options=False,
    short_help="XLA program memory: total, peak, buffers at the peak.",
)
@input_options
@click.option(
    "--program",
    "program_name",
    metavar="NAME",
    help="Only this program: a module name (jit_train_step), NAME(ID) or a program id.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the programs' memory as JSON.")
@click.option(
    "-o",
    "--output",
    metavar="FILE.svg",
    help="Write the chart of the heap over program order (largest peak's program).",
)
def memory_viewer_command(
    profile: tuple[str, ...],
    graph: str | None,
    run_meta: tuple[str, ...],
    op_log: str | None,
    program_name: str | None,
    as_json: bool,
    output: str | None,
) -> None:
    """The memory of each compiled XLA program of a JAX or TF-with-XLA profile,
    from its buffer assignment: the total XLA allocates, the peak of the heap
    over program order, and the buffers live at the peak with their JAX scope.

    \b
    Examples:
      tfprof-lite memory-viewer logdir/plugins/profile/RUN/host.xplane.pb
      tfprof-lite memory-viewer logdir --program jit_train_step
      tfprof-lite memory-viewer logdir --program 'jit_train_step(84048)' --json
      tfprof-lite memory-viewer logdir --program jit_train_step -o heap.svg
    """
    if output is not None:
        check_output_path(output)  # before the profile is loaded
    spec = InputSpec.from_params(profile, graph, run_meta, op_log)
    source = source_name(spec)
    records = load_program_records(spec)
    if not records:
        raise InvalidInputError(f"{source}: {_NO_PROGRAMS}")
    with Spinner("reading the programs' buffer assignments"):
        memories = _memories(source, records, program_name)
    if as_json:
        write_stdout(json.dumps({"programs": [m.to_dict() for m in memories]}, indent=1) + "\n")
    if output is not None:
        _write_chart(output, memories, as_json)
    elif not as_json:
        write_stdout("\n".join(m.to_text() for m in memories))


MEMORY_VIEWER_COMMANDS: dict[str, click.Command] = {"memory-viewer": memory_viewer_command}
