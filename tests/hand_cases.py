"""Hand-made profiles (`HandCase`) that pin down tfprof corner cases.

Each function builds one case (cached) from `tests.handmade` builders; no
TensorFlow is needed to build them. The differential tests feed them to TF's
tfprof and to ours; the docstrings say what each case exercises. This module
holds the device, step, shape, number, name and chain cases and `ALL_CASES`;
the cases aimed at the op, code and graph views' structure (`many_ops_case`,
`code_case`, `graphy_case`) live in `tests.hand_cases_views` and are
re-exported here.
"""

from __future__ import annotations

import functools
from typing import Callable

from tests.hand_cases_views import FUNC_19, FUNC_20, FUNC_21, code_case, graphy_case, many_ops_case
from tests.handmade import (
    CPU,
    GPU,
    GPU1,
    MEMCPY,
    STREAM_7,
    STREAM_7_H2D,
    STREAM_ALL,
    HandCase,
    Mem,
    code_entry,
    node,
    ns,
    op_log,
    run_meta,
)

__all__ = [
    "ALL_CASES",
    "CHAIN_LENGTH",
    "FUNC_19",
    "FUNC_20",
    "FUNC_21",
    "LONG_UNICODE_OP",
    "NUMBER_VALUES",
    "chain_case",
    "code_case",
    "gpu_case",
    "gpu_no_stream_case",
    "graphy_case",
    "many_ops_case",
    "names_case",
    "numbers_case",
    "shapes_case",
    "small_nodes",
    "steps_case",
]


#: Length of the input chain of `chain_case` (deeper than Python's recursion limit
#: would allow for a recursive walk).
CHAIN_LENGTH = 2500

#: A pseudo node (and so op type) whose UTF-8 form is longer than its characters.
LONG_UNICODE_OP = "Ωmega_ünïcode_op"

#: Values at and around the formatting thresholds (us / B / counts).
NUMBER_VALUES = (0, 1, 999, 1000, 1005, 999994, 999995, 999999, 1000000, 999999999, 10**9)


def small_nodes() -> list[object]:
    """The probe graph of the reference experiments (x, s1/w, s1/m, s2/r, s2/add, z)."""
    return [
        node("x", "Placeholder", shape=[2, 3], outputs=[[2, 3]]),
        node("s1/w", "VariableV2", shape=[3, 4], outputs=[[3, 4]]),
        node("s1/w/read", "Identity", ["s1/w"], outputs=[[3, 4]]),
        node("s1/m", "MatMul", ["x", "s1/w/read"], outputs=[[2, 4]]),
        node("s2/r", "Relu", ["s1/m"], outputs=[[2, 4]]),
        node("s2/add", "Add", ["s2/r", "s2/r:0"], outputs=[[2, 4]]),
        node("z", "Identity", ["s2/add", "^x"], outputs=[[2, 4]]),
    ]


@functools.cache
def gpu_case() -> HandCase:
    """GPU-style devices: canonical GPU (cpu-side time, memory), stream:all
    (accelerator time), stream:7 / memcpy / stream:7<memcpyh2d> (ignored); skipped
    names (RecvTensor, _SOURCE, *MEMCPY*), ``name:Op`` suffixes, pseudo nodes, GPU
    and host allocators, temp/persistent memory, a record without start time, a
    node moving to a second canonical device (dropped) and a kernel seen on
    stream:all before its canonical record."""
    gpu_alloc = Mem("GPU_0_bfc", 400, 300, 200, 5000, ((1000, 64), (1040, -32)))
    step0 = run_meta(
        [
            (
                GPU,
                [
                    ns(
                        "s1/m", 1000, 50, [gpu_alloc, Mem("cpu", 8, 8, 8)], [32], temp=16, persist=8
                    ),
                    ns("s2/r", 1100, 20, [Mem("GPU_0_bfc", 40, 40, 0, 6000)], [32, 8], temp=4),
                    ns("s2/add", 1200, 30, persist=12),
                ],
            ),
            (STREAM_ALL, [ns("s1/m", 1010, 300), ns("s1/m", 1400, 100), ns("s2/r", 1500, 40)]),
            (STREAM_7, [ns("s1/m:MatMul", 1010, 300), ns("s2/r:Relu", 1500, 40)]),
            (MEMCPY, [ns("s2/add", 1600, 5), ns("MEMCPYHtoD", 1600, 5)]),
            (STREAM_7_H2D, [ns("s2/add:MEMCPYHtoD", 1610, 6), ns("z", 1620, 7)]),
            (
                CPU,
                [
                    ns("x", 900, 5, out_bytes=[24]),
                    ns("z:0", 1700, 3),
                    ns("RecvTensor", 1800, 3),
                    ns("_SOURCE", 10, 1),
                    ns("foo/MEMCPYHtoD", 20, 2),
                    ns("extra/node", 30, 9, [Mem("cpu", 50, 60, 70)], temp=5, persist=6),
                    ns("s1/w", 40, 0, [Mem("cpu", 100, 100, 100)]),
                    ns("s1/w/read", 0, 4, [Mem("cpu", 10, 10, 10)]),
                ],
            ),
        ]
    )
    step1 = run_meta(
        [
            (STREAM_ALL, [ns("s1/m", 2010, 250), ns("s2/add", 2020, 15)]),
            (
                GPU,
                [
                    ns("s1/m", 2000, 40, [gpu_alloc], [32], temp=16, persist=8),
                    ns("s2/add", 2005, 0, [Mem("GPU_0_bfc", 64, 64, 64, 7000)]),
                ],
            ),
            (GPU1, [ns("s2/r", 2100, 77, [Mem("GPU_1_bfc", 9, 9, 9, 9)])]),
            (CPU, [ns("s2/r", 2200, 11), ns("x", 1900, 4), ns("extra/node", 1950, 8)]),
            (STREAM_7, [ns("z", 2300, 5)]),
        ]
    )
    return HandCase.make("gpu", small_nodes(), [(0, step0), (1, step1)])


