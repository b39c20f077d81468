"""A hand-made TF 2.21 FULL_TRACE RunMetadata of a small GPU model (two steps).

TensorFlow 2.21's DirectSession fills the GPU part of a FULL_TRACE RunMetadata
from the profiler's XSpace (``ConvertGpuXSpaceToStepStats``), so its records
look like this:

* the host-side op records on the canonical device (``.../device:GPU:0``);
* every kernel on ``/device:GPU:0/stream:<id>`` and again on
  ``/device:GPU:0/stream:all``, ``node_name`` = the launching op's ``name:Type``
  (or the kernel name when nothing annotated the launch), ``timeline_label`` =
  ``"<kernel> regs:R static_shared:S dynamic_shared:D grid:X,Y,Z block:X,Y,Z occ_pct:P"``;
* copies on ``/device:GPU:0/stream:<id><MemcpyH2D>`` and ``/device:GPU:0/memcpy``
  labelled ``"MemcpyH2D kind_src:… kind_dst:… size:N dest:D async:A"``;
* a memset (neither kernel nor copy) on ``/device:GPU:0/stream:``;
* ``cuStreamSynchronize`` on ``/device:GPU:0/sync`` labelled ``ThreadId <tid>``.

`KERNELS` lists what each step launches, so tests can count from it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from tests.handmade import GPU, ns, run_meta
from tests.handmade import node as graph_node
from tfprof_lite.proto import messages as pb

__all__ = ["GRAPH", "KERNELS", "Launch", "details", "tf221_gpu_meta", "tf221_graph"]


class Launch(NamedTuple):
    """One kernel launch of a step: op (``name:Type`` or ""), kernel, details, stream,
    start offset and duration (us)."""

    op: str
    kernel: str
    details: str
    stream: int
    start: int
    dur: int


def details(regs: int, static: int, dynamic: int, grid: str, block: str, occ: float) -> str:
    """A ``kernel_details`` text as the GPU tracer writes it."""
    return (
        f"regs:{regs} static_shared:{static} dynamic_shared:{dynamic} "
        f"grid:{grid} block:{block} occ_pct:{occ:g}"
    )


SGEMM = "ampere_sgemm_32x32_sliced1x4_nn"
XMMA = (
    "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_"
    "tensor16x8x8_kernel"
)
BIAS = (
    "void tensorflow::functor::BiasNHWCKernel<float>(int, float const*, float const*, float*, int)"
)
RELU = (
    "void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<Eigen::TensorAssignOp<"
    "Eigen::TensorMap<Eigen::Tensor<float, 1, 1, long>, 16, Eigen::MakePointer>, "
    "Eigen::TensorCwiseUnaryOp<Eigen::internal::scalar_max_op<float const, float const>, "
    "Eigen::TensorMap<Eigen::Tensor<float const, 1, 1, long>, 16, Eigen::MakePointer> const> "
    "const> const, Eigen::GpuDevice>, long>(Eigen::TensorEvaluator<Eigen::TensorAssignOp<"
    "Eigen::TensorMap<Eigen::Tensor<float, 1, 1, long>, 16, Eigen::MakePointer>> const, "
    "Eigen::GpuDevice>, long)"
)
CONV = "sm86_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_kernel"
REDZONE = "redzone_checker"
#: A kernel launched outside any op annotation, whose C++ name holds ":".
CUB = "void cub::CUB_200200_800_NS::DeviceReduceSingleTileKernel<float>(float const*, float*, int)"

_SGEMM = details(86, 8192, 0, "4,2,1", "128,1,1", 50)
_XMMA = details(126, 0, 49152, "2,4,1", "256,1,1", 25)
_RELU_SMALL = details(16, 0, 0, "1,1,1", "1024,1,1", 100)
_RELU_BIG = details(16, 0, 0, "8,1,1", "1024,1,1", 100)

#: The kernel launches of one step, in launch order.
KERNELS = [
    Launch("dense/MatMul:MatMul", SGEMM, _SGEMM, 14, 10, 30),
    Launch("dense/BiasAdd:BiasAdd", BIAS, details(32, 0, 0, "16,1,1", "256,1,1", 100), 14, 45, 4),
    Launch("dense/Relu:Relu", RELU, _RELU_SMALL, 14, 52, 3),
    Launch(
        "conv/Conv2D:Conv2D", CONV, details(168, 0, 73728, "32,1,1", "128,1,1", 12.5), 15, 60, 50
    ),
    Launch("out/MatMul:MatMul", XMMA, _XMMA, 14, 120, 12),
    Launch("out/MatMul:MatMul", XMMA, _XMMA, 14, 140, 14),
    Launch("out/Relu:Relu", RELU, _RELU_BIG, 14, 160, 5),
    Launch("", REDZONE, details(8, 0, 0, "1,1,1", "128,1,1", 6.25), 14, 170, 2),
    Launch("", CUB, details(40, 2048, 0, "1,1,1", "256,1,1", 75), 14, 175, 3),
]

#: The graph's nodes (name, type).
GRAPH = [
    ("x", "Placeholder"),
    ("dense/MatMul", "MatMul"),
    ("dense/BiasAdd", "BiasAdd"),
    ("dense/Relu", "Relu"),
    ("conv/Conv2D", "Conv2D"),
    ("out/MatMul", "MatMul"),
    ("out/Relu", "Relu"),
]


def tf221_graph() -> Any:
    """The GraphDef of :data:`GRAPH` (a chain)."""
    nodes = []
    previous: list[str] = []
    for name, op in GRAPH:
        nodes.append(graph_node(name, op, previous, outputs=[[64, 128]]))
        previous = [name]
    return pb.GraphDef(node=nodes)


def _kernel(launch: Launch, base: int) -> Any:
    msg = ns(launch.op or launch.kernel, base + launch.start, launch.dur)
    msg.timeline_label = f"{launch.kernel} {launch.details}"
    msg.thread_id = 4242
    msg.scheduled_micros = base + launch.start - 3
    return msg


def _copy(base: int) -> Any:
    msg = ns("MemcpyH2D", base, 6)
    msg.timeline_label = "MemcpyH2D kind_src:pageable kind_dst:device size:32768 dest:0 async:0"
    return msg


def tf221_gpu_meta(step: int) -> Any:
    """The RunMetadata of one step (its times shifted by ``step`` ms)."""
    base = 1_000_000 + 1000 * step
    host = [ns(name, base + 5 * i, 2) for i, (name, _) in enumerate(GRAPH)]
    kernels = [_kernel(k, base) for k in KERNELS]
    streams: dict[int, list[Any]] = {}
    for launch, record in zip(KERNELS, kernels):
        streams.setdefault(launch.stream, []).append(record)
    sync = ns("cuStreamSynchronize", base + 200, 7)
    sync.timeline_label = "ThreadId 4242"
    memset = ns("Memset", base + 1, 1)
    memset.timeline_label = "Memset"
    return run_meta(
        [
            (GPU, host),
            ("/device:GPU:0/sync", [sync]),
            ("/device:GPU:0/stream:13<MemcpyH2D>", [_copy(base)]),
            ("/device:GPU:0/memcpy", [_copy(base)]),
            ("/device:GPU:0/stream:", [memset]),
            *[(f"/device:GPU:0/stream:{s}", rs) for s, rs in streams.items()],
            (
                "/device:GPU:0/stream:all",
                [pb.NodeExecStats.FromString(k.SerializeToString()) for k in kernels],
            ),
        ]
    )
