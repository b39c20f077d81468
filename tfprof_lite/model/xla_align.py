"""Aligning the kernels of one command-buffer execution with HLO instructions.

XLA on GPU may run a whole program (or a part of it) as one CUDA graph, a
*command buffer*: every kernel launched by it carries the same ``hlo_op``
(``command_buffer_1``) and the same ``correlation_id``, so the profile alone does
not say which instruction launched which kernel. Kernel names help only in part:

* a fusion's kernel is named after the fusion with characters other than
  ``[A-Za-z0-9_]`` replaced by ``_`` (``gemm_fusion_dot.5`` -> ``gemm_fusion_dot_5``),
  but XLA reuses one compiled kernel for identical fusions, so the kernel of
  ``loop_add_fusion.7`` may be named ``loop_add_fusion_3``;
* library calls (cuBLAS ``__cublas$lt$matmul``, cuDNN) launch kernels named by the
  library (``nvjet_*``, ``sm90_*``, ``cutlass::*``), sometimes after a ``Memset``.

Contract: :func:`align` takes the kernel names of one execution in launch order and
the program's kernel-launching instructions in schedule order and returns, per
kernel, the index of its instruction. It is an edit-distance alignment: a kernel
costs nothing on the instruction of its own name or, for a library kernel (a name
that is no instruction of the program), on a library instruction; a reused fusion
kernel costs :data:`REUSED` on another fusion; other pairings cost :data:`MISMATCH`; an
instruction that launched nothing costs 1 (nothing before the first and after the
last kernel, so an execution may cover any slice of the schedule); a second
kernel of one instruction costs 2 (library) or 3. When the counts are equal and
the positional pairing has no mismatch, that pairing is taken without the
quadratic search. Above :data:`MAX_CELLS` cells a linear rule is used instead:
named kernels by name, library kernels in turn on the library instructions.
"""

from __future__ import annotations

import re
from collections.abc import Container, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["MAX_CELLS", "MISMATCH", "REUSED", "align", "sanitize"]

#: Cost of pairing a kernel with an instruction of another kind.
MISMATCH = 4
#: Cost of a fusion kernel named after another fusion (XLA reused its kernel).
REUSED = 2
#: Above ``kernels x instructions`` cells, :func:`align` uses its linear rule.
MAX_CELLS = 20_000_000

_STARTS = 64  # slice starts :func:`_positional` tries
_SKIP, _MATCH, _EXTRA = 0, 1, 2
_INF = 1 << 30
_NOT_KERNEL_CHAR = re.compile(r"[^A-Za-z0-9_]")


def sanitize(name: str) -> str:
    """An HLO instruction name as XLA names its kernel (non ``[A-Za-z0-9_]`` -> ``_``)."""
    return _NOT_KERNEL_CHAR.sub("_", name)


def _cost(kernel: str, instr: str, library: bool, known: Container[str]) -> int:
    if kernel == instr:
        return 0
    if kernel not in known:  # a library kernel
        return 0 if library else MISMATCH
    return MISMATCH if library else REUSED


def _fits_at(
    start: int,
    kernels: Sequence[str],
    instrs: Sequence[str],
    library: Sequence[bool],
    known: Container[str],
) -> bool:
    for j, kernel in enumerate(kernels):
        if _cost(kernel, instrs[start + j], library[start + j], known) >= MISMATCH:
            return False
    return True


def _positional(
    kernels: Sequence[str], instrs: Sequence[str], library: Sequence[bool], known: Container[str]
) -> list[int | None] | None:
    """One kernel per instruction from some start on, with no mismatch: the whole
    schedule, else a slice starting where the first kernel's name is an
    instruction (one command buffer of several)."""
    m, n = len(kernels), len(instrs)
    starts = [0] if m == n else [i for i in range(n - m + 1) if instrs[i] == kernels[0]]
    for start in starts[:_STARTS]:
        if _fits_at(start, kernels, instrs, library, known):
            return list(range(start, start + m))
    return None


