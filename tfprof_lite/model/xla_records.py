"""A compiled XLA program of a profile, and the programs of an XSpace file alone.

Contract: :class:`ProgramRecord` is one program: its ``program_id`` (None when
the file gives none), module name and serialized ``HloProto`` (parsed only when
a tool asks). For an XSpace file,
:func:`tfprof_lite.formats.xspace.read.records.read_program_records` reads the programs
through the bounded reader without decoding its events
(:func:`tfprof_lite.formats.xspace.wire.meta.hlo_programs`): what a tool that needs
the programs and not their times (the memory viewer) reads. Imports no NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ProgramRecord"]


@dataclass(frozen=True)
class ProgramRecord:
    """One compiled program: ``program_id`` (None when the file gives none),
    its module name and its serialized ``HloProto``."""

    program_id: int | None
    module: str
    hlo: bytes
