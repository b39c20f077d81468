"""Nodes recorded only on a GPU's tracer devices are bound to that GPU (the rule of
the XSpace conversion's last pass), as the step's device sets say."""

from __future__ import annotations

import re
from typing import Any

import tfprof_lite
from tests.handmade import CPU, node, ns, run_meta
from tfprof_lite.model.devices import host_device_of
from tfprof_lite.model.profile import ProfileModel
from tfprof_lite.model.xspace import _bind_gpu_devices
from tfprof_lite.proto import messages as pb

GPU0_S7 = "/device:GPU:0/stream:7"
GPU1_S3 = "/device:GPU:1/stream:3"
NODES = [node(n, "MatMul") for n in ("a", "b", "c", "d")]


def _reference(model: ProfileModel) -> None:
    """The rule node by node: the first device of the node's set in the first step
    that records it that is a GPU tracer device."""
    for number in model.sorted_steps():
        for nid, devices in model.steps[number].devices.items():
            if model.canonical_device[nid]:
                continue
            for device in devices:
                found = re.match(r"/device:gpu:(\d+)/", device)
                if found is not None:
                    dev = f"/job:localhost/replica:0/task:0/device:gpu:{found.group(1)}"
                    model.canonical_device[nid] = dev
                    model.host_device[nid] = host_device_of(dev)
                    model.op_types[nid].add(dev)
                    break


def _model() -> ProfileModel:
    prof = tfprof_lite.Profiler(graph=pb.GraphDef(node=NODES))
    steps: list[Any] = [
        # a: GPU 0 only; b: both GPUs; c: on the CPU too (bound there); d: not yet.
        run_meta(
            [
                (CPU, [ns("c", 5, 2)]),
                (GPU0_S7, [ns("a:MatMul", 10, 4), ns("b", 12, 1), ns("c", 13, 1)]),
                (GPU1_S3, [ns("b", 20, 3), ns("b", 30, 1)]),
            ]
        ),
        run_meta([(GPU1_S3, [ns("d", 40, 2), ns("a", 41, 1)])]),  # d: GPU 1
    ]
    for i, meta in enumerate(steps):
        prof.add_step(i, meta)
    return prof.model


def test_binding_equals_the_rule_node_by_node() -> None:
    got, want = _model(), _model()
    before = dict(zip(got.names, got.canonical_device))
    assert [before[n] for n in "abcd"] == ["", "", CPU.lower(), ""]
    _bind_gpu_devices(got)
    _reference(want)
    assert got.canonical_device == want.canonical_device
    assert got.host_device == want.host_device and got.op_types == want.op_types
    gpu = "/job:localhost/replica:0/task:0/device:gpu:"
    by_name = dict(zip(got.names, got.canonical_device))
    assert (by_name["a"], by_name["d"]) == (gpu + "0", gpu + "1")
    assert by_name["b"] in (gpu + "0", gpu + "1") and by_name["c"] == CPU.lower()
