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

from collections.abc import Container, Sequence

__all__ = ["MAX_CELLS", "MISMATCH", "REUSED", "align", "sanitize"]

#: Cost of pairing a kernel with an instruction of another kind.
MISMATCH = 4
#: Cost of a fusion kernel named after another fusion (XLA reused its kernel).
REUSED = 2
#: Above ``kernels x instructions`` cells, :func:`align` uses its linear rule.
MAX_CELLS = 4_000_000

_STARTS = 64  # slice starts :func:`_positional` tries
_SKIP, _MATCH, _EXTRA = 0, 1, 2
_INF = 1 << 30


def sanitize(name: str) -> str:
    """An HLO instruction name as XLA names its kernel (non ``[A-Za-z0-9_]`` -> ``_``)."""
    return "".join(c if (c.isascii() and (c.isalnum() or c == "_")) else "_" for c in name)


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
) -> tuple[list[list[int]], list[bytearray]]:
    m, n = len(kernels), len(instrs)
    cost = [[0] * (n + 1) for _ in range(m + 1)]
    move = [bytearray(n + 1) for _ in range(m + 1)]
    for k in range(1, m + 1):
        kernel = kernels[k - 1]
        lib_kernel = kernel not in known
        row, prev = cost[k], cost[k - 1]
        moves = move[k]
        row[0] = _INF
        for i in range(1, n + 1):
            best = row[i - 1] + 1
            how = _SKIP
            match = prev[i - 1] + _cost(kernel, instrs[i - 1], library[i - 1], known)
            if match < best:
                best, how = match, _MATCH
            if k > 1:
                extra = prev[i] + (2 if lib_kernel and library[i - 1] else 3)
                if extra < best:
                    best, how = extra, _EXTRA
            row[i] = best
            moves[i] = how
    return cost, move


def _trace(cost: list[list[int]], move: list[bytearray], m: int, n: int) -> list[int | None]:
    last = cost[m]
    i = min(range(n + 1), key=lambda j: (last[j], j)) if m else 0
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
    cost, move = _fill(kernels, instrs, library, known)
    return _trace(cost, move, len(kernels), len(instrs))