def _linear(
    kernels: Sequence[str], instrs: Sequence[str], library: Sequence[bool], known: Container[str]
) -> list[int | None]:
    by_name: dict[str, int] = {}
    for i, name in enumerate(instrs):
        by_name.setdefault(name, i)
    libs = [i for i, lib in enumerate(library) if lib]
    out: list[int | None] = []
    turn = 0
    for kernel in kernels:
        if kernel in known or not libs:
            out.append(by_name.get(kernel))
        else:
            out.append(libs[turn % len(libs)])
            turn += 1
    return out


def _fill(
    kernels: Sequence[str], instrs: Sequence[str], library: Sequence[bool], known: Container[str]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int8]]:
    """The last row of the edit-distance table and the moves of every cell,
    one NumPy row per kernel: a row's candidates (match, extra kernel) depend on
    the previous row only, and the skips along the row are a running minimum of
    ``candidate - i``. Only the moves are kept (one byte a cell)."""
    m, n = len(kernels), len(instrs)
    lib = np.asarray(library, dtype=bool)
    match_lib = np.where(lib, 0, MISMATCH).astype(np.int64)
    match_named = np.where(lib, MISMATCH, REUSED).astype(np.int64)
    extra_lib = np.where(lib, 2, 3).astype(np.int64)
    extra_named = np.full(n, 3, dtype=np.int64)
    exact: dict[str, list[int]] = {}
    for i, name in enumerate(instrs):
        exact.setdefault(name, []).append(i)
    steps = np.arange(n + 1, dtype=np.int64)
    prev = np.zeros(n + 1, dtype=np.int64)
    move = np.zeros((m + 1, n + 1), dtype=np.int8)
    for k in range(1, m + 1):
        kernel = kernels[k - 1]
        lib_kernel = kernel not in known
        match = (match_lib if lib_kernel else match_named).copy()
        match[exact.get(kernel, [])] = 0
        matched = prev[:-1] + match
        extra = prev[1:] + (extra_lib if lib_kernel else extra_named)
        if k == 1:
            extra = np.full(n, _INF, dtype=np.int64)
        cand = np.empty(n + 1, dtype=np.int64)
        cand[0] = _INF
        cand[1:] = np.minimum(matched, extra)
        row = np.minimum.accumulate(cand - steps) + steps
        how = np.where(matched <= extra, _MATCH, _EXTRA).astype(np.int8)
        skipped = row[1:] == row[:-1] + 1  # skip wins ties, as the search prefers it
        move[k, 1:] = np.where(skipped, _SKIP, how)
        prev = row
    return prev, move


def _trace(last: npt.NDArray[np.int64], move: npt.NDArray[np.int8], m: int) -> list[int | None]:
    i = int(np.argmin(last)) if m else 0  # the first of equal costs
    out: list[int | None] = [None] * m
    k = m
    while k > 0 and i > 0:
        how = move[k][i]
        if how == _SKIP:
            i -= 1
        elif how == _MATCH:
            out[k - 1] = i - 1
            k, i = k - 1, i - 1
        else:
            out[k - 1] = i - 1
            k -= 1
    return out


def align(
    kernels: Sequence[str],
    instrs: Sequence[str],
    library: Sequence[bool],
    known: Container[str],
) -> list[int | None]:
    """Index into ``instrs`` of each kernel of one execution (``None``: no pairing).

    Args:
        kernels: kernel names of one execution, in launch order.
        instrs: :func:`sanitize`-d names of the kernel-launching instructions, in
            schedule order.
        library: per instruction, whether it is a library call (its kernels are
            named by the library, not after the instruction).
        known: the :func:`sanitize`-d names of every kernel-launching instruction
            of the program (a kernel name outside it is a library kernel).
    """
    if not kernels:
        return []
    if not instrs:
        return [None] * len(kernels)
    quick = _positional(kernels, instrs, library, known)
    if quick is not None:
        return quick
    if len(kernels) * len(instrs) > MAX_CELLS:
        return _linear(kernels, instrs, library, known)
    last, move = _fill(kernels, instrs, library, known)
    return _trace(last, move, len(kernels))
