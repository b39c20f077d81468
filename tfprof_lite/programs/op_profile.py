"""The op profile of a profile's XLA programs: time, FLOPs, bytes and roofline per op.

Contract: :func:`op_profile` joins, for every HLO instruction that ran
(:class:`~tfprof_lite.model.xla_programs.XlaPrograms`: occurrences and time over
the whole window), its cost per occurrence (:func:`tfprof_lite.programs.cost.program_cost`)
and the peaks of the device it ran on (:mod:`tfprof_lite.programs.peaks`) into
:class:`OpRow` records:

* totals over its occurrences: ``time_ps`` (its events' wall time), ``self_ps``
  (less the XLA ops nested in them), ``flops``, ``bytes_accessed``;
* rates over the self time: ``flop_rate`` (FLOP/s), ``bandwidth`` (bytes/s),
  ``intensity`` = FLOPs / byte;
* against the roofline of its unit (``unit``: the tensor cores of its input
  type for matrix work, the vector units else): ``bound_by`` is ``compute``
  when its intensity is at or above the ridge point (peak FLOP/s / peak
  bytes/s), else ``memory`` (``unknown`` without peaks); ``peak_fraction`` is
  the achieved rate of that resource over its peak; ``roofline_ps`` the time
  its FLOPs and bytes need at the peaks (the larger of the two); ``headroom_ps``
  = self time - roofline time (never below 0): what it would save at its bound.

:class:`ProgramRow` gives each program's runs, FLOPs and bytes per run (XLA's
``cost_analysis`` of the whole program) and its ops' self time.
:class:`OpProfile` holds both, the device and the step count (for the savings
per step); :mod:`tfprof_lite.programs.op_profile_text` lays it out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tfprof_lite.model.xla_kinds import HloOp
from tfprof_lite.model.xla_programs import DeviceCaps, ProgramRecord, XlaPrograms
from tfprof_lite.programs.cost import OpCost, program_cost
from tfprof_lite.programs.hlo import Program, parsed, program_label
from tfprof_lite.programs.peaks import Peaks, gpu_peaks, unit_of

__all__ = ["OpProfile", "OpRow", "ProgramRow", "op_profile", "program_label"]

_PS = 1e-12


@dataclass
class OpRow:
    """One HLO instruction of one program on one device (see the module docstring)."""

    program: str
    program_id: int | None
    name: str
    category: str
    op_type: str
    scope: str
    source: str
    device: int
    occurrences: int
    time_ps: int
    self_ps: int
    flops: float
    bytes_accessed: float
    unit: str = "fp32"
    peak_flops: float | None = None
    peak_bandwidth: float | None = None

    @property
    def seconds(self) -> float:
        """Self time in seconds."""
        return self.self_ps * _PS

    @property
    def flop_rate(self) -> float:
        """Achieved FLOP/s over the self time (0 when it took no time)."""
        return self.flops / self.seconds if self.self_ps > 0 else 0.0

    @property
    def bandwidth(self) -> float:
        """Achieved bytes/s over the self time."""
        return self.bytes_accessed / self.seconds if self.self_ps > 0 else 0.0

    @property
    def intensity(self) -> float | None:
        """FLOPs per byte accessed (None without bytes)."""
        return self.flops / self.bytes_accessed if self.bytes_accessed > 0 else None

    @property
    def bound_by(self) -> str:
        """``compute``, ``memory`` or ``unknown`` (no peaks, or no cost)."""
        if not self.peak_flops or not self.peak_bandwidth or self.intensity is None:
            return "unknown"
        ridge = self.peak_flops / self.peak_bandwidth
        return "compute" if self.intensity >= ridge else "memory"

    @property
    def peak_fraction(self) -> float | None:
        """The achieved rate of the bounding resource over its peak."""
        bound = self.bound_by
        if bound == "compute" and self.peak_flops:
            return self.flop_rate / self.peak_flops
        if bound == "memory" and self.peak_bandwidth:
            return self.bandwidth / self.peak_bandwidth
        return None

    @property
    def roofline_ps(self) -> int | None:
        """The time its FLOPs and bytes take at the peaks (None without peaks)."""
        if not self.peak_flops or not self.peak_bandwidth:
            return None
        seconds = max(self.flops / self.peak_flops, self.bytes_accessed / self.peak_bandwidth)
        return round(seconds / _PS)

    @property
    def headroom_ps(self) -> int | None:
        """Self time less the roofline time (at least 0; None without peaks)."""
        roof = self.roofline_ps
        return None if roof is None else max(0, self.self_ps - roof)

    def to_dict(self) -> dict[str, Any]:
        """The JSON row (``time_micros``, ``flops``, ``bytes_accessed``: totals)."""
        headroom, roof = self.headroom_ps, self.roofline_ps
        return {
            "program": self.program, "program_id": self.program_id, "name": self.name,
            "category": self.category, "op_type": self.op_type, "scope": self.scope,
            "source": self.source, "device": self.device,
            "occurrences": self.occurrences, "time_micros": self.time_ps / 1e6,
            "self_time_micros": self.self_ps / 1e6, "flops": self.flops,
            "bytes_accessed": self.bytes_accessed, "flop_rate": self.flop_rate,
            "bandwidth": self.bandwidth, "intensity": self.intensity, "unit": self.unit,
            "bound_by": self.bound_by, "peak_fraction": self.peak_fraction,
            "roofline_micros": None if roof is None else roof / 1e6,
            "headroom_micros": None if headroom is None else headroom / 1e6,
        }  # fmt: skip


@dataclass
class ProgramRow:
    """One program: ``runs``, cost per run and its ops' summed self time."""

    program: str
    program_id: int | None
    runs: int
    flops_per_run: float
    bytes_accessed_per_run: float
    time_ps: int

    def to_dict(self) -> dict[str, Any]:
        """The JSON row."""
        return {
            "program": self.program, "program_id": self.program_id, "runs": self.runs,
            "flops_per_run": self.flops_per_run,
            "bytes_accessed_per_run": self.bytes_accessed_per_run,
            "time_micros": self.time_ps / 1e6,
        }  # fmt: skip