@functools.cache
def gpu_no_stream_case() -> HandCase:
    """GPU devices but no stream:all device: the missing-accelerator-stream warning."""
    step = run_meta(
        [
            (GPU, [ns("s1/m", 100, 30), ns("s2/r", 140, 8), ns("s2/add", 150, 2)]),
            (STREAM_7, [ns("s1/m", 105, 20)]),
            (CPU, [ns("x", 90, 5), ns("z", 160, 3)]),
        ]
    )
    return HandCase.make("gpu_no_stream", small_nodes(), [(0, step)])


@functools.cache
def steps_case() -> HandCase:
    """Step bookkeeping: nodes missing in some steps (per-node averaging with
    truncation), the same step added twice, records with all_start_micros 0, zero
    durations (rounded up to 1), repeated records (run counts), a node whose later
    record is on a second canonical device, float ops times run count."""
    nodes = [
        node("a", "Placeholder", shape=[4], outputs=[[4]]),
        node("b", "Const", outputs=[[4]]),
        node("loop/body", "Mul", ["a", "b"], outputs=[[4]]),
        node("loop/cond", "Less", ["loop/body"], outputs=[[]]),
        node("out", "Sum", ["loop/body"], outputs=[[]]),
        node("never", "NoOp", ["^out"]),
    ]
    strings = {"none": 0}
    log = op_log(
        [
            code_entry("loop/body", [("/m.py", 3, "body")], strings, float_ops=4),
            code_entry("out", [("/m.py", 5, "reduce")], strings, float_ops=3),
            code_entry("never", [("/m.py", 6, "noop")], strings, float_ops=11),
        ],
        strings,
    )
    s0 = run_meta(
        [
            (
                CPU,
                [
                    ns("a", 100, 5, [Mem("cpu", 10, 20, 30)]),
                    ns("loop/body", 110, 0),
                    ns("loop/cond", 111, 1),
                    ns("loop/body", 112, 2, out_bytes=[16]),
                    ns("loop/cond", 113, 1),
                    ns("b", 0, 7, [Mem("cpu", 1, 1, 1)]),
                    ns("out", 120, 999),
                ],
            )
        ]
    )
    s1 = run_meta(
        [
            (CPU, [ns("a", 200, 6), ns("loop/body", 210, 3), ns("loop/cond", 214, 0)]),
            (GPU, [ns("out", 230, 5, [Mem("GPU_0_bfc", 5, 5, 5, 5)])]),
        ]
    )
    s2 = run_meta(
        [(CPU, [ns("a", 300, 8, out_bytes=[100, 200]), ns("b", 0, 0), ns("out", 301, 1001)])]
    )
    return HandCase.make("steps", nodes, [(0, s0), (1, s1), (2, s2), (2, s2), (5, s1)], log)


@functools.cache
def shapes_case() -> HandCase:
    """Parameters and input shapes: unknown rank, scalar (``[1]``), unknown dims
    (``-1``: 0 params), placeholders with params, a resource variable, a
    multi-output producer read through ``:1`` (tfprof reads output 0), an unknown
    producer, control inputs, and ``_trainable_variables`` op-log types."""
    nodes = [
        node("a", "Placeholder", shape=None, outputs=[None]),
        node("b", "Placeholder", shape=[], outputs=[[]]),
        node("c", "Placeholder", shape=[-1, 3], outputs=[[-1, 3]]),
        node("v", "VarHandleOp", shape=[1000, 1000, 1000], outputs=[[]]),
        node("w", "VariableV2", shape=[3, 3], outputs=[[3, 3]]),
        node("w/read", "Identity", ["w"], outputs=[[3, 3]]),
        node("two", "Split", ["a"], outputs=[[2, 2], [3, 3]]),
        node("d", "AddV2", ["two:1", "b", "nosuch:0", "^c"], outputs=[[-1, 3]]),
        node("e", "Mul", ["d", "two", "w/read"], outputs=[[-1, 3]]),
        node("f", "Neg", ["e"], outputs=[[-1, 3]]),
    ]
    log = op_log(
        [
            code_entry("v", [], {}, types=["_trainable_variables"]),
            code_entry("w", [], {}, types=["_trainable_variables"]),
            code_entry("e", [], {}, float_ops=27),
        ]
    )
    step = run_meta([(CPU, [ns("a", 10, 1), ns("d", 20, 2), ns("e", 30, 3), ns("w", 5, 1)])])
    return HandCase.make("shapes", nodes, [(0, step)], log)


