"""A GPU kernel's launch configuration and its tensor-core flags.

The GPU tracer (CUPTI, TensorFlow 2.x and JAX) describes each kernel launch
with a ``kernel_details`` text, which TensorFlow's FULL_TRACE RunMetadata puts
after the kernel name in the record's ``timeline_label``::

    <kernel name> regs:R static_shared:S dynamic_shared:D grid:X,Y,Z block:X,Y,Z occ_pct:P

Older TensorFlow 2.x releases wrote ``<kernel> regs:R shm:S grid:X,Y,Z
block:X,Y,Z@@<annotation>`` (``shm`` is the static shared memory) and
TensorFlow 1.x no label at all. :func:`split_label` accepts all three: fields
may be missing, in any order or unknown (ignored), and a malformed value
leaves its field unknown (None) instead of failing.

Tensor cores (:func:`uses_tensor_core`, :func:`tensor_core_eligible`) follow
the rules of XProf's GPU Kernel Stats tool, which decides both from names
alone, and add a few names it misses (see ``docs/analysis/kernels.md``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from tfprof_lite.base.units import format_memory

__all__ = [
    "LAUNCH_HEAD",
    "TC_LEGEND",
    "ELIGIBLE_OP_CONTAINS",
    "ELIGIBLE_OP_SUFFIXES",
    "ELIGIBLE_PRIMITIVES",
    "TENSOR_CORE_KERNEL_PATTERNS",
    "LaunchConfig",
    "launch_text",
    "parse_details",
    "split_label",
    "tc_flag",
    "tensor_core_eligible",
    "uses_tensor_core",
]


@dataclass(frozen=True)
class LaunchConfig:
    """One kernel launch configuration; None (or "") where the record does not say.

    ``grid`` and ``block`` are ``"x,y,z"`` texts; ``occupancy_pct`` is the
    tracer's theoretical occupancy (``occ_pct``) in percent.
    """

    registers_per_thread: int | None = None
    static_shared_bytes: int | None = None
    dynamic_shared_bytes: int | None = None
    grid: str | None = None
    block: str | None = None
    occupancy_pct: float | None = None

    @property
    def known(self) -> bool:
        """True when the record gave at least one field."""
        return self != _UNKNOWN

    def sort_key(self) -> tuple[str, ...]:
        """A total order over configurations (unknown fields sort first)."""
        return tuple("" if v is None else f"{v}" for v in vars(self).values())


_UNKNOWN = LaunchConfig()

#: The ``kernel_details`` keys, as written by the tracer, and the field each sets.
_INT_KEYS = {
    "regs": "registers_per_thread",
    "static_shared": "static_shared_bytes",
    "shm": "static_shared_bytes",
    "dynamic_shared": "dynamic_shared_bytes",
}
_DIM_KEYS = {"grid": "grid", "block": "block"}
_KNOWN_KEYS = frozenset({*_INT_KEYS, *_DIM_KEYS, "occ_pct"})
_DIM_RE = re.compile(r"\d+,\d+,\d+")


def _field(key: str, value: str) -> tuple[str, object] | None:
    """(field, value) of one ``key:value`` token, or None if it says nothing usable."""
    if key in _INT_KEYS:
        return (_INT_KEYS[key], int(value)) if value.isdigit() else None
    if key in _DIM_KEYS:
        ok = _DIM_RE.fullmatch(value) is not None
        return (_DIM_KEYS[key], ",".join(str(int(v)) for v in value.split(","))) if ok else None
    if key == "occ_pct":
        try:
            pct = float(value)
        except ValueError:
            return None
        return ("occupancy_pct", pct) if 0.0 <= pct <= 100.0 else None
    return None


def parse_details(details: str) -> LaunchConfig:
    """The launch configuration in a ``kernel_details`` text.

    Tokens are ``key:value`` separated by blanks or newlines; unknown keys and
    malformed values are skipped, the last valid value of a key wins.
    """
    fields: dict[str, object] = {}
    for token in details.split():
        key, sep, value = token.partition(":")
        if not sep or ":" in value:
            continue
        found = _field(key, value)
        if found is not None:
            fields[found[0]] = found[1]
    return LaunchConfig(**fields)  # type: ignore[arg-type]


@functools.lru_cache(maxsize=8192)
def split_label(label: str) -> tuple[str, LaunchConfig]:
    """(kernel name, launch configuration) of a kernel record's ``timeline_label``.

    The details start at the first blank-separated token that begins with a
    known key and ``:`` (``regs:``, ``static_shared:``, ``shm:``, ...) and run
    to the end (or to an ``@@<annotation>``); the kernel name is what comes
    before. A label without such a token is all name.
    """
    text = label.split("@@", 1)[0]
    for token in re.finditer(r"\S+", text):
        key, sep, value = token.group().partition(":")
        if sep and key in _KNOWN_KEYS and not value.startswith(":") and token.start() > 0:
            return text[: token.start()].strip(), parse_details(text[token.start() :])
    return text.strip(), _UNKNOWN


# --------------------------------------------------------------------------- tensor cores

#: Kernel-name parts that mean the kernel runs on tensor cores. XProf's list
#: (``kernel_stats_utils.cc``: cuBLAS/cuDNN names such as ``volta_h884gemm``,
#: ``turing_fp16_s1688cudnn_fp16``, ``ampere_s16816gemm``, ``sm80_xmma_gemm_…``)
#: and three it misses: CUTLASS ``tensorop`` kernels, cuBLAS's ``nvjet`` GEMMs
#: (Hopper and later) and ``wgmma`` kernels (Hopper's warpgroup MMA).
TENSOR_CORE_KERNEL_PATTERNS = (
    "16816",
    "c1688",
    "conv1x1",
    "conv2d_c1_k1",
    "dgrad_1x1_stride_2x2",
    "direct_group",
    "first_layer_wgrad_kernel",
    "h1688",
    "h884",
    "hmma",
    "i16832",
    "i8816",
    "s884",
    "s1688",
    "xmma_gemm",
    "xmma_implicit_gemm",
    "xmma_sparse_conv",
    "xmma_sparse_gemm",
    "xmma_warp_specialized_implicit_gemm",
    "tensorop",
    "nvjet",
    "wgmma",
)

#: Op names (or op types) ending with one of these are tensor-core eligible
#: (XProf: convolutions, ``/MatMul``, fused MatMuls, cuDNN RNNs, ``XlaDot``).
ELIGIBLE_OP_SUFFIXES = (
    "Conv2D",
    "Conv2DBackpropFilter",
    "Conv2DBackpropInput",
    "Conv3D",
    "DepthwiseConv2dNative",
    "DepthwiseConv2dNativeBackpropFilter",
    "DepthwiseConv2dNativeBackpropInput",
    "/MatMul",
    "FusedMatMul",
    "/CudnnRNN",
    "XlaDot",
    "XlaDotV2",
)
#: Op names (or types) containing one of these are eligible (V2/V3 variants).
ELIGIBLE_OP_CONTAINS = ("BatchMatMul", "CudnnRNNV", "CudnnRNNForward", "CudnnRNNBackprop")
#: JAX/XLA primitives (the last part of an XLA op name such as
#: ``jit(step)/dense/dot_general``) that are eligible; XProf has none.
ELIGIBLE_PRIMITIVES = frozenset({"dot_general", "conv_general_dilated", "dot", "convolution"})


def uses_tensor_core(kernel: str) -> bool:
    """True when the kernel's name says it runs on tensor cores."""
    return any(part in kernel for part in TENSOR_CORE_KERNEL_PATTERNS)