@dataclass
class OpProfile:
    """The op profile: the device's peaks, the programs, their ops and the steps."""

    peaks: Peaks
    programs: list[ProgramRow] = field(default_factory=list)
    ops: list[OpRow] = field(default_factory=list)
    steps: int = 0
    errors: list[str] = field(default_factory=list)

    @property
    def total_ps(self) -> int:
        """The ops' self time summed."""
        return sum(op.self_ps for op in self.ops)

    def by_headroom(self) -> list[OpRow]:
        """The ops with headroom, most first (then by self time)."""
        rows = [op for op in self.ops if op.headroom_ps]
        return sorted(rows, key=lambda op: (-(op.headroom_ps or 0), -op.self_ps, op.name))

    def to_dict(self) -> dict[str, Any]:
        """``{"device": {...}, "programs": [...], "ops": [...], "steps"}``."""
        peaks = self.peaks
        return {
            "device": {
                "name": peaks.name,
                "peak_flops_per_sec": peaks.headline_flops,
                "peak_bytes_per_sec": peaks.bytes_per_sec or None,
                "peak_flops_per_unit": dict(peaks.flops),
                "peaks_from": peaks.source,
            },
            "steps": self.steps,
            "programs": [p.to_dict() for p in self.programs],
            "ops": [op.to_dict() for op in self.ops],
            "errors": list(self.errors),
        }