@functools.cache
def numbers_case() -> HandCase:
    """Numbers at the formatting thresholds (999, 1000, 999999, 1e6, 1e9, ...) for
    times, bytes (several allocators), parameters, float ops and run counts."""
    nodes: list[object] = []
    recs = []
    strings = {"none": 0}
    entries = []
    for i, v in enumerate((*NUMBER_VALUES, 123456789012)):
        name = f"k{i:02d}"
        nodes.append(node(name, f"Op{i % 4}", shape=[v], outputs=[[1]]))
        mem = [Mem("GPU_0_bfc", v, v // 2, v // 3, v), Mem("cuda_host_bfc", 7, 7, 7)]
        recs.append(ns(name, 10 + i, v, mem, out_bytes=[v]))
        recs.append(
            ns(
                name,
                10 + i,
                v,
                [Mem("GPU_0_bfc", v, v // 2, v // 3, v)],
                temp=v // 5,
                persist=v // 7,
            )
        )
        entries.append(code_entry(name, [("/m.py", i, "f")], strings, float_ops=v))
    nodes.append(node("loop", "While", outputs=[[1]]))
    recs += [ns("loop", 5 + k, 1) for k in range(1000)]
    step = run_meta([(GPU, recs), (STREAM_ALL, [ns("k03", 1, 999), ns("k05", 2, 1000)])])
    return HandCase.make("numbers", nodes, [(0, step)], op_log(entries, strings))


@functools.cache
def names_case() -> HandCase:
    """Name order and odd names: upper/lower case and ``_`` ordering (byte order),
    unicode graph and pseudo node names (op view pads by bytes), ``name:Op``
    suffixes, ``a//b``, ``/lead``, ``trail/``, ``foo:bar:baz``, ``xMEMCPYy``
    (dropped) versus ``memcpyHtoD`` (kept)."""
    nodes = [
        node("Zeta", "Const", outputs=[[2]]),
        node("alpha", "Const", outputs=[[2]]),
        node("Alpha", "Const", outputs=[[2]]),
        node("_under", "Const", outputs=[[2]]),
        node("b/Ünï", "Identity", ["alpha"], outputs=[[2]]),
        node("b/ascii", "Identity", ["Zeta"], outputs=[[2]]),
        node("b/日本", "AddV2", ["b/Ünï", "b/ascii"], outputs=[[2]]),
        node("b/Z", "Neg", ["b/日本"], outputs=[[2]]),
    ]
    recs = [
        ns("Zeta", 10, 1),
        ns("alpha", 11, 2),
        ns("Alpha", 12, 3),
        ns("_under", 13, 4),
        ns("b/Ünï", 14, 5),
        ns("b/ascii", 15, 6),
        ns("b/日本:AddV2", 16, 7),
        ns("b/Z", 16, 7),
        ns("ψ/pseudo_ñ", 17, 8),
        ns(LONG_UNICODE_OP, 18, 9),
        ns("/lead", 19, 1),
        ns("trail/", 20, 2),
        ns("a//b", 21, 3),
        ns("foo:bar:baz", 22, 4),
        ns("xMEMCPYy", 23, 5),
        ns("memcpyHtoD", 24, 6),
    ]
    return HandCase.make("names", nodes, [(0, run_meta([(CPU, recs)]))])


@functools.cache
def chain_case() -> HandCase:
    """A ``CHAIN_LENGTH``-deep input chain (graph view depth), plus a side branch."""
    nodes = [node("n0000", "Const", outputs=[[2]])]
    for i in range(1, CHAIN_LENGTH):
        nodes.append(node(f"n{i:04d}", "Identity", [f"n{i - 1:04d}"], outputs=[[2]]))
    nodes.append(node("side", "Neg", ["n0100"], outputs=[[2]]))
    recs = [ns(f"n{i:04d}", 10 + i, i % 7) for i in range(0, CHAIN_LENGTH, 3)]
    recs.append(ns("side", 5, 6))
    return HandCase.make("chain", nodes, [(0, run_meta([(CPU, recs)]))])


ALL_CASES: dict[str, Callable[[], HandCase]] = {
    "gpu": gpu_case,
    "gpu_no_stream": gpu_no_stream_case,
    "steps": steps_case,
    "shapes": shapes_case,
    "numbers": numbers_case,
    "names": names_case,
    "chain": chain_case,
    "many_ops": many_ops_case,
    "code": code_case,
    "graphy": graphy_case,
}
