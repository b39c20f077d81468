"""The compiled XLA programs of a profile and the time each of their instructions ran.

What the XLA program tools (op profile, roofline, memory viewer:
:mod:`tfprof_lite.xla.program`) read of an XSpace, kept on the model as
:class:`XlaPrograms` (``ProfileModel.xla_programs``; ``None`` for a profile
without HLO programs). Built once when the file is opened
(:mod:`tfprof_lite.formats.xspace.read.programs`), from every event in
the window, whether or not it falls inside a step:

* ``programs``: each program of the ``/host:metadata`` plane (its
  ``program_id``, module name and serialized ``HloProto``, parsed only when a
  tool asks).
* ``ops``: one row per (program, instruction, device) that ran, in columns:
  ``occurrences``, ``time_ps`` (wall time of its events) and ``self_ps`` (less
  the time of other XLA op events nested in them on the same thread, as a
  CPU ``while`` holds its body's ops). On a GPU the events are the kernels and
  copies :class:`~tfprof_lite.model.xla_ops.XlaOpIndex` maps to an instruction
  (command buffers included); an occurrence is one launch (the events of one
  ``correlation_id``). On a CPU (JAX, TF with XLA on the host) they are the
  host events with an ``hlo_op`` stat; each is one occurrence.
* ``runs``: per program, how often it ran: the distinct ``run_id`` of its host
  op events where they have one, else the most common occurrence count of its
  instructions (a ``run_id`` of -1, as TensorFlow's XLA launches give, is
  no id).
* ``devices``: each GPU plane's capabilities (its stats: clock, SM count,
  memory bandwidth, compute capability...), for peak FLOP rates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tfprof_lite.model.xla_kinds import HloOp
from tfprof_lite.model.xla_records import ProgramRecord

__all__ = [
    "DeviceCaps",
    "OpTimes",
    "ProgramRecord",
    "XlaPrograms",
    "merge_programs",
    "programs_of",
]

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class DeviceCaps:
    """A device plane's capabilities (0 / ``""`` where the file does not say).

    ``clock_khz``, ``cores`` (SMs), ``memory_bandwidth`` (bytes/s), ``memory_size``
    (bytes), ``cc_major``/``cc_minor`` (CUDA compute capability), and the plane's
    own ``peak_tflops`` / ``peak_hbm_gbps`` when the profiler wrote them.
    """

    plane: str
    ordinal: int
    model: str = ""
    vendor: str = ""
    clock_khz: float = 0.0
    cores: int = 0
    memory_bandwidth: float = 0.0
    memory_size: int = 0
    cc_major: int = 0
    cc_minor: int = 0
    peak_tflops: float = 0.0
    peak_hbm_gbps: float = 0.0


@dataclass
class OpTimes:
    """Per (program, instruction, device) timing rows, in parallel columns.

    ``program``: the row in :attr:`XlaPrograms.programs`; ``device``: the GPU
    ordinal, -1 for the host; ``hlo``: the instruction as the kernel views
    describe it (category, framework op type, scope, source).
    """

    program: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    name: list[str] = field(default_factory=list)
    device: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    occurrences: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    time_ps: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    self_ps: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    hlo: list[HloOp] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.name)


@dataclass
class XlaPrograms:
    """The programs of a profile, the time of their instructions and the devices
    they ran on (see the module docstring)."""

    programs: list[ProgramRecord]
    ops: OpTimes
    runs: I64
    devices: list[DeviceCaps]
    window_ps: int = 0

    def program_time_ps(self) -> I64:
        """Per program, the self time of its instructions summed (its kernel time
        on a GPU)."""
        out = np.zeros(len(self.programs), dtype=np.int64)
        np.add.at(out, self.ops.program, self.ops.self_ps)
        return out


def programs_of(model: object) -> XlaPrograms | None:
    """The :class:`XlaPrograms` a loaded model holds (``ProfileModel.xla_programs``),
    or None: the profile has no XLA programs (not an XSpace, or none in it)."""
    found = getattr(model, "xla_programs", None)
    return found if isinstance(found, XlaPrograms) else None


def merge_programs(parts: list[XlaPrograms | None]) -> XlaPrograms | None:
    """Several hosts' programs as one (their rows concatenated; None if none has any)."""
    found = [p for p in parts if p is not None]
    if len(found) <= 1:
        return found[0] if found else None
    offsets = np.cumsum([0] + [len(p.programs) for p in found[:-1]])
    ops = OpTimes(
        program=np.concatenate([p.ops.program + o for p, o in zip(found, offsets, strict=True)]),
        name=[n for p in found for n in p.ops.name],
        device=np.concatenate([p.ops.device for p in found]),
        occurrences=np.concatenate([p.ops.occurrences for p in found]),
        time_ps=np.concatenate([p.ops.time_ps for p in found]),
        self_ps=np.concatenate([p.ops.self_ps for p in found]),
        hlo=[h for p in found for h in p.ops.hlo],
    )
    return XlaPrograms(
        [r for p in found for r in p.programs], ops,
        np.concatenate([p.runs for p in found]), [d for p in found for d in p.devices],
        max(p.window_ps for p in found),
    )  # fmt: skip