def op_profile(xla: XlaPrograms, steps: int = 0, peaks: Peaks | None = None) -> OpProfile:
    """The op profile of ``xla`` (``steps``: the profile's step count; ``peaks``:
    the user's, else the first GPU's from its plane, else unknown)."""
    devices = {caps.ordinal: caps for caps in xla.devices}
    default = peaks or _default_peaks(xla.devices)
    out = OpProfile(default, steps=steps)
    ran = sorted(set(xla.ops.program.tolist()))
    built: dict[int, tuple[Program, dict[str, OpCost]]] = {}
    for row in ran:
        record = xla.programs[row]
        try:
            built[row] = _program(record)
        except Exception as err:  # noqa: BLE001 - one bad program must not hide the rest
            out.errors.append(f"{program_label(record.module, record.program_id)}: {err}")
    for i in range(len(xla.ops)):
        found = built.get(int(xla.ops.program[i]))
        if found is not None:
            record = xla.programs[int(xla.ops.program[i])]
            device = int(xla.ops.device[i])
            out.ops.append(_row(xla, i, record, found, peaks or _device_peaks(devices, device)))
    out.programs = _programs(xla, built)
    out.ops.sort(key=lambda op: (-op.self_ps, op.program, op.name))
    return out


def _default_peaks(devices: list[DeviceCaps]) -> Peaks:
    return gpu_peaks(devices[0]) if devices else Peaks("CPU (host)")


def _device_peaks(devices: dict[int, DeviceCaps], ordinal: int) -> Peaks:
    caps = devices.get(ordinal)
    return gpu_peaks(caps) if caps is not None else Peaks("CPU (host)")


def _program(record: ProgramRecord) -> tuple[Program, dict[str, OpCost]]:
    """The program parsed and its costs by instruction (``""``: the whole program)."""
    program = parsed(record)
    costs = program_cost(program)
    return program, {**costs.ops, "": costs.total}


def _row(
    xla: XlaPrograms, i: int, record: ProgramRecord, found: tuple[Any, ...], peaks: Peaks
) -> OpRow:
    program, costs = found
    name = xla.ops.name[i]
    cost = costs.get(name, OpCost())
    instruction = program.by_name.get(name)
    op: HloOp | None = xla.ops.hlo[i] if i < len(xla.ops.hlo) else None
    occurrences = int(xla.ops.occurrences[i])
    category = op.category if op else "other"
    unit = unit_of(category, _input_type(program, instruction), peaks.compute_capability[0])
    return OpRow(
        program=record.module,
        program_id=record.program_id,
        name=name,
        category=category,
        op_type=op.op_type if op else "",
        scope=op.scope if op else f"{record.module}/{name}",
        source=op.source if op else "",
        device=int(xla.ops.device[i]),
        occurrences=occurrences,
        time_ps=int(xla.ops.time_ps[i]),
        self_ps=int(xla.ops.self_ps[i]),
        flops=cost.flops * occurrences,
        bytes_accessed=cost.bytes_accessed * occurrences,
        unit=unit,
        peak_flops=peaks.flops_for(unit),
        peak_bandwidth=peaks.bytes_per_sec or None,
    )


def _input_type(program: Program | None, instruction: Any) -> int:
    """The element type of the first array operand of the matrix work in
    ``instruction`` (for a fusion: of the dot or convolution inside)."""
    if program is None or instruction is None:
        return 0
    target = instruction
    if instruction.opcode == "fusion":
        for comp in program.called(instruction):
            inner = [i for i in comp.instructions if i.opcode in ("dot", "convolution")]
            if inner:
                target = inner[0]
                break
    operands = program.operands(target)
    for operand in operands:
        kind = int(operand.shape.element_type)
        if kind not in (13, 14, 17):
            return kind
    return int(instruction.shape.element_type)


def _programs(xla: XlaPrograms, built: dict[int, tuple[Any, ...]]) -> list[ProgramRow]:
    times = xla.program_time_ps()
    rows = []
    for row in sorted(built, key=lambda r: -int(times[r])):
        record = xla.programs[row]
        total = built[row][1].get("", OpCost())
        rows.append(
            ProgramRow(
                program=record.module,
                program_id=record.program_id,
                runs=int(xla.runs[row]),
                flops_per_run=total.flops,
                bytes_accessed_per_run=total.bytes_accessed,
                time_ps=int(times[row]),
            )
        )
    return rows