def _eligible_name(name: str) -> bool:
    return name.endswith(ELIGIBLE_OP_SUFFIXES) or any(p in name for p in ELIGIBLE_OP_CONTAINS)


def tensor_core_eligible(op: str, op_type: str, uses: bool) -> bool:
    """True when the launching op could run on tensor cores.

    XProf's rules on the op name, the same rules on the op type (so a
    ``MatMul`` op counts whatever its name; XProf looks at the name only),
    JAX/XLA matrix primitives, and any op whose kernel uses tensor cores.
    """
    if uses:
        return True
    if op and _eligible_name(op):
        return True
    if op_type and (op_type == "MatMul" or _eligible_name(op_type)):
        return True
    last = op.rsplit("/", 1)[-1]
    return last in ELIGIBLE_PRIMITIVES or op_type in ELIGIBLE_PRIMITIVES


# --------------------------------------------------------------------------- text columns

#: The notes under a text table with launch columns (what the columns and ``TC`` say).
TC_LEGEND = (
    "regs = registers per thread, shmem = static + dynamic shared memory, "
    "occ% = theoretical occupancy",
    "TC: used = the kernel uses tensor cores, elig = its op is tensor-core eligible "
    "but the kernel does not use them, - = neither",
)
#: The text table's launch column titles (each row's :func:`launch_text` is as wide).
LAUNCH_HEAD = f"{'regs':>4} {'shmem':>8} {'grid':>11} {'block':>11} {'occ%':>6} {'TC':<4} "


def tc_flag(uses: bool, eligible: bool) -> str:
    """``used``, ``elig`` or ``-``: the text table's tensor-core column."""
    if uses:
        return "used"
    return "elig" if eligible else "-"


def launch_text(config: LaunchConfig, uses: bool, eligible: bool) -> str:
    """A row's launch columns under :data:`LAUNCH_HEAD` (blank where unknown)."""
    shared = [b for b in (config.static_shared_bytes, config.dynamic_shared_bytes) if b is not None]
    regs, occ = config.registers_per_thread, config.occupancy_pct
    cells = (
        ("" if regs is None else str(regs), 4),
        (format_memory(sum(shared)) if shared else "", 8),
        (config.grid or "", 11),
        (config.block or "", 11),
        ("" if occ is None else f"{occ:g}", 6),
    )
    return " ".join(f"{text:>{width}}" for text, width in cells) + f" {tc_flag(uses, eligible):<4} "
