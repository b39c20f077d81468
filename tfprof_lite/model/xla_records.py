"""A compiled XLA program of a profile, and the programs of an XSpace file alone.

Contract: :class:`ProgramRecord` is one program: its ``program_id`` (None when
the file gives none), module name and serialized ``HloProto`` (parsed only when
a tool asks). :func:`read_program_records` reads the programs of an XSpace file
through the bounded reader without decoding its events
(:func:`tfprof_lite.proto.xplane_meta.hlo_programs`): what a tool that needs
the programs and not their times (the memory viewer) reads. Imports no NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ProgramRecord", "read_program_records"]


@dataclass(frozen=True)
class ProgramRecord:
    """One compiled program: ``program_id`` (None when the file gives none),
    its module name and its serialized ``HloProto``."""

    program_id: int | None
    module: str
    hlo: bytes


def read_program_records(path: str, limit: int | str | None = None) -> list[ProgramRecord]:
    """The programs of the XSpace file ``path``, in the file's order.

    Raises:
        InvalidInputError: the file cannot be read, or is not an XSpace.
    """
    from tfprof_lite.base.reading import read_input
    from tfprof_lite.proto.xplane_meta import hlo_programs

    what = "an XSpace (*.xplane.pb)"
    data = read_input(path, what, limit)
    return [ProgramRecord(p, name, hlo) for p, name, hlo in hlo_programs(data, path)]
