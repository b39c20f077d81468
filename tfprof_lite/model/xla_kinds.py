"""What an HLO instruction is shown as: :class:`HloOp` and its category.

Categories (:data:`CATEGORIES`), from the opcode, the custom-call target and,
for fusions, the instructions fused inside (nested fusions included):

``matmul``
    ``dot``; cuBLAS custom calls (``__cublas$gemm``, ``__cublas$lt$matmul``...);
    fusions that contain a ``dot`` (Triton ``gemm_fusion_*``, cuDNN GEMM fusions).
``convolution``
    ``convolution``; cuDNN convolution custom calls (``__cudnn$conv*``); fusions
    that contain a convolution.
``fusion``
    every other fusion (``loop_*``, ``input_*``, ``wrapped_*``...).
``custom-call``
    every other custom call.
``collective``
    all-reduce, all-gather, reduce-scatter, all-to-all, collective-permute,
    send and recv (and their ``-start`` forms).
``copy``
    ``copy`` and ``copy-start``.
``other``
    any other instruction run on its own (``sort``, ``scatter``, ``rng``...).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["CATEGORIES", "HloOp", "category_of"]

#: Every category an :class:`HloOp` may have, in the order reports list them.
CATEGORIES: tuple[str, ...] = (
    "matmul",
    "convolution",
    "fusion",
    "custom-call",
    "collective",
    "copy",
    "other",
)

_COLLECTIVES = frozenset(
    {
        "all-reduce",
        "all-gather",
        "reduce-scatter",
        "all-to-all",
        "collective-permute",
        "collective-broadcast",
        "ragged-all-to-all",
        "send",
        "recv",
    }
)


class HloOp(NamedTuple):
    """One kernel-launching HLO instruction of a program, as the views show it
    (an immutable record; a named tuple, cheap to define at import).

    Attributes:
        program_id: the program (``program_id`` stat) it belongs to.
        module: the HLO module name (``jit_train_step``).
        name: the instruction name (``gemm_fusion_dot.5``).
        kernel_name: ``name`` as XLA names its kernel (``gemm_fusion_dot_5``).
        opcode: the HLO opcode (``fusion``, ``custom-call``, ``copy``...).
        category: one of :data:`CATEGORIES`.
        op_type: the framework op (``dot_general``; TF: ``MatMul``), else the opcode.
        scope: the path to show: ``op_name`` with the framework op as leaf
            (``jit(train_step)/jvp(MLP)/mlp/dense0/dot_general``), else
            ``<module>/<name>``.
        source: ``file:line`` of the framework code, else ``""``.
        custom_call_target: the custom-call target (``__cublas$lt$matmul``) or ``""``.
        fusion_kind: ``kLoop``, ``kInput``, ``kOutput``, ``kCustom`` or ``""``.
        library: its kernels are named by a library (cuBLAS, cuDNN), not after it.
        has_metadata: ``scope`` and ``op_type`` come from ``op_name`` metadata.
    """

    program_id: int
    module: str
    name: str
    kernel_name: str
    opcode: str
    category: str
    op_type: str
    scope: str
    source: str = ""
    custom_call_target: str = ""
    fusion_kind: str = ""
    library: bool = False
    has_metadata: bool = True

    @property
    def type_label(self) -> str:
        """The framework op with the HLO category beside it: ``dot_general (matmul)``."""
        return f"{self.op_type} ({self.category})"


def category_of(opcode: str, target: str, fused_opcodes: frozenset[str]) -> str:
    """The category of an instruction.

    Args:
        opcode: its opcode.
        target: its custom-call target (``""`` if none).
        fused_opcodes: for a fusion, the opcodes inside it (nested fusions
            included), with the custom-call targets of custom calls inside.
    """
    if opcode == "custom-call":
        if target.startswith("__cublas") or "gemm" in target or "matmul" in target:
            return "matmul"
        return "convolution" if target.startswith("__cudnn$conv") else "custom-call"
    if opcode == "fusion":
        if "convolution" in fused_opcodes or any(
            t.startswith("__cudnn$conv") for t in fused_opcodes
        ):
            return "convolution"
        if "dot" in fused_opcodes or any(t.startswith("__cublas") for t in fused_opcodes):
            return "matmul"
        return "fusion"
    if opcode == "dot":
        return "matmul"
    if opcode == "convolution":
        return "convolution"
    if opcode.removesuffix("-start") in _COLLECTIVES:
        return "collective"
    if opcode in ("copy", "copy-start"):
        return "copy"
    return "other"
