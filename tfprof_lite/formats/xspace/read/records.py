"""The compiled XLA programs of an XSpace file alone: read without decoding
its events (:func:`tfprof_lite.formats.xspace.wire.meta.hlo_programs`), what a tool that
needs the programs and not their times (the memory viewer) reads. Imports no NumPy.
"""

from __future__ import annotations

from tfprof_lite.model.xla_records import ProgramRecord

__all__ = ["read_program_records"]


def read_program_records(path: str, limit: int | str | None = None) -> list[ProgramRecord]:
    """The programs of the XSpace file ``path``, in the file's order.

    Raises:
        InvalidInputError: the file cannot be read, or is not an XSpace.
    """
    from tfprof_lite.base.reading import read_input
    from tfprof_lite.formats.xspace.wire.meta import hlo_programs

    what = "an XSpace (*.xplane.pb)"
    data = read_input(path, what, limit)
    return [ProgramRecord(p, name, hlo) for p, name, hlo in hlo_programs(data, path)]
