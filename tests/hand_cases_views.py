"""Hand-made profiles (`HandCase`) aimed at the views' structure: many op types
with ties (op view order), a hand-made op log with shared call stacks and
gradients (code view) and graph shapes such as cycles and duplicate names (graph
view).

Built from `tests.handmade` like the other cases; `tests.hand_cases` re-exports
them and lists them in its `ALL_CASES`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from tests.handmade import (
    CPU,
    STREAM_7,
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
    "FUNC_19",
    "FUNC_20",
    "FUNC_21",
    "code_case",
    "graphy_case",
    "many_ops_case",
]


_MANY_OPS = [
    "Abs",
    "Acos",
    "Add",
    "AddN",
    "AddV2",
    "ArgMax",
    "Asin",
    "Atan",
    "BiasAdd",
    "Cast",
    "Ceil",
    "Concat",
    "Const",
    "Cos",
    "Div",
    "Equal",
    "Exp",
    "Fill",
    "Floor",
    "Gather",
    "Identity",
    "Log",
    "MatMul",
    "Max",
    "Mean",
    "Min",
    "Mul",
    "Neg",
    "Pack",
    "Pad",
    "Pow",
    "Prod",
    "Relu",
    "Reshape",
    "Rsqrt",
    "Select",
    "Shape",
    "Sigmoid",
    "Sin",
    "Slice",
    "Softmax",
    "Sqrt",
    "Square",
    "Sub",
    "Sum",
    "Tanh",
    "Tile",
    "Transpose",
    "Unpack",
    "ZerosLike",
]


@functools.cache
def many_ops_case() -> HandCase:
    """50 op types with 1-3 nodes each and many ties in time and memory (op view
    order stability), mixed known/unknown output shapes (input_shapes rows)."""
    nodes = []
    recs = []
    for i, op in enumerate(_MANY_OPS):
        for j in range(1 + i % 3):
            name = f"{op.lower()}_{j}"
            inputs = [f"{_MANY_OPS[i - 1].lower()}_0"] if i else []
            if j == 2:
                inputs.append(f"^{op.lower()}_0")
            nodes.append(node(name, op, inputs, outputs=[None] if j == 1 else [[i % 4 + 1, 2]]))
            mem = [Mem("cpu", total=(i % 5) * 100, peak=(i % 2) * 50, live=j * 8)]
            recs.append(ns(name, 100 + i, (i % 4) * 5, mem, out_bytes=[(i % 3) * 16]))
    return HandCase.make("many_ops", nodes, [(0, run_meta([(CPU, recs)]))])


#: Function names around the 20-byte cut of code view frames.
FUNC_19, FUNC_20, FUNC_21 = "f" * 19, "g" * 20, "h" * 21


@functools.cache
def code_case() -> HandCase:
    """Code view from a hand-made op log: shared call-stack prefixes, function
    names of 19/20/21 bytes and multi-byte UTF-8 names, gradient nodes whose
    forward op exists / does not exist / is the empty name, ``gradients_1/``
    names (ordinary nodes), a node without a trace, duplicate op-log entries
    (first trace wins, last non-zero float_ops wins, types merge), op-log
    entries for unknown nodes, float ops times run count, extra types for
    account_type_regexes."""
    nodes = [
        node("x", "Placeholder", shape=[4, 3], outputs=[[4, 3]]),
        node("dense/w", "VariableV2", shape=[3, 5], outputs=[[3, 5]]),
        node("dense/MatMul", "MatMul", ["x", "dense/w"], outputs=[[4, 5]]),
        node("dense/Relu", "Relu", ["dense/MatMul"], outputs=[[4, 5]]),
        node("loss", "Sum", ["dense/Relu"], outputs=[[]]),
        node("gradients/dense/MatMul_grad/MatMul", "MatMul", ["loss", "dense/w"], outputs=[[4, 3]]),
        node("gradients/dense/MatMul_grad/MatMul_1", "MatMul", ["x", "loss"], outputs=[[3, 5]]),
        node("gradients/dense/Relu_grad/ReluGrad", "ReluGrad", ["loss", "dense/Relu"]),
        node("gradients/missing/Op_grad/Mul", "Mul", ["loss"], outputs=[[4, 5]]),
        node("gradients_1/dense/MatMul_grad/MatMul", "MatMul", ["loss"], outputs=[[4, 5]]),
        node("gradients/_grad/odd", "Mul", ["loss"], outputs=[[4, 5]]),
        node("notrace", "NoOp", ["^loss"]),
        node("uni", "Identity", ["x"], outputs=[[4, 3]]),
        node("uni2", "Identity", ["x"], outputs=[[4, 3]]),
    ]
    strings = {"none": 0}
    main = ("/home/u/train.py", 10, "main")
    build = ("/home/u/model.py", 20, "build_model")
    minimize = ("/lib/optimizer.py", 1, "minimize")

    def entry(
        name: str, frames: list[tuple[str, int, str]], types: Sequence[str] = (), float_ops: int = 0
    ) -> object:
        return code_entry(name, frames, strings, types, float_ops)

    entries = [
        entry("x", [main, ("/home/u/model.py", 5, "inputs")]),
        entry(
            "dense/w",
            [main, build, ("/lib/layers.py", 30, FUNC_19)],
            types=["_trainable_variables"],
        ),
        entry("dense/MatMul", [main, build, ("/lib/layers.py", 31, FUNC_20)], float_ops=120),
        entry("dense/MatMul", [main, ("/other.py", 1, "ignored")], float_ops=0, types=["Dense"]),
        entry("dense/Relu", [main, build, ("/lib/layers.py", 32, FUNC_21)], types=["Dense"]),
        entry("loss", [main, ("/home/u/train.py", 11, "compute_loss_function")], float_ops=20),
        entry("loss", [main, ("/home/u/train.py", 12, "later")], float_ops=19),
        entry("gradients/dense/MatMul_grad/MatMul", [main, minimize], float_ops=120),
        entry("gradients/dense/MatMul_grad/MatMul_1", [main, minimize], float_ops=120),
        entry("gradients/dense/Relu_grad/ReluGrad", [main, minimize]),
        entry("gradients/missing/Op_grad/Mul", [main, minimize]),
        entry("gradients_1/dense/MatMul_grad/MatMul", [main, ("/lib/optimizer.py", 4, "minimize")]),
        entry("gradients/_grad/odd", [main, ("/lib/optimizer.py", 5, "minimize")]),
        entry("uni", [main, ("/home/u/ünï.py", 7, "función_ñandú_larga")]),
        entry("uni2", [main, ("/home/u/ünï.py", 8, "ab数据集管道函数")]),
        entry("not_in_graph", [main]),
    ]
    step = run_meta(
        [
            (
                CPU,
                [
                    ns("x", 5, 1),
                    ns("dense/w", 6, 2, [Mem("cpu", 60, 60, 60)]),
                    ns("dense/MatMul", 10, 30, [Mem("cpu", 80, 100, 0)], [80]),
                    ns("dense/Relu", 40, 4),
                    ns("loss", 50, 5),
                    ns("loss", 56, 5),
                    ns("gradients/dense/MatMul_grad/MatMul", 60, 20),
                    ns("gradients/dense/MatMul_grad/MatMul_1", 80, 21),
                    ns("gradients/dense/Relu_grad/ReluGrad", 100, 3),
                    ns("gradients/missing/Op_grad/Mul", 110, 2),
                    ns("gradients_1/dense/MatMul_grad/MatMul", 120, 6),
                    ns("notrace", 130, 1),
                    ns("uni", 140, 1),
                    ns("uni2", 141, 1),
                ],
            ),
            (STREAM_ALL, [ns("dense/MatMul", 12, 25)]),
        ]
    )
    return HandCase.make("code", nodes, [(0, step)], op_log(entries, strings))


@functools.cache
def graphy_case() -> HandCase:
    """Graph-view structure: a cycle (Merge/NextIteration, never a root), a
    self-loop, duplicate node names (first wins), repeated and control inputs;
    devices ``/gpu:0`` and ``/cpu:0`` (short canonical forms), XLA_GPU and TPU
    (no time; XLA_GPU alone raises the missing-stream warning), a node seen only
    on stream:7 in one step, two GPU allocators on one record."""
    nodes = [
        node("a", "Merge", ["b", "x"], outputs=[[1]]),
        node("b", "NextIteration", ["a"], outputs=[[1]]),
        node("x", "Const", outputs=[[1]]),
        node("self", "Identity", ["self"], outputs=[[1]]),
        node("dup", "Const", outputs=[[3]]),
        node("dup", "Neg", ["x"], outputs=[[4]]),
        node("top", "Add", ["a", "x", "^dup", "x"], outputs=[[1]]),
        node("only7", "Mul", ["x"], outputs=[[1]]),
    ]
    xla = "/job:localhost/replica:0/task:0/device:XLA_GPU:0"
    allocs = [
        Mem("GPU_0_bfc", 10, 10, 10, 99),
        Mem("GPU_1_bfc", 1, 1, 1, 100),
        Mem("gpu_host_bfc", 5, 5, 5, 1000),
    ]
    s0 = run_meta(
        [
            (STREAM_ALL, [ns("top", 50, 9)]),
            ("/gpu:0", [ns("top", 40, 3, allocs)]),
            (CPU, [ns("x", 1, 1), ns("only7", 2, 2)]),
        ]
    )
    s1 = run_meta(
        [
            (STREAM_7, [ns("only7", 10, 10)]),
            (xla, [ns("x", 11, 11)]),
            ("/device:TPU:0", [ns("a", 12, 12)]),
            ("/cpu:0", [ns("self", 13, 13)]),
        ]
    )
    return HandCase.make("graphy", nodes, [(0, s0), (1, s1)])
