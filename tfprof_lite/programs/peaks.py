"""A device's peak FLOP rates and memory bandwidth, for rooflines.

Contract:

* :func:`gpu_peaks` turns a GPU plane's capabilities
  (:class:`~tfprof_lite.model.xla_programs.DeviceCaps`) into :class:`Peaks`:
  per unit (:data:`UNITS`), the dense FLOP rate = SM count × clock × FLOPs per SM
  per clock of that unit on that compute capability (:data:`PER_SM_CLOCK`,
  from NVIDIA's architecture whitepapers and data sheets; see
  ``docs/programs/peaks.md``); memory bandwidth = the plane's
  ``memory_bandwidth`` stat. A compute capability the table does not hold, or
  a plane without clock or SM count, leaves the FLOP rates unknown. When the
  profiler itself wrote ``peak_teraflops_per_second`` /
  ``peak_hbm_bw_gigabytes_per_second``, those win for ``fp32`` / bandwidth.
* :func:`given_peaks` is the peaks a user gives (``--peak-flops``,
  ``--peak-bandwidth``): one FLOP rate for every unit.
* :meth:`Peaks.flops_for` is the peak of one unit (falling back to ``fp32``),
  or None when unknown; :func:`unit_of` picks the unit an HLO instruction runs
  on from its category and element type: matrix work (dot, convolution and the
  fusions and library calls holding them) on the tensor cores of its input
  type (``f32`` as TF32 from compute capability 8.0, XLA's default precision
  there), everything else on the vector units (``fp32``; ``fp64`` for ``f64``).

Numbers are FLOP/s and bytes/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tfprof_lite.model.xla_programs import DeviceCaps

__all__ = ["PER_SM_CLOCK", "UNITS", "Peaks", "given_peaks", "gpu_peaks", "unit_of"]

#: The units a FLOP rate is given for.
UNITS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")

_VOLTA = {"fp64": 64, "fp32": 128, "fp16": 1024, "int8": 256}
_TURING = {"fp64": 4, "fp32": 128, "fp16": 1024, "int8": 2048}
_A100 = {"fp64": 128, "fp32": 128, "tf32": 1024, "fp16": 2048, "bf16": 2048, "int8": 4096}
_GA10X = {"fp64": 4, "fp32": 256, "tf32": 512, "fp16": 1024, "bf16": 1024, "int8": 2048}
_ADA = {**_GA10X, "fp8": 2048}
_HOPPER = {
    "fp64": 256, "fp32": 256, "tf32": 2048, "fp16": 4096, "bf16": 4096, "fp8": 8192,
    "int8": 8192,
}  # fmt: skip
_BLACKWELL = {
    "fp64": 256, "fp32": 256, "tf32": 4096, "fp16": 8192, "bf16": 8192, "fp8": 16384,
    "int8": 16384,
}  # fmt: skip

#: (major, minor) compute capability -> dense FLOPs per SM per clock, per unit.
#: Matrix units (tensor cores) for tf32/fp16/bf16/fp8/int8 (and fp64 from 8.0);
#: vector units (CUDA cores, one FMA = 2 FLOPs) for fp32.
PER_SM_CLOCK: dict[tuple[int, int], dict[str, int]] = {
    (6, 0): {"fp64": 64, "fp32": 128, "fp16": 256},
    (7, 0): _VOLTA,
    (7, 5): _TURING,
    (8, 0): _A100,
    (8, 6): _GA10X,
    (8, 7): _GA10X,
    (8, 9): _ADA,
    (9, 0): _HOPPER,
    (10, 0): _BLACKWELL,
    (12, 0): {**_ADA, "fp16": 1024, "bf16": 1024, "fp8": 2048},
}

_MATRIX = frozenset({"matmul", "convolution"})
_TENSOR_TYPES = {10: "fp16", 16: "bf16", 2: "int8", 6: "int8", 12: "fp64"}
_FP8_TYPES = frozenset({19, 20, 23, 24, 25, 28, 29, 32, 33})


@dataclass(frozen=True)
class Peaks:
    """A device's peaks: ``flops`` per unit (FLOP/s), ``bytes_per_sec`` (0:
    unknown), ``name`` (the device model) and ``source`` (how they were found)."""

    name: str
    flops: dict[str, float] = field(default_factory=dict)
    bytes_per_sec: float = 0.0
    source: str = "unknown"
    compute_capability: tuple[int, int] = (0, 0)

    def flops_for(self, unit: str) -> float | None:
        """The peak FLOP/s of ``unit`` (else of ``fp32``), None when unknown."""
        value = self.flops.get(unit) or self.flops.get("fp32")
        return float(value) if value else None

    def listed(self) -> list[tuple[str, float]]:
        """The known rates in the order a device line shows them: the 16-bit
        matrix rate first, then TF32, FP32, FP8, FP64, INT8."""
        order = ("bf16", "fp16", "tf32", "fp32", "fp8", "fp64", "int8")
        rates = [(u, self.flops[u]) for u in order if self.flops.get(u)]
        if rates and rates[0][0] == "bf16" and self.flops.get("fp16") == rates[0][1]:
            rates = [("bf16/fp16", rates[0][1]), *[r for r in rates[1:] if r[0] != "fp16"]]
        return rates

    @property
    def headline_flops(self) -> float | None:
        """The highest 16-bit or 32-bit rate, the figure a device is named by."""
        rates = [self.flops[u] for u in ("bf16", "fp16", "tf32", "fp32") if self.flops.get(u)]
        return max(rates) if rates else None


def gpu_peaks(caps: DeviceCaps) -> Peaks:
    """The peaks of a GPU plane (see the module docstring)."""
    cc = (caps.cc_major, caps.cc_minor)
    per_sm = PER_SM_CLOCK.get(cc) or PER_SM_CLOCK.get((caps.cc_major, 0))
    name = caps.model or caps.plane
    flops: dict[str, float] = {}
    source = "unknown"
    if per_sm and caps.cores and caps.clock_khz:
        clock_hz = caps.clock_khz * 1e3
        flops = {unit: rate * caps.cores * clock_hz for unit, rate in per_sm.items()}
        ghz = clock_hz / 1e9
        source = f"sm_{caps.cc_major}{caps.cc_minor} table x {caps.cores} SMs x {ghz:.2f} GHz"
    if caps.peak_tflops:
        flops["fp32"] = caps.peak_tflops * 1e12
        source = "the profiler's peak_teraflops_per_second"
    bandwidth = caps.peak_hbm_gbps * 1e9 if caps.peak_hbm_gbps else float(caps.memory_bandwidth)
    return Peaks(name, flops, bandwidth, source, cc)


def given_peaks(name: str, flops: float | None, bytes_per_sec: float | None) -> Peaks:
    """Peaks given by the user: ``flops`` for every unit (None: unknown)."""
    rates = {unit: float(flops) for unit in UNITS} if flops else {}
    return Peaks(name, rates, float(bytes_per_sec or 0.0), "given")


def unit_of(category: str, element_type: int, cc_major: int) -> str:
    """The unit an instruction of ``category`` whose (matrix) inputs are of XLA
    type ``element_type`` runs on, on a GPU of compute capability ``cc_major``."""
    if category not in _MATRIX:
        return "fp64" if element_type == 12 else "fp32"
    if element_type in _FP8_TYPES:
        return "fp8"
    if element_type == 11:
        return "tf32" if cc_major >= 8 else "fp32"
    return _TENSOR_TYPES.get(element_type, "fp32")
